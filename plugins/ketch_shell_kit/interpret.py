"""Reading one simple command against the grammar table: what it reads, writes, runs.

Every command the walker finds comes here. Its program is looked up in the table (by
base name for the system's own program directories, ``//usr/bin/timeout`` and
``/usr/bin/../bin/env`` included; never for a program in the workspace); its words are
read with the program's option grammar (:mod:`ketch_shell_kit.getopt`) and operand
types, and the result is one :class:`~ketch_shell_kit.model.Command` with its uses of
paths and, when it is not proven read-only, every reason why. Wrappers (``timeout``,
``env``, ``xargs``, ``bash -c``...) are described in the table too: the command they
run is read in turn, one level deeper.

A program the table does not know is simply *not proven*; nothing here guesses.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

from ketch_shell_kit import getopt
from ketch_shell_kit.grammar import BUILTINS, TABLE
from ketch_shell_kit.grammar.spec import HARMLESS_TYPES, Operand, Option, Program
from ketch_shell_kit.model import Command, PathUse
from ketch_shell_kit.parse import MAX_DEPTH, RESERVED_WORDS, Walker, plain_name, steering
from ketch_shell_kit.words import Word, dynamic, literal

# Wrappers that start a shell when given no command.
SHELL_BY_DEFAULT = frozenset(
    {"unshare", "nsenter", "chroot", "sudo", "doas", "pkexec", "run0", "setpriv"}
)
STDIN_PATHS = frozenset({"/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"})
SYSTEM_DIRS = frozenset(
    {"/usr/bin", "/bin", "/usr/local/bin", "/usr/sbin", "/sbin", "/usr/local/sbin"}
)
UNSAFE_PATH_DIRS = ("/tmp", "/var/tmp", "/dev/shm")
# Variables a read-only program may be given: locale and display only.
SAFE_ENV = frozenset(
    {
        "LANG",
        "LANGUAGE",
        "TZ",
        "NO_COLOR",
        "FORCE_COLOR",
        "COLUMNS",
        "LINES",
        "TERM",
        "CLICOLOR",
        "CLICOLOR_FORCE",
        "GIT_OPTIONAL_LOCKS",
    }
)
EXTRA = dynamic("…")  # arguments only known at run time (xargs, find -exec)
# Builtins that run a string as code later or elsewhere: never understood.
OPAQUE = frozenset({"trap", "coproc", "let", "source", ".", "fc", "enable"})

WHY = {
    "write": "writes files",
    "exec": "runs another program",
    "net": "uses the network",
    "unsafe": "is not proven harmless",
    "hide": "runs something the analysis cannot read",
    "privileged": "runs with another user's privileges",
}


def safe_variable(name: str) -> bool:
    """Giving it to a program cannot change what the program does beyond output format."""
    return (
        name in SAFE_ENV
        or (name.startswith("LC_") and not steering(name))
        or (name.islower() and plain_name(name))
    )


class Builder:
    """Collects one command's effects, then adds it to the analysis."""

    def __init__(self, walker: Walker, argv: list[Word] | tuple[Word, ...], assignments: tuple[tuple[str, Word], ...], *,
                 extra_args: bool = False, kind: str = "command", known: bool = True) -> None:  # fmt: skip
        self.walker = walker
        self.argv = tuple(argv)
        self.assignments = assignments
        self.extra_args = extra_args
        self.kind = kind
        self.known = known
        self.reasons: list[str] = []
        self.hidden: list[str] = []
        self.uses: list[PathUse] = []
        self.links = False
        self.network = False
        self.privileged = False
        self.cwds_override: tuple[Path, ...] | None = None
        self.index_refresh = False
        self.risky = True  # an option it may be given could write or run something
        self.walk: object | None = None  # how it walks the trees it reads (reach.Walk)

    @property
    def name(self) -> str:
        return os.path.basename(self.argv[0].value or "") if self.argv else ""

    def not_proven(self, why: str, *, hide: bool = False) -> None:
        if why not in self.reasons:
            self.reasons.append(why)
        if hide and why not in self.hidden:
            self.hidden.append(why)

    def use(self, kind: str, word: Word, why: str = "") -> None:
        cwds = self.cwds_override if self.cwds_override is not None else self.walker.cwds
        walk = self.walk if kind in ("tree", "vtree") else None
        self.uses.append(PathUse(word=word, kind=kind, cwds=cwds, why=why, walk=walk))
        if kind == "write":
            self.not_proven(f"{self.name} writes {word.source}")
        elif kind == "link":
            self.links = True
            self.not_proven(f"{self.name} makes a link to {word.source}")

    def done(self) -> None:
        for name, _ in self.assignments:
            if not safe_variable(name):
                self.not_proven(
                    f"it sets {name} for {self.name or 'the shell'}, which can change what it does"
                )
        self.walker.add(
            Command(
                argv=self.argv,
                assignments=self.assignments,
                extra_args=self.extra_args,
                kind=self.kind,
                known=self.known,
                reasons=tuple(self.reasons),
                hidden=tuple(self.hidden),
                uses=tuple(self.uses),
                links=self.links,
                network=self.network,
                privileged=self.privileged,
                index_refresh=self.index_refresh,
            )  # fmt: skip
        )


# --- finding the program ----------------------------------------------------------------


