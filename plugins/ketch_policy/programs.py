"""What ketch knows about programs: which are read-only (and which flags make them
not), which the sandbox confines well enough for the assisted profile, and the
narrow scope an "always allow" answer grants for one command.

Read-only means: it neither changes files nor runs other programs nor talks to the
network, whatever its (static) arguments are, given the flags checked here. A
program not in the table is not read-only. Flags are checked the way getopt reads
them: clustered short flags letter by letter (``-ni`` contains ``-i``), long flags
also by unambiguous prefix (GNU's ``--in`` is ``--in-place``).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass

from ketch_guards.operands import git_config_write
from ketch_guards.shell import Part, Word, is_system_program


@dataclass(frozen=True)
class ReadOnly:
    ok: bool
    reason: str = ""
    reads: tuple[Word, ...] = ()  # words that may name files it reads


NOT = ReadOnly


@dataclass(frozen=True)
class Spec:
    short: str = ""  # short flags that make it write or run something
    long: tuple[str, ...] = ()  # long flags that do (matched by prefix too)
    values: str = ""  # short flags that take a value (the rest of a cluster is the value)
    any_args: bool = False  # no argument can make it write or run anything
    files: bool = True  # its operands are files it reads
    pattern_first: bool = False  # the first operand is a pattern/program, not a file
    max_operands: int | None = None  # more operands than this and it writes one (uniq in out)
    check: Callable[[Part], ReadOnly] | None = None


SAFE_ENV = frozenset({"LANG", "LANGUAGE", "TZ", "NO_COLOR", "FORCE_COLOR", "COLUMNS", "LINES", "TERM", "CLICOLOR", "CLICOLOR_FORCE"})
_LOCAL_NAME = re.compile(r"^[a-z_][a-z0-9_]*$")


def safe_variable(name: str) -> bool:
    """Setting it cannot change what another program does: a locale/display variable,
    or a lowercase shell-local name (environment variables are uppercase by convention)."""
    return name in SAFE_ENV or name.startswith("LC_") or bool(_LOCAL_NAME.match(name))


# --- custom checks -------------------------------------------------------------------


def _sed(part: Part) -> ReadOnly:
    scripts: list[str] = []
    operands: list[Word] = []
    words = list(part.args)
    index = 0
    while index < len(words):
        word = words[index]
        value = word.value or ""
        index += 1
        if value == "--":
            operands.extend(words[index:])
            break
        if value.startswith("--"):
            head, has_value, rest = value[2:].partition("=")
            if head in ("quiet", "silent", "regexp-extended", "separate", "null-data", "unbuffered", "posix", "debug", "sandbox"):
                continue
            if head == "expression" and has_value:
                scripts.append(rest)
                continue
            if head == "expression" and index < len(words):
                scripts.append(words[index].value or "\x00")
                index += 1
                continue
            if head in ("line-length",):
                index += 0 if has_value else 1
                continue
            return NOT(False, f"sed --{head} is not a read-only option")
        if value.startswith("-") and value != "-":
            letters = value[1:]
            for position, letter in enumerate(letters):
                if letter in "nErszu":
                    continue
                if letter == "e":
                    attached = letters[position + 1 :]
                    if attached:
                        scripts.append(attached)
                    elif index < len(words):
                        scripts.append(words[index].value or "\x00")
                        index += 1
                    break
                if letter == "l":
                    index += 0 if letters[position + 1 :] else 1
                    break
                if letter == "i":
                    return NOT(False, "sed -i edits files in place")
                if letter == "f":
                    return NOT(False, "sed -f runs a script file the analyser cannot read")
                return NOT(False, f"sed -{letter} is not a read-only option")
            continue
        operands.append(word)
    if not scripts:
        if not operands:
            return NOT(False, "sed without a script")
        scripts.append(operands[0].value or "\x00")
        operands = operands[1:]
    for script in scripts:
        if not sed_script_read_only(script):
            return NOT(False, "the sed script can write files or run commands (w, W, e, r, s///w, s///e)")
    return ReadOnly(True, reads=tuple(operands))


_SED_SIMPLE = set("pdDnNgGhHxlq=QPzF")


def sed_script_read_only(script: str) -> bool:
    """True when a sed script only prints/edits its output stream (a small grammar;
    anything outside it counts as not read-only)."""
    text = script
    index = 0
    length = len(text)

    def regex(position: int, delimiter: str) -> int | None:
        while position < length:
            char = text[position]
            if char == "\\":
                position += 2
                continue
            if char == delimiter:
                return position + 1
            if char == "\n":
                return None
            position += 1
        return None

    def address(position: int) -> int | None:
        if position < length and text[position].isdigit():
            while position < length and (text[position].isdigit() or text[position] == "~"):
                position += 1
            return position
        if position < length and text[position] == "$":
            return position + 1
        if position < length and text[position] == "/":
            return regex(position + 1, "/")
        if position + 1 < length and text[position] == "\\":
            return regex(position + 2, text[position + 1])
        return position

    while index < length:
        while index < length and text[index] in " \t\n;":
            index += 1
        if index >= length:
            break
        after = address(index)
        if after is None:
            return False
        index = after
        if index < length and text[index] == ",":
            index += 1
            if index < length and text[index] in "+~":
                index += 1
            after = address(index)
            if after is None:
                return False
            index = after
        while index < length and text[index] in " \t":
            index += 1
        if index < length and text[index] == "!":
            index += 1
            while index < length and text[index] in " \t":
                index += 1
        if index >= length:
            return False
        command = text[index]
        index += 1
        if command in _SED_SIMPLE:
            while index < length and text[index].isdigit():
                index += 1
        elif command in "{}":
            pass
        elif command in "btT:":
            while index < length and text[index] not in ";\n":
                index += 1
        elif command in "aic":
            while index < length and text[index] != "\n":
                index += 2 if text[index] == "\\" else 1
        elif command in "sy":
            if index >= length or text[index] in "\n\\":
                return False
            delimiter = text[index]
            first = regex(index + 1, delimiter)
            if first is None:
                return False
            second = regex(first, delimiter)
            if second is None:
                return False
            index = second
            if command == "s":
                while index < length and text[index] in "gpiImM0123456789":
                    index += 1
                if index < length and text[index] in "ew":
                    return False
        else:
            return False  # w W r R e v and anything unknown
        while index < length and text[index] in " \t":
            index += 1
        if index < length and text[index] not in ";\n}":
            return False
    return True


def _awk(part: Part) -> ReadOnly:
    programs: list[str] = []
    operands: list[Word] = []
    sandboxed = False
    words = list(part.args)
    index = 0
    while index < len(words):
        word = words[index]
        value = word.value or ""
        index += 1
        if value == "--":
            operands.extend(words[index:])
            break
        if value in ("-F", "-v", "--field-separator", "--assign") and index < len(words):
            index += 1
            continue
        if value.startswith(("-F", "-v", "--field-separator=", "--assign=")):
            continue
        if value in ("-S", "--sandbox"):
            sandboxed = True
            continue
        if value in ("-e", "--source") and index < len(words):
            programs.append(words[index].value or "\x00")
            index += 1
            continue
        if value in ("-b", "-c", "-P", "-M", "-n", "-N", "-O", "-s", "-t", "--posix", "--traditional", "--characters-as-bytes", "--bignum", "--optimize", "--no-optimize", "--re-interval"):
            continue
        if value.startswith("-") and value != "-":
            return NOT(False, f"awk {value} is not a read-only option (-f, -E, -i, -l load or run code)")
        operands.append(word)
    if not programs:
        if not operands:
            return NOT(False, "awk without a program")
        programs.append(operands[0].value or "\x00")
        operands = operands[1:]
    if not sandboxed and not all(awk_program_read_only(p) for p in programs):
        return NOT(False, "the awk program can run commands or write files (system, getline, |, print >)")
    return ReadOnly(True, reads=tuple(w for w in operands if "=" not in (w.value or "")))


def awk_program_read_only(program: str) -> bool:
    if "\x00" in program:
        return False
    stripped = re.sub(r'"(?:\\.|[^"\\])*"', '""', program)
    if re.search(r"\bsystem\b|\bgetline\b|@load|@include|\bfflush\b", stripped):
        return False
    if "|" in stripped.replace("||", ""):
        return False
    return not re.search(r"\bprintf?\b[^;{}\n]*>", stripped)


_FIND_ACTIONS = frozenset({"-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls"})


def _find(part: Part) -> ReadOnly:
    words = list(part.args)
    index = 0
    while index < len(words) and words[index].value in ("-H", "-L", "-P"):
        index += 1
    while index < len(words) and (words[index].value or "").startswith(("-D", "-O")):
        index += 2 if words[index].value == "-D" else 1
    starts: list[Word] = []
    while index < len(words) and not (words[index].value or "-").startswith(("-", "(", "!", ")")):
        starts.append(words[index])
        index += 1
    for word in words[index:]:
        if word.value in _FIND_ACTIONS:
            return NOT(False, f"find {word.value} runs commands or writes files")
    return ReadOnly(True, reads=tuple(starts) or (Word(".", "."),))


_GIT_GLOBAL_OK = frozenset({"--no-pager", "-P", "--no-replace-objects", "--literal-pathspecs", "--glob-pathspecs", "--noglob-pathspecs", "--icase-pathspecs", "--no-optional-locks"})
_GIT_READ = frozenset(
    {
        "status", "log", "diff", "show", "blame", "annotate", "shortlog", "describe", "rev-parse", "rev-list",
        "ls-files", "ls-tree", "cat-file", "diff-tree", "diff-files", "diff-index", "merge-base", "name-rev",
        "grep", "show-ref", "for-each-ref", "check-ignore", "check-attr", "count-objects", "version",
        "whatchanged", "range-diff", "cherry", "show-branch", "var",
    }
)
_GIT_DANGER_LONG = ("output", "ext-diff", "textconv", "open-files-in-pager", "exec", "upload-pack", "receive-pack")
_GIT_BRANCH_FLAGS = frozenset(
    {"-a", "--all", "-r", "--remotes", "-v", "-vv", "--verbose", "-l", "--list", "--show-current", "--contains", "--no-contains",
     "--merged", "--no-merged", "--points-at", "--sort", "--format", "--color", "--no-color", "--column", "--no-column",
     "-i", "--ignore-case", "--abbrev", "--no-abbrev", "-q", "--quiet"}
)
_GIT_TAG_FLAGS = frozenset(
    {"-l", "--list", "--sort", "--contains", "--no-contains", "--merged", "--no-merged", "--points-at", "--format",
     "--column", "--no-column", "--color", "-i", "--ignore-case"}
)


def _git(part: Part) -> ReadOnly:
    words = list(part.args)
    reads: list[Word] = []
    index = 0
    while index < len(words) and (words[index].value or "").startswith("-"):
        value = words[index].value or ""
        if value in _GIT_GLOBAL_OK:
            index += 1
        elif value == "-C" and index + 1 < len(words):
            reads.append(words[index + 1])
            index += 2
        else:
            return NOT(False, f"git {value} can change configuration, run a pager or leave the repository")
    if index >= len(words):
        return ReadOnly(True)
    sub = words[index].value
    rest = words[index + 1 :]
    values = [w.value or "" for w in rest]
    flags = [v.split("=", 1)[0] for v in values if v.startswith("-")]
    operands = [w for w in rest if not (w.value or "").startswith("-")]
    for flag in flags:
        if flag.startswith("--") and any(d.startswith(flag[2:]) and len(flag) >= 5 or d == flag[2:] for d in _GIT_DANGER_LONG):
            return NOT(False, f"git {sub} {flag} writes a file or runs a program")
    if sub == "grep" and any(v.startswith("-") and not v.startswith("--") and "O" in v for v in values):
        return NOT(False, "git grep -O opens files in a pager program")
    if sub in _GIT_READ:
        return ReadOnly(True, reads=tuple(reads + operands))
    listing = {"branch": _GIT_BRANCH_FLAGS, "tag": _GIT_TAG_FLAGS}.get(sub or "")
    if listing is not None:
        lists = any(v in ("-l", "--list") for v in values)
        if all(f in listing or re.fullmatch(r"-n\d*", f) for f in flags) and (lists or not operands):
            return ReadOnly(True, reads=tuple(reads))
        return NOT(False, f"git {sub} with these arguments creates, moves or deletes a {sub}")
    if sub == "remote" and (values in ([], ["-v"], ["--verbose"]) or values[:1] == ["get-url"]):
        return ReadOnly(True)
    if sub == "config":
        return ReadOnly(True) if git_config_write(part) is None else NOT(False, "git config with a value writes configuration")
    if (sub, values[:1]) in (("stash", ["list"]), ("stash", ["show"]), ("worktree", ["list"]), ("submodule", ["status"])):
        return ReadOnly(True)
    if sub == "reflog" and (not values or values[0] == "show" or all(v.startswith("-") for v in values)):
        return ReadOnly(True)
    return NOT(False, f"git {sub} is not a read-only git command")


def _declaration(part: Part) -> ReadOnly:
    for word in part.args:
        value = word.value
        if value is None:
            return NOT(False, "a declaration whose value is only known at run time")
        if value.startswith("-"):
            return NOT(False, f"{part.program} {value} changes how variables behave")
        if not safe_variable(value.split("=", 1)[0]):
            return NOT(False, f"{part.program} sets {value.split('=', 1)[0]}, an environment variable other programs read")
    return ReadOnly(True)


# --- the table ------------------------------------------------------------------------

_ANY = Spec(any_args=True, files=False)
_FILES = Spec()
READ_ONLY: dict[str, Spec] = {
    **dict.fromkeys(
        ["echo", "printf", "true", "false", ":", "test", "[", "basename", "dirname", "seq", "expr", "whoami", "id", "groups",
         "uname", "nproc", "uptime", "arch", "tty", "locale", "printenv", "env", "sleep", "cal", "pwd", "tr", "type",
         "which", "whereis", "ps", "pgrep", "pidof", "free", "numfmt", "getconf", "command",
         # shell control builtins: they change nothing outside the shell itself
         "break", "continue", "return", "exit", "shift", "wait", "jobs", "times", "read", "getopts"],
        _ANY,
    ),
    **dict.fromkeys(
        ["cd", "pushd", "popd", "dirs", "ls", "cat", "head", "tail", "wc", "nl", "tac", "rev", "cut", "paste", "fold", "fmt",
         "column", "comm", "cmp", "diff", "stat", "du", "df", "realpath", "readlink", "md5sum", "sha1sum", "sha224sum",
         "sha256sum", "sha384sum", "sha512sum", "b2sum", "cksum", "sum", "od", "hexdump", "strings", "look", "expand",
         "unexpand", "join", "tsort", "shuf"],
        _FILES,
    ),
    "file": Spec(short="C", long=("compile",)),
    "tree": Spec(short="o", values="LPIH", long=("output", "fromfile")),
    "sdiff": Spec(short="o", long=("output",)),
    "xxd": Spec(max_operands=1, values="cglos"),
    "base64": Spec(short="o", long=("output",)),
    "base32": Spec(short="o", long=("output",)),
    "sort": Spec(short="o", long=("output", "compress-program"), values="kStTo"),
    "uniq": Spec(max_operands=1, values="fsw"),
    "grep": Spec(pattern_first=True, values="efABCdDm"),
    "egrep": Spec(pattern_first=True, values="efABCdDm"),
    "fgrep": Spec(pattern_first=True, values="efABCdDm"),
    "rg": Spec(short="z", long=("pre", "pre-glob", "search-zip", "hostname-bin"), pattern_first=True, values="efgtTABCmMjEd"),
    "fd": Spec(short="xX", long=("exec", "exec-batch"), pattern_first=True, values="edtEcS"),
    "jq": Spec(pattern_first=True),
    "date": Spec(short="s", long=("set",), files=False, values="dfrI"),
    "hostname": Spec(short="bF", long=("file", "boot"), max_operands=0, files=False),
    "find": Spec(check=_find),
    "sed": Spec(check=_sed),
    "awk": Spec(check=_awk),
    "gawk": Spec(check=_awk),
    "mawk": Spec(check=_awk),
    "nawk": Spec(check=_awk),
    "git": Spec(check=_git),
}

# Programs the assisted profile may run without asking when the sandbox confines them
# (writes only inside the workspace, .git read-only, no network, secrets in $HOME hidden).
SANDBOX_CONFINED = frozenset(
    {
        "python", "python3", "pytest", "py.test", "tox", "nox", "coverage", "make", "ruff", "black", "isort", "mypy",
        "pyright", "flake8", "pylint", "pre-commit", "uv", "pip", "pip3", "node", "npm", "npx", "yarn", "pnpm", "tsc",
        "eslint", "prettier", "jest", "vitest", "cargo", "rustc", "go", "gcc", "cc", "g++", "clang", "clang++", "javac",
        "java", "mvn", "gradle", "cmake", "ninja", "meson", "mkdir", "touch", "cp", "mv", "ln", "sed", "awk", "gawk",
        "sort", "find", "xargs", "tee", "diff", "patch",
    }
)


def read_only(part: Part) -> ReadOnly:
    """Whether this part only reads (see the module doc), and which words it reads."""
    if part.kind == "assignment":
        for name, _ in part.assignments:
            if not safe_variable(name):
                return NOT(False, f"it sets {name}, an environment variable other programs may read")
        return ReadOnly(True)
    if part.kind == "declaration":
        return _declaration(part)
    program = part.program
    name = part.name or ""
    if program is None or not is_system_program(program):
        return NOT(False, f"{program} runs a program from a path, not a known system program")
    for key, _ in part.assignments:
        if not safe_variable(key):
            return NOT(False, f"it sets {key} for {name}, which can change what {name} does")
    spec = READ_ONLY.get(name)
    if spec is None:
        return NOT(False, f"{name} is not a known read-only program")
    if name == "command" and not any(w.value in ("-v", "-V") for w in part.args[:1]):
        return NOT(False, "command runs another program")
    if not spec.any_args:
        if part.extra_args:
            return NOT(False, f"{name} gets arguments only known at run time (xargs, find -exec)")
        unknown = next((w for w in part.args if w.value is None), None)
        if unknown is not None:
            return NOT(False, f"an argument of {name} is only known at run time ({unknown.source})")
    if spec.check is not None:
        return spec.check(part)
    operands: list[Word] = []
    has_pattern_option = False
    only_operands = False
    words = list(part.args)
    index = 0
    while index < len(words):
        word = words[index]
        value = word.value or ""
        index += 1
        if only_operands or not value.startswith("-") or value == "-":
            operands.append(word)
            continue
        if value == "--":
            only_operands = True
            continue
        if value.startswith("--"):
            head = value[2:].split("=", 1)[0]
            if head in ("regexp", "file"):
                has_pattern_option = True
            if any(d == head or (len(head) >= 3 and d.startswith(head)) for d in spec.long):
                return NOT(False, f"{name} --{head} writes a file or runs a program")
            continue
        letters = value[1:]
        for position, letter in enumerate(letters):
            if letter in spec.short:
                return NOT(False, f"{name} -{letter} writes a file or runs a program")
            if letter in spec.values:
                if letter in "ef" and spec.pattern_first:
                    has_pattern_option = True
                if position == len(letters) - 1:
                    index += 1  # the value is the next word
                break
    if spec.max_operands is not None and len(operands) > spec.max_operands:
        return NOT(False, f"{name} with {len(operands)} operands writes its output to a file")
    if spec.pattern_first and operands and not has_pattern_option:
        operands = operands[1:]
    return ReadOnly(True, reads=tuple(operands) if spec.files else ())


def sandbox_confined(part: Part) -> bool:
    return part.kind == "command" and part.program is not None and is_system_program(part.program) and (part.name or "") in SANDBOX_CONFINED


# --- approval scopes ---------------------------------------------------------------------

_SAFE_TOKEN = re.compile(r"^[A-Za-z0-9_./:=@%+,\-]+$")
SUBCOMMAND_PROGRAMS = frozenset(
    {
        "git", "npm", "pnpm", "yarn", "cargo", "go", "docker", "podman", "kubectl", "pip", "pip3", "uv", "poetry", "pdm",
        "hatch", "gh", "brew", "apt", "apt-get", "conda", "rustup", "dotnet", "bundle", "gem", "composer", "deno", "bun",
        "terraform", "helm", "systemctl", "pre-commit", "ruff", "tox", "nox", "make", "just", "mvn", "gradle",
    }
)
RUNNERS = frozenset({"run", "exec", "x", "dlx", "tool"})  # npm run NAME, uv run TOOL: keep the name
INTERPRETERS = frozenset({"python", "python3", "python2", "node", "perl", "ruby", "php", "lua", "Rscript", "deno", "bun", "sh", "bash", "zsh", "dash", "ksh", "fish", "pwsh"})
EXACT_ONLY = frozenset(
    {"rm", "rmdir", "dd", "mkfs", "chmod", "chown", "chgrp", "curl", "wget", "ssh", "scp", "sftp", "rsync", "nc", "ncat",
     "netcat", "telnet", "ftp", "kill", "killall", "pkill", "shutdown", "reboot", "crontab", "at", "shred", "truncate"}
)


def shell_scope(part: Part) -> str | None:
    """The narrow rule an "always allow" for this part grants, or None when there is
    none worth granting (a dynamic or odd command is approved once at a time)."""
    if part.kind != "command" or part.privileged or part.program is None:
        return None
    values = [w.value for w in part.argv]
    if any(v is None for v in values) or "/" in (part.program or ""):
        return None
    tokens = [v for v in values if v is not None]
    if not all(_SAFE_TOKEN.match(t) for t in tokens):
        return None
    name = tokens[0]
    exact = "shell(" + " ".join(shlex.quote(t) for t in tokens) + ")"
    if part.extra_args:
        exact = ""
    if name in EXACT_ONLY or len(tokens) == 1 and name in INTERPRETERS:
        return exact or None
    if name in INTERPRETERS:
        if len(tokens) >= 3 and tokens[1] == "-m":
            return f"shell({name} -m {tokens[2]}:*)"
        return exact or None
    if name in SUBCOMMAND_PROGRAMS and len(tokens) >= 2:
        if tokens[1].startswith("-"):
            return exact or None
        if tokens[1] in RUNNERS and len(tokens) >= 3 and not tokens[2].startswith("-"):
            return f"shell({name} {tokens[1]} {tokens[2]}:*)"
        return f"shell({name} {tokens[1]}:*)"
    return f"shell({name}:*)"