def table_name(walker: Walker, value: str) -> tuple[str | None, str]:
    """The table entry a program word runs, or None with why not."""
    if "/" in value:
        normal = (
            "/" + os.path.normpath(value).lstrip("/")
            if value.startswith("/")
            else os.path.normpath(value)
        )
        if os.path.dirname(normal) in SYSTEM_DIRS:
            return os.path.basename(normal), ""
        return None, f"it runs {value}, a program from a path, not a system program ketch knows"
    if value in BUILTINS:
        return value, ""
    if any(not os.path.isabs(entry) for entry in os.environ.get("PATH", "").split(os.pathsep)):
        # "." or an empty entry: the name may be a file of whatever directory it runs in
        return (
            None,
            f"'{value}' is looked up through a PATH with a relative entry, so it may be a workspace file",
        )
    found = shutil.which(value)
    if found:
        real = os.path.realpath(found)
        inside = walker.workspace is not None and Path(real).is_relative_to(
            os.path.realpath(walker.workspace)
        )
        if inside or real.startswith(UNSAFE_PATH_DIRS):
            return None, f"'{value}' is found on PATH at {found}, not a system program"
    return value, ""


def run(walker: Walker, argv: list[Word] | tuple[Word, ...], assignments: tuple[tuple[str, Word], ...], *,
        stdin_script: str | None = None, extra_args: bool = False, direct: bool = False) -> None:  # fmt: skip
    """One command: read it with its grammar (unwrapping wrappers), or mark it unknown."""
    argv = list(argv)
    program = argv[0]
    if not program.static or not program.single:
        walker.problem(f"the program name ({program.source}) is only known at run time")
        return
    value = program.value or ""
    if value in RESERVED_WORDS:
        walker.problem(f"the reserved word '{value}' is used as a program name")
        return
    if value == "":
        walker.problem("an empty program name")
        return
    name, why = table_name(walker, value)
    if name == "time" and ("/" in value or not direct or assignments):
        name = "gnu-time"  # the keyword only stands first in a command
    if name in OPAQUE:
        walker.problem(f"'{name}' runs code the analyser cannot see")
        return
    spec = TABLE.get(name) if name else None
    if spec is None and name in BUILTINS:
        walker.problem(f"'{name}' is a shell builtin the analyser does not read here")
        return
    if spec is None:
        builder = Builder(walker, argv, assignments, extra_args=extra_args, known=False)
        builder.not_proven(why or f"'{os.path.basename(value)}' is not a program ketch knows")
        builder.done()
        return
    handler = HANDLERS.get(spec.handler or "generic")
    if handler is None:  # pragma: no cover - a table bug, caught by the table tests
        walker.problem(f"the grammar of '{name}' names an unknown reader ({spec.handler})")
        return
    handler(walker, spec, argv, assignments, stdin_script, extra_args)


# --- typed words ------------------------------------------------------------------------


def typed(builder: Builder, kind: str, word: Word, label: str) -> None:  # noqa: C901 - one branch per type
    """What one value or operand of type ``kind`` means for the command."""
    walker = builder.walker
    if kind in HARMLESS_TYPES:
        if not word.single:
            builder.not_proven(
                f"{label} is only known at run time and may be several words", hide=builder.risky
            )
        return
    if kind in ("read", "tree", "vtree", "list", "write", "link"):
        if word.value is not None and word.value == "-" and kind != "write":
            return  # standard input
        builder.use(kind, word, label)
        if not word.single:
            builder.not_proven(
                f"{label} is only known at run time and may be several words", hide=builder.risky
            )
        return
    if kind == "move":
        typed(builder, "write", word, label)
        builder.use("read", word, f"{label} (its content, under a new name)")
        return
    if kind == "cwd":
        builder.use("list", word, label)
        builder.not_proven(f"{label}: it works in another directory ({word.source})")
        return
    if kind == "exec":
        builder.not_proven(f"{label} runs the program {word.source}")
        return
    if kind == "code":
        builder.not_proven(f"{label} runs code ({word.source[:40]})")
        return
    if kind == "net":
        builder.network = True
        builder.not_proven(f"{label} uses the network")
        return
    if kind == "unsafe":
        builder.not_proven(f"{label} is not proven harmless")
        return
    if kind == "script":
        if not word.static or builder.extra_args:
            walker.problem(f"{builder.name} runs a script that is only known at run time")
            return
        nested_script(walker, builder.argv, word.value or "")
        return
    if kind == "varname":
        check_varname(walker, word, builder.name)
        return
    if kind == "awkprog":
        from ketch_shell_kit.grammar.awk import program_problems

        problems = (
            program_problems(word.value or "")
            if word.static
            else ["the awk program is only known at run time"]
        )
        for problem in problems:
            builder.not_proven(f"the awk program: {problem}", hide=True)
        return
    if kind in SCRIPT_CHECKS:
        from ketch_shell_kit.grammar import scripts

        checker, why, hide = SCRIPT_CHECKS[kind]
        if not word.static or not getattr(scripts, checker)(word.value or ""):
            builder.not_proven(f"{why}, or is only known at run time", hide=hide)
        return
    if kind == "gitrev":
        if word.value is not None and ":" in word.value and not word.value.startswith(":/"):
            path = word.value.split(":", 1)[1]
            if path:
                builder.use(
                    "read",
                    Word(path.removeprefix("./"), word.source),
                    f"{label} (a file in the repository)",
                )
        elif not word.static:
            builder.not_proven(f"{label} is only known at run time")
        return
    if kind == "env":
        return  # handled by the wrapper reader
    if kind == "gitconfig":
        from ketch_shell_kit.grammar.git import safe_config

        if not word.static or not safe_config(word.value or ""):
            builder.not_proven(f"git -c {word.source} can change what git runs", hide=True)
        return
    builder.not_proven(
        f"{label}: an operand of a kind ketch does not read ({kind})"
    )  # pragma: no cover


# Script languages of "read-only" programs: (checker in grammar/scripts.py, why not
# proven, whether the guards cannot see what it does).
SCRIPT_CHECKS = {
    "sedscript": (
        "sed_script_read_only",
        "the sed script can write files or run commands (w, W, e, r, s///w, s///e)",
        True,
    ),
    "jqfilter": ("jq_filter_read_only", "the jq filter loads modules or files", False),
}


def check_varname(walker: Walker, word: Word, program: str) -> None:
    """A variable a builtin assigns or inspects: a subscript there is code bash runs
    (``printf -v 'a[$(id)]'``), and a steering variable changes later commands."""
    if not word.static:
        walker.problem(
            f"{program} names a variable only known at run time (a subscript there runs code)"
        )
        return
    name = word.value or ""
    if not plain_name(name):
        walker.problem(
            f"{program} names '{name}', not a plain variable (a subscript there runs code)"
        )
        return
    if steering(name) or name == "IFS":
        walker.problem(
            f"{program} sets {name}, which changes which program a later command runs or how"
        )


def nested_script(
    walker: Walker, wrapper: tuple[Word, ...] | list[Word], text: str, *, same_shell: bool = False
) -> None:
    if walker.depth >= MAX_DEPTH:
        walker.problem(f"commands are nested more than {MAX_DEPTH} levels deep")
        return
    with walker.nested(wrapper):
        walker.script(text, walker.cwds, same_shell=same_shell)


def assign(ops: tuple[Operand, ...], words: list[Word]) -> tuple[list[tuple[str, Word]], str]:
    """Give each operand its type from the spec; an error text when they do not fit."""
    repeat_at = next((i for i, o in enumerate(ops) if o.repeat in ("*", "+")), None)
    result: list[tuple[str, Word]] = []
    if repeat_at is None:
        for index, word in enumerate(words):
            if index >= len(ops):
                return result, f"more operands than it takes ({word.source})"
            result.append((ops[index].type, word))
        return result, ""
    head, repeated, tail = ops[:repeat_at], ops[repeat_at], ops[repeat_at + 1 :]
    tail_required = [o for o in tail if o.repeat != "?"]
    front = words[: len(head)]
    for op, word in zip(head, front, strict=False):
        result.append((op.type, word))
    rest = words[len(head) :]
    tail_count = min(len(tail_required), max(0, len(rest) - (1 if repeated.repeat == "+" else 0)))
    middle = rest[: len(rest) - tail_count] if tail_count else rest
    for word in middle:
        result.append((repeated.type, word))
    for op, word in zip(
        tail_required[len(tail_required) - tail_count :],
        rest[len(rest) - tail_count :],
        strict=True,
    ):
        result.append((op.type, word))
    return result, ""


def dash_globs(builder: Builder, words: list[Word] | tuple[Word, ...]) -> None:
    """A glob among the operands that expands to a name starting with '-' hands the
    program an option nobody wrote (a file named ``--files0-from=.env`` makes
    ``wc *`` read .env)."""
    from ketch_shell_kit.paths import expanded_words

    for word in words:
        if word.pattern is None:
            continue
        expanded = expanded_words(word, builder.walker.cwds)
        if expanded is None or any(name.startswith("-") for name in expanded):
            builder.not_proven(
                f"the glob {word.source} expands to a name starting with '-', which {builder.name} reads as an option",
                hide=True,
            )


def uniform(ops: tuple[Operand, ...]) -> bool:
    """Every operand has the same type: a word splitting into several changes nothing."""
    return len({o.type for o in ops}) <= 1


# --- the generic reader -----------------------------------------------------------------


def generic(walker: Walker, spec: Program, argv: list[Word], assignments: tuple[tuple[str, Word], ...],
            stdin_script: str | None, extra_args: bool, *, kind: str = "command") -> None:  # fmt: skip
    builder = Builder(walker, argv, assignments, extra_args=extra_args, kind=kind)
    builder.risky = spec.risky
    args = list(argv[1:])
    if spec.reason:
        builder.not_proven(spec.reason)
    if spec.privileged:
        builder.privileged = True
        builder.not_proven(f"{spec.name} {WHY['privileged']}")
    if spec.steers:
        builder.not_proven(f"{spec.name} changes how later commands are read or run", hide=True)
    if any(op.type == "cmd" for op in spec.operands):
        wrapper(walker, builder, spec, argv, assignments, extra_args)
        return
    if extra_args:
        args.append(EXTRA)
    parsed = getopt.parse(spec, args)
    ops = read_options(builder, spec, parsed)
    if spec.name in WALKERS:
        ops = walker_of(builder, spec, parsed, ops)
    operands = parsed.operands
    dash_globs(builder, operands)
    if any(not w.single for w in operands) and not uniform(ops):
        builder.not_proven(
            "an operand only known at run time may be several words, so which operand is which is unknown",
            hide=spec.risky,
        )
    pairs, error = assign(ops, operands)
    if error:
        builder.not_proven(f"{spec.name}: {error}")
    trees = [o.type for o in ops if o.type in ("tree", "vtree")]
    if spec.default_operand and trees and not any(k in ("tree", "vtree", "read") for k, _ in pairs):
        pairs.append(
            (trees[0], literal(spec.default_operand))
        )  # grep -r PATTERN, rg PATTERN: the cwd
    for kind_, word in pairs:
        typed(builder, kind_, word, f"{spec.name} operand {word.source}")
    builder.done()


WALKERS = frozenset({"rg", "grep", "egrep", "fgrep", "diff"})


def walker_of(
    builder: Builder, spec: Program, parsed: getopt.Parsed, ops: tuple[Operand, ...]
) -> tuple[Operand, ...]:
    """How a recursive reader walks its trees, from its options (see :mod:`.reach`);
    ``grep -d recurse`` reads its operands recursively like ``-r``."""
    from ketch_shell_kit import reach

    options = [
        (option.label, value.value if value is not None else None)
        for option, value, _ in parsed.options
    ]
    if spec.name == "rg":
        for name, value in options:
            if value is None and name in ("--glob", "--iglob", "--ignore-file", "--max-depth"):
                builder.not_proven(
                    f"rg {name} with a value only known at run time decides which files it reads"
                )
        builder.walk = reach.rg_walk(options)
    elif spec.name == "diff":
        builder.walk = reach.diff_walk(options)
    else:
        recurse = any(
            name == "--directories" and (value is None or value.startswith("rec"))
            for name, value in options
        )
        if recurse:
            ops = tuple(Operand("tree", o.repeat) if o.type == "read" else o for o in ops)
        builder.walk = reach.grep_walk(options)
    return ops


def read_options(builder: Builder, spec: Program, parsed: getopt.Parsed) -> tuple[Operand, ...]:
    """Apply the options found; returns the operand spec in force."""
    for problem in parsed.problems:
        builder.not_proven(problem, hide=spec.risky)
    for word in parsed.unknown_words:
        builder.not_proven(
            f"an argument only known at run time ({word.source}) where an option could stand",
            hide=spec.risky,
        )
    ops = spec.operands
    drop = False
    tree = False
    for option, value, written in parsed.options:
        for tag in ("write", "exec", "net", "unsafe"):
            if tag in option.tags:
                builder.not_proven(f"{spec.name} {written} {WHY[tag]}")
                if tag == "net":
                    builder.network = True
        if "opaque" in option.tags:
            builder.walker.problem(f"{spec.name} {written} runs code the analyser cannot see")
        if "hide" in option.tags:
            builder.not_proven(f"{spec.name} {written} {WHY['hide']}", hide=True)
        if "privileged" in option.tags:
            builder.privileged = True
        if "link" in option.tags:
            builder.links = True
            builder.not_proven(f"{spec.name} {written} makes links")
        drop |= "drop" in option.tags
        tree |= "tree" in option.tags
        if option.ops is not None:
            ops = option.ops
        if value is not None and option.arg:
            typed(builder, option.type, value, f"{spec.name} {written}")
    if drop and ops:
        ops = ops[1:] if ops[0].repeat == "" else ops
    if tree:
        ops = tuple(Operand("tree", o.repeat) if o.type in ("read", "vtree") else o for o in ops)
    return ops


def wrapper(walker: Walker, builder: Builder, spec: Program, argv: list[Word], assignments: tuple[tuple[str, Word], ...],
            extra_args: bool) -> None:  # fmt: skip
    """A program that runs another: its own options, then the command it runs."""
    args = list(argv[1:])
    parsed = getopt.parse(spec, args)
    read_options(builder, spec, parsed)
    operands = parsed.operands
    added = list(assignments)
    inner_cwds: tuple[Path, ...] | None = None
    replaces = False
    for option, value, _ in parsed.options:
        replaces |= "replace" in option.tags
        if option.type == "cwd" and value is not None:
            inner_cwds = _moved(walker.cwds, value)
    index = 0
    for op in spec.operands:
        if op.type == "cmd":
            break
        if op.type == "env":
            while index < len(operands) and _assignment(operands[index]) is not None:
                key, val = _assignment(operands[index])  # type: ignore[misc]
                if steering(key) or key == "IFS":
                    walker.problem(
                        f"it sets {key}, which changes which program a later command runs or how"
                    )
                added.append((key, val))
                index += 1
            continue
        if index >= len(operands):
            break
        typed(builder, op.type, operands[index], f"{spec.name} operand {operands[index].source}")
        index += 1
    inner = list(operands[index:])
    if spec.name == "flock" and inner and inner[0].value in ("-c", "--command"):
        builder.kind = "wrapper"
        builder.done()
        if len(inner) < 2 or not inner[1].static:
            walker.problem("flock -c runs a script that is only known at run time")
            return
        nested_script(walker, argv[: len(argv) - len(inner) + 2], inner[1].value or "")
        return
    if not inner and spec.name == "xargs":
        inner = [literal("echo")]
    if any(w is EXTRA for w in inner):
        inner = [w for w in inner if w is not EXTRA]
    builder.kind = "wrapper" if inner else "command"
    builder.done()
    if not inner:
        if spec.name in SHELL_BY_DEFAULT:
            walker.problem(
                f"{spec.name} without a command starts a shell, which the analyser cannot see"
            )
        return
    if walker.depth >= MAX_DEPTH:
        walker.problem(f"commands are nested more than {MAX_DEPTH} levels deep")
        return
    runs_extra = extra_args or spec.name == "xargs"
    if replaces and inner[0].static:
        target = os.path.basename(inner[0].value or "")
        inner_spec = TABLE.get(target)
        if inner_spec is not None and (
            inner_spec.handler in ("shell", "eval") or inner_spec.privileged
        ):
            walker.problem(
                "xargs -I substitutes input into a shell script, where it can become code"
            )
            return
    chain = argv[: len(argv) - len(inner)]
    saved = walker.cwds
    if inner_cwds is not None:
        walker.cwds = inner_cwds
    try:
        with walker.nested(chain, privileged=builder.privileged):
            run(walker, inner, tuple(added), extra_args=runs_extra)
    finally:
        walker.cwds = saved


def _assignment(word: Word) -> tuple[str, Word] | None:
    if not word.static or "=" not in (word.value or ""):
        return None
    key, _, val = (word.value or "").partition("=")
    return (key, Word(val, word.source)) if plain_name(key) else None


def _moved(cwds: tuple[Path, ...], target: Word) -> tuple[Path, ...]:
    if not target.static:
        return ()
    return tuple(Path(os.path.normpath(os.path.join(c, target.value or ""))) for c in cwds)


# --- readers for programs with their own syntax -------------------------------------------


def shell(walker: Walker, spec: Program, argv: list[Word], assignments: tuple[tuple[str, Word], ...],
          stdin_script: str | None, extra_args: bool) -> None:  # fmt: skip
    """``bash -c SCRIPT`` / ``sh -s <<EOF``: the script is analysed in turn. Shells whose
    language is not bash's (zsh, fish, ...) are not read at all."""
    builder = Builder(walker, argv, assignments, extra_args=extra_args)
    if spec.name not in ("bash", "sh", "dash"):
        builder.not_proven(
            f"{spec.name} runs commands in a language the analyser does not read", hide=True
        )
        builder.done()
        return
    args = list(argv[1:])
    index = 0
    command_mode = reads_stdin = False
    while index < len(args):
        value = args[index].value
        if value is None:
            walker.problem("a shell's options are only known at run time")
            return
        if value in ("--", "-"):
            index += 1
            reads_stdin |= value == "-"
            break
        if value.startswith("--"):
            option = spec.long.get(value[2:].split("=", 1)[0])
            if option is None:
                walker.problem(f"{spec.name} {value}: an option the analyser does not know")
                return
            if option.type in ("read", "code"):
                builder.not_proven(f"{spec.name} {value} runs a startup file")
            index += 2 if option.arg == "required" and "=" not in value else 1
            continue
        if value[:1] in ("-", "+") and len(value) > 1:
            following = 0
            for letter in value[1:]:
                if letter == "c":
                    command_mode = True
                elif letter in "oO":
                    following += 1  # each takes the next word: ``bash -oc posix 'ls'``
                elif letter == "s":
                    reads_stdin = True
                elif letter == "i":
                    builder.not_proven(f"{spec.name} -i runs startup files and expands aliases")
                elif letter not in "abefhklmnprtuvxBCEHPT":
                    walker.problem(f"{spec.name} -{letter}: an option the analyser does not know")
                    return
            for offset in range(1, following + 1):
                if index + offset >= len(args) or not args[index + offset].static:
                    walker.problem(f"{spec.name} -o/-O without a readable option name")
                    return
            index += 1 + following
            continue
        break
    rest = args[index:]
    if rest and not command_mode and rest[0].static and rest[0].value in STDIN_PATHS:
        reads_stdin, rest = True, rest[1:]
    elif (
        rest
        and not command_mode
        and rest[0].static
        and (rest[0].value or "").startswith(("/dev/fd/", "/proc/"))
    ):
        walker.problem(
            f"a shell reads its script from {rest[0].source}, a pipe the analyser cannot see"
        )
        return
    if command_mode:
        if not rest or not rest[0].static or extra_args:
            walker.problem("a shell runs a script that is only known at run time")
            return
        if builder.reasons:
            builder.done()
        nested_script(walker, argv[: index + 2], rest[0].value or "")
        return
    if rest and not reads_stdin:
        builder.use("read", rest[0], f"{spec.name} script")
        builder.not_proven(f"{spec.name} runs the script file {rest[0].source}")
        builder.done()
        return
    if stdin_script is not None:
        nested_script(walker, argv, stdin_script)
        return
    walker.problem("a shell reads its script from standard input, which the analyser cannot see")


def eval_(walker: Walker, spec: Program, argv: list[Word], assignments: tuple[tuple[str, Word], ...],
          stdin_script: str | None, extra_args: bool) -> None:  # fmt: skip
    words = argv[1:]
    if extra_args or any(not w.static for w in words):
        walker.problem(f"{spec.name} runs text that is only known at run time")
        return
    if words:
        nested_script(
            walker, argv[:1], " ".join(w.value or "" for w in words), same_shell=spec.name == "eval"
        )


def watch(walker: Walker, spec: Program, argv: list[Word], assignments: tuple[tuple[str, Word], ...],
          stdin_script: str | None, extra_args: bool) -> None:  # fmt: skip
    """``watch CMD...`` joins its words and runs them with ``sh -c`` (``-x``: exec)."""
    builder = Builder(walker, argv, assignments, extra_args=extra_args, kind="wrapper")
    parsed = getopt.parse(spec, list(argv[1:]))
    read_options(builder, spec, parsed)
    builder.not_proven("watch runs its command again and again")
    builder.done()
    words = parsed.operands
    if not words:
        return
    if any(o.names[0] == "-x" for o, _, _ in parsed.options):
        with walker.nested(argv[: len(argv) - len(words)]):
            run(walker, words, assignments)
        return
    if any(not w.static for w in words):
        walker.problem("watch runs text that is only known at run time")
        return
    nested_script(walker, argv[: len(argv) - len(words)], " ".join(w.value or "" for w in words))


def find(walker: Walker, spec: Program, argv: list[Word], assignments: tuple[tuple[str, Word], ...],
         stdin_script: str | None, extra_args: bool) -> None:  # fmt: skip
    """find's expression language: tests, actions (``-delete``, ``-fprint FILE``,
    ``-exec CMD ;``), operators, each primary with its arity and argument types."""
    from ketch_shell_kit.grammar.table import find_primaries

    primaries = find_primaries()
    builder = Builder(walker, argv, assignments, extra_args=extra_args)
    words = list(argv[1:])
    index = 0
    while (
        index < len(words)
        and words[index].static
        and (
            words[index].value in ("-H", "-L", "-P")
            or (words[index].value or "").startswith(("-D", "-O"))
        )
    ):
        index += 2 if words[index].value == "-D" else 1
    starts: list[Word] = []
    while index < len(words) and not (
        words[index].static and (words[index].value or "").startswith(("-", "(", "!", ")", ","))
    ):
        starts.append(words[index])
        index += 1
    deletes = False
    inner: list[tuple[int, int]] = []
    while index < len(words):
        word = words[index]
        if not word.static:
            builder.not_proven(
                f"a find expression word only known at run time ({word.source})", hide=True
            )
            index += 1
            continue
        value = word.value or ""
        if value in ("(", ")", "!", ",", "-not", "-a", "-and", "-o", "-or"):
            index += 1
            continue
        primary = primaries.get(value)
        if primary is None and value.startswith("-newer") and len(value) == 8:
            primary = primaries["-newerXY"]
        if primary is None:
            builder.not_proven(f"find {value}: a primary ketch does not know", hide=True)
            index += 1
            continue
        kinds, tag = primary
        if tag == "exec":
            end = index + 1
            while end < len(words) and words[end].value not in (";", "+"):
                end += 1
            if end == index + 1:
                walker.problem("find -exec without a command")
                return
            inner.append((index + 1, end))
            builder.not_proven(f"find {value} runs a command for every file found")
            index = end + 1
            continue
        if tag == "delete":
            deletes = True
            builder.not_proven("find -delete deletes files")
        for offset, kind_ in enumerate(kinds, 1):
            if index + offset >= len(words):
                builder.not_proven(f"find {value} needs an argument")
                break
            typed(builder, kind_, words[index + offset], f"find {value}")
        index += 1 + len(kinds)
    dash_globs(builder, starts)
    for start in starts or [literal(".")]:
        builder.use("write" if deletes else "list", start, "find starting point")
    builder.done()
    for begin, end in inner:
        command = [
            EXTRA if (w.value or "") in ("{}",) or "{}" in (w.value or "") else w
            for w in words[begin:end]
        ]
        if not command or command[0] is EXTRA:
            walker.problem("find -exec runs a program only known at run time")
            continue
        with walker.nested(argv[: begin + 1]):
            run(walker, command, (), extra_args=True)


def sed(walker: Walker, spec: Program, argv: list[Word], assignments: tuple[tuple[str, Word], ...],
        stdin_script: str | None, extra_args: bool) -> None:  # fmt: skip
    generic(walker, spec, argv, assignments, stdin_script, extra_args)


def awk(walker: Walker, spec: Program, argv: list[Word], assignments: tuple[tuple[str, Word], ...],
        stdin_script: str | None, extra_args: bool) -> None:  # fmt: skip
    """awk: operands of the form ``name=value`` are assignments, not files (only
    operands: ``-v f=.env`` is an option and its value, and the program comes next)."""
    parsed = getopt.parse(spec, list(argv[1:]))
    has_program = any(option.type in ("awkprog", "code") for option, _, _ in parsed.options)
    operands = parsed.operands if has_program else parsed.operands[1:]
    dropped = {
        id(w)
        for w in operands
        if w.static and _assignment(w) is not None and not (w.value or "").startswith("-")
    }
    kept = [argv[0]] + [w for w in argv[1:] if id(w) not in dropped]
    generic(walker, spec, kept, assignments, stdin_script, extra_args)


def test(walker: Walker, spec: Program, argv: list[Word], assignments: tuple[tuple[str, Word], ...],
         stdin_script: str | None, extra_args: bool) -> None:  # fmt: skip
    """``test``/``[``: strings only, except ``-v NAME``/``-R NAME``, where a subscript in
    NAME is code bash runs."""
    builder = Builder(walker, argv, assignments, extra_args=extra_args)
    words = list(argv[1:])
    for index, word in enumerate(words):
        if not word.single:
            builder.not_proven(
                f"a test operand only known at run time ({word.source}) may be an operator",
                hide=False,
            )
        if word.static and word.value in ("-v", "-R") and index + 1 < len(words):
            check_varname(walker, words[index + 1], spec.name)
        if not word.static and index + 1 < len(words):
            builder.not_proven(f"a test operand only known at run time ({word.source}) may be -v")
    builder.done()


def ps(walker: Walker, spec: Program, argv: list[Word], assignments: tuple[tuple[str, Word], ...],
       stdin_script: str | None, extra_args: bool) -> None:  # fmt: skip
    """ps: BSD-style letters (``ps aux``) or UNIX options (``ps -ef``). The ``e`` letter
    of BSD style shows other processes' environments, where API keys live."""
    from ketch_shell_kit.grammar.table import ps_bsd_letters

    builder = Builder(walker, argv, assignments, extra_args=extra_args)
    unix: list[Word] = []
    for word in argv[1:]:
        if not word.static:
            builder.not_proven(f"a ps argument only known at run time ({word.source})", hide=True)
            continue
        value = word.value or ""
        if value.startswith("-"):
            unix.append(word)
            continue
        if "e" in value:
            builder.not_proven(
                "ps e shows other processes' environments (where API keys live)", hide=True
            )
            builder.use("read", Word("/proc/1/environ", word.source), "ps e")
        elif not set(value) <= ps_bsd_letters():
            builder.not_proven(f"ps {value}: BSD letters ketch does not know", hide=True)
    parsed = getopt.parse(spec, unix)
    read_options(builder, spec, parsed)
    builder.done()


def cd(walker: Walker, spec: Program, argv: list[Word], assignments: tuple[tuple[str, Word], ...],
       stdin_script: str | None, extra_args: bool) -> None:  # fmt: skip
    builder = Builder(walker, argv, assignments, extra_args=extra_args)
    words = [
        w for w in argv[1:] if not (w.static and (w.value or "").startswith("-") and w.value != "-")
    ]
    if any(not w.static for w in argv[1:]) or extra_args:
        builder.not_proven("cd to a place only known at run time")
    if spec.name == "popd":
        builder.done()
        walker.cwds = ()
        return
    target = words[0] if words else None
    if target is not None:
        builder.use("list", target, f"{spec.name} target")
    builder.done()
    walker.cd_to(target)


def command_builtin(walker: Walker, spec: Program, argv: list[Word], assignments: tuple[tuple[str, Word], ...],
                    stdin_script: str | None, extra_args: bool) -> None:  # fmt: skip
    """``command -v NAME`` only looks a name up; ``command NAME ...`` runs it."""
    if any(w.static and w.value in ("-v", "-V") for w in argv[1:2]):
        builder = Builder(walker, argv, assignments, extra_args=extra_args)
        builder.done()
        return
    generic(walker, spec, argv, assignments, stdin_script, extra_args)


def builtin_assigning(walker: Walker, spec: Program, argv: list[Word], assignments: tuple[tuple[str, Word], ...],
                      stdin_script: str | None, extra_args: bool) -> None:  # fmt: skip
    """read, getopts, mapfile...: their operands are variable names they assign."""
    generic(walker, spec, argv, assignments, stdin_script, extra_args)


def dd(walker: Walker, spec: Program, argv: list[Word], assignments: tuple[tuple[str, Word], ...],
       stdin_script: str | None, extra_args: bool) -> None:  # fmt: skip
    builder = Builder(walker, argv, assignments, extra_args=extra_args)
    builder.not_proven("dd copies data to files or devices")
    for word in argv[1:]:
        if not word.static:
            builder.not_proven(f"a dd operand only known at run time ({word.source})", hide=True)
            continue
        key, _, val = (word.value or "").partition("=")
        if key == "if":
            builder.use("read", Word(val, word.source), "dd if=")
        elif key == "of":
            builder.use("write", Word(val, word.source), "dd of=")
    builder.done()


def declaration(
    walker: Walker, argv: tuple[Word, ...], assignments: tuple[tuple[str, Word], ...]
) -> None:
    """export/local/declare/readonly/typeset/unset (called by the walker)."""
    name = argv[0].value or ""
    builder = Builder(walker, argv, assignments, kind="declaration")
    for word in argv[1:]:
        if not word.static:
            builder.not_proven(f"a {name} argument only known at run time ({word.source})")
            if not word.single:
                walker.problem(
                    f"{name} with words only known at run time, which may name any variable or attribute"
                )
            continue
        value = word.value or ""
        if value.startswith(("-", "+")):
            if set(value[1:]) - set("rxgpfF"):
                walker.problem(
                    f"{name} {value} gives variables attributes (nameref, integer, array) that evaluate code"
                )
            continue
        variable = value.split("=", 1)[0]
        if variable.endswith("+"):
            variable = variable[:-1]
        check_varname(walker, Word(variable, word.source), name)
        if not safe_variable(variable) and name != "unset" and name != "local":
            builder.not_proven(
                f"{name} sets {variable}, an environment variable other programs read"
            )
    builder.done()


def script_(walker: Walker, spec: Program, argv: list[Word], assignments: tuple[tuple[str, Word], ...],
             stdin_script: str | None, extra_args: bool) -> None:  # fmt: skip
    """script: ``-c CMD`` is a shell script (read in turn); without it, a shell starts."""
    generic(walker, spec, argv, assignments, stdin_script, extra_args)
    parsed = getopt.parse(spec, list(argv[1:]))
    if not any(option.type == "script" for option, _, _ in parsed.options):
        walker.problem("script without -c starts a shell, which the analyser cannot see")


# ``set`` options that change nothing outside the shell's own error handling and tracing.
SAFE_SET_LETTERS = frozenset("euxvfCaETPhbBHm")
SAFE_SET_NAMES = frozenset(
    {"errexit", "nounset", "xtrace", "verbose", "pipefail", "noglob", "noclobber", "allexport", "errtrace", "functrace",
     "physical", "hashall", "braceexpand", "histexpand", "monitor", "notify", "ignoreeof", "interactive-comments", "history"}
)  # fmt: skip


def set_(walker: Walker, spec: Program, argv: list[Word], assignments: tuple[tuple[str, Word], ...],
         stdin_script: str | None, extra_args: bool) -> None:  # fmt: skip
    """``set -e``, ``set -o pipefail``, ``set -- args``: proven. ``set -k`` (every
    ``NAME=value`` argument goes into the environment: ``ls LD_PRELOAD=x``) and
    ``set -o posix`` (bash then reads some text differently) are not understood."""
    words = list(argv[1:])
    index = 0
    while index < len(words):
        word = words[index]
        if not word.static:
            walker.problem("set with options only known at run time")
            return
        value = word.value or ""
        if value in ("--", "-") or value[:1] not in ("-", "+") or len(value) < 2:
            break  # the rest are positional parameters
        if value[1:] == "o" or value[1:].endswith("o"):
            name = words[index + 1].value if index + 1 < len(words) else None
            if name is None or name not in SAFE_SET_NAMES:
                walker.problem(
                    f"set -o {name or ''}: a shell option that changes how later commands are read or run"
                )
                return
            index += 2
            letters = value[1:-1]
        else:
            index += 1
            letters = value[1:]
        if set(letters) - SAFE_SET_LETTERS:
            walker.problem(
                f"set {value}: a shell option that changes how later commands are read or run (-k puts arguments into the environment)"
            )
            return
    Builder(walker, argv, assignments, extra_args=extra_args).done()


def time_keyword(walker: Walker, spec: Program, argv: list[Word], assignments: tuple[tuple[str, Word], ...],
                 stdin_script: str | None, extra_args: bool) -> None:  # fmt: skip
    """bash's ``time [-p] PIPELINE``: the word after ``-p`` is the command, dashes and all."""
    words = list(argv[1:])
    while words and words[0].static and words[0].value == "-p":
        words.pop(0)
    Builder(
        walker, argv[: len(argv) - len(words)], assignments, kind="wrapper" if words else "command"
    ).done()
    if words:
        with walker.nested(argv[: len(argv) - len(words)]):
            run(walker, words, (), stdin_script=stdin_script, extra_args=extra_args)


def echo(walker: Walker, spec: Program, argv: list[Word], assignments: tuple[tuple[str, Word], ...],
         stdin_script: str | None, extra_args: bool) -> None:  # fmt: skip
    """echo, :, true, false: every word is just text (its substitutions were walked)."""
    Builder(walker, argv, assignments, extra_args=extra_args).done()


def su(walker: Walker, spec: Program, argv: list[Word], assignments: tuple[tuple[str, Word], ...],
       stdin_script: str | None, extra_args: bool) -> None:  # fmt: skip
    """su/runuser/sg: ``-c SCRIPT`` is a shell script run as another user or group; sg
    without ``-c`` runs its second word as one too. Otherwise: a shell as that user."""
    builder = Builder(walker, argv, assignments, extra_args=extra_args, kind="wrapper")
    builder.privileged = True
    builder.not_proven(f"{spec.name} {WHY['privileged']}")
    parsed = getopt.parse(spec, list(argv[1:]))
    read_options(builder, spec, parsed)
    script = next((value for option, value, _ in parsed.options if option.type == "script"), None)
    if script is None and spec.name == "sg" and len(parsed.operands) >= 2:
        script = parsed.operands[1]
    builder.done()
    if script is None:
        walker.problem(
            f"{spec.name} without a command the analyser can read (a shell as another user)"
        )
        return
    if not script.static:
        walker.problem(f"{spec.name} runs a script that is only known at run time")
        return
    with walker.nested(argv, privileged=True):
        walker.script(script.value or "", walker.cwds)


HANDLERS: dict[str, Callable[..., None]] = {
    "time": time_keyword, "script": script_, "set": set_, "echo": echo, "su": su, "generic": generic, "shell": shell, "eval": eval_, "watch": watch, "find": find, "sed": sed, "awk": awk,
    "test": test, "ps": ps, "cd": cd, "command": command_builtin, "assigning": builtin_assigning, "dd": dd,
}  # fmt: skip


def _register_git() -> None:
    from ketch_shell_kit.grammar.git import git

    HANDLERS["git"] = git


_register_git()

__all__ = ["Builder", "Option", "declaration", "run", "typed"]
