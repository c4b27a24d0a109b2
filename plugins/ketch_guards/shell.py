"""Shell command analysis: every simple command a command line would run.

A real parser (tree-sitter-bash) turns the line into a syntax tree; this module walks
it and lists each simple command it contains, across ``;`` ``&&`` ``||`` ``|`` ``|&``
``&`` and newlines, inside subshells, ``{ }`` groups, ``if``/``while``/``for``/``case``,
``$(…)``, backticks, ``<(…)``/``>(…)``, ``${x:-$(…)}`` and unquoted heredocs, and
unwraps the programs that run other programs (``env``, ``timeout``, ``nice``,
``nohup``, ``time``, ``stdbuf``, ``ionice``, ``command``, ``builtin``, ``exec``,
``xargs``, ``sudo``/``doas``/``su``, ``bash -c``/``sh -c``, ``eval``, ``watch``,
``find -exec``). Every redirection is listed too, with the directories the command
may be running in (each ``cd`` adds one).

It never guesses. Whatever it cannot fully understand -- a parse error, a program
name computed at run time, ``$IFS``, a carriage return or invisible character,
arithmetic on variables, function definitions, a shell reading its script from a
pipe -- is reported in ``problems``, and callers must then ask, never allow. Where
tree-sitter-bash is known to be weaker than bash (unusual heredocs), it either reports
an error or leaves ``$(`` in plain text, which is caught here as a problem.

This is shared ground: the hard guards (this plugin) check redirect targets and file
arguments against it, and the policy plugin classifies each part. It knows no policy.
"""

from __future__ import annotations

import os
import re
import threading
import unicodedata
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

MAX_DEPTH = 6  # nested bash -c / eval / sudo / env ... chains
MAX_PARTS = 50  # more simple commands than this is refused outright
MAX_LENGTH = 32_000  # characters of command line

# Operators that write to their target, and those that only read it.
WRITE_OPS = frozenset({">", ">>", ">|", "&>", "&>>", "<>", ">&"})
READ_OPS = frozenset({"<", "<>"})
# Redirect targets that are not files in the workspace or anywhere else.
HARMLESS_TARGETS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/stdin", "/dev/tty", "/dev/zero"})
PROCESS_SUBSTITUTION_PATH = "/dev/fd/63"

# Variables whose value changes what a later command means or which program runs.
SENSITIVE_VARIABLES = frozenset(
    {"PATH", "IFS", "BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS", "PS4", "PROMPT_COMMAND", "GLOBIGNORE", "CDPATH", "HOME"}
)

SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "ash", "mksh", "fish"})
PRIVILEGED = frozenset({"sudo", "doas", "su", "pkexec", "run0"})
WRAPPERS = frozenset(
    {"env", "timeout", "nice", "nohup", "time", "stdbuf", "ionice", "command", "builtin", "exec", "xargs", "eval", "watch"}
) | PRIVILEGED | SHELLS
RESERVED_WORDS = frozenset(
    {"do", "done", "then", "fi", "elif", "else", "esac", "in", "if", "for", "while", "until", "case", "select", "function", "{", "}", "!", "[[", "]]"}
)
# Builtins that run a string as code later or elsewhere: never understood.
OPAQUE = frozenset({"trap", "coproc", "let", "source", ".", "fc", "enable"})


@dataclass(frozen=True)
class Word:
    """One shell word. ``value`` is the word after quote removal, or None when it
    depends on an expansion (a variable, ``$(…)``, brace expansion). ``pattern`` is
    set when unquoted glob characters make it a pathname pattern (quoted parts escaped)."""

    value: str | None
    source: str
    pattern: str | None = None

    @property
    def static(self) -> bool:
        return self.value is not None


def literal(text: str) -> Word:
    return Word(value=text, source=text)


@dataclass(frozen=True)
class Redirect:
    op: str
    target: Word | None = None  # None for fd duplication/closing and heredocs
    fd: str | None = None
    cwds: tuple[Path, ...] = ()

    @property
    def writes(self) -> bool:
        return self.target is not None and self.op in WRITE_OPS

    @property
    def reads(self) -> bool:
        return self.target is not None and self.op in READ_OPS

    @property
    def harmless(self) -> bool:
        return harmless_path(self.target.value if self.target else None)


def harmless_path(value: str | None) -> bool:
    """A device or pipe path, not a file anyone keeps: /dev/null, /dev/fd/63."""
    return value is not None and (value in HARMLESS_TARGETS or re.fullmatch(r"/dev/fd/\d+", value) is not None)


@dataclass(frozen=True)
class Part:
    """One simple command that would run (after unwrapping wrappers)."""

    argv: tuple[Word, ...]
    assignments: tuple[tuple[str, Word], ...] = ()  # NAME=value given to this command's environment
    wrappers: tuple[tuple[Word, ...], ...] = ()  # the commands that ran this one, outermost first
    cwds: tuple[Path, ...] = ()  # directories it may run in; empty = unknown
    extra_args: bool = False  # arguments only known at run time are appended (xargs, find -exec)
    privileged: bool = False  # sudo/doas/su/pkexec/run0 somewhere in the chain
    kind: str = "command"  # command | assignment | declaration

    @property
    def program(self) -> str | None:
        return self.argv[0].value if self.argv else None

    @property
    def name(self) -> str | None:
        """The program's base name (``/usr/bin/rm`` -> ``rm``)."""
        program = self.program
        return os.path.basename(program) if program else program

    @property
    def args(self) -> tuple[Word, ...]:
        return self.argv[1:]

    @property
    def text(self) -> str:
        words = [f"{k}={v.source}" for k, v in self.assignments] + [w.source for w in self.argv]
        return " ".join(words) + (" …" if self.extra_args else "")


@dataclass
class Analysis:
    command: str
    parts: list[Part] = field(default_factory=list)
    redirects: list[Redirect] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def understood(self) -> bool:
        return not self.problems

    @property
    def too_complex(self) -> bool:
        return len(self.parts) > MAX_PARTS


# --- parsing --------------------------------------------------------------------------

_local = threading.local()


def _parser() -> Any:
    parser = getattr(_local, "parser", None)
    if parser is None:
        import tree_sitter_bash
        from tree_sitter import Language, Parser

        parser = Parser(Language(tree_sitter_bash.language()))
        _local.parser = parser
    return parser


def analyse(command: str, cwd: Path | str | None = None, *, home: Path | None = None) -> Analysis:
    """Every simple command and redirection in ``command``, or the problems found."""
    base = (Path(os.path.abspath(cwd)),) if cwd is not None else ()
    walker = _Walker(command, home or Path.home())
    walker.script(command, base)
    return walker.analysis


_JOINED_LINES = re.compile(r"(?<=\S)\\\n(?=\S)")


def _bad_characters(text: str) -> str | None:
    if _JOINED_LINES.search(text):
        # bash joins ``ls\<newline>ls`` into one word; tree-sitter-bash splits it.
        return "a line continuation inside a word, which the parser and bash read differently"
    for char in text:
        if char in "\n\t":
            continue
        if char == "\r":
            return "it contains a carriage return (\\r), which bash and a reader see differently"
        category = unicodedata.category(char)
        if category in ("Cc", "Cf", "Co", "Cs", "Cn", "Zl", "Zp") or (category == "Zs" and char != " "):
            return f"it contains an invisible or control character (U+{ord(char):04X})"
    return None


_UNESCAPED = re.compile(r"\\.", re.S)
_BRACE = re.compile(r"\{[^{}]*(,|\.\.)[^{}]*\}")


class _Walker:
    def __init__(self, command: str, home: Path) -> None:
        self.analysis = Analysis(command=command)
        self.home = home
        self.depth = 0
        self.chain: tuple[tuple[Word, ...], ...] = ()
        self.privileged = False
        self.cwds: tuple[Path, ...] = ()
        self.visited: list[set[tuple[int, int]]] = []  # per script: the command nodes walked

    # --- helpers ---------------------------------------------------------------------

    def problem(self, text: str) -> None:
        if text not in self.analysis.problems:
            self.analysis.problems.append(text)

    def script(self, text: str, cwds: tuple[Path, ...], *, same_shell: bool = False) -> None:
        """Parse and walk one script (the whole line, or the text of ``bash -c``/``eval``).
        ``same_shell`` (eval): a ``cd`` inside it still holds afterwards."""
        if len(text) > MAX_LENGTH:
            self.problem(f"the command is longer than {MAX_LENGTH} characters")
            return
        bad = _bad_characters(text)
        if bad:
            self.problem(bad)
            return
        if self.depth > MAX_DEPTH:
            self.problem(f"commands are nested more than {MAX_DEPTH} levels deep")
            return
        tree = _parser().parse(text.encode("utf-8"))
        root = tree.root_node
        if root.has_error or _has_missing(root):
            self.problem("it does not parse as a complete shell command")
            return
        odd = _misread(root, text.encode("utf-8"))
        if odd:
            self.problem(odd)
            return
        saved = self.cwds
        self.cwds = cwds
        self.visited.append(set())
        self.statement(root)
        walked = self.visited.pop()
        if not same_shell:
            self.cwds = saved
        # The self-check: every command in the tree was walked. One that was not is a
        # part of the line nobody looked at (a bug here, or a form not handled).
        for node in _descendants(root, _COMMAND_NODES):
            if (node.start_byte, node.end_byte) not in walked:
                self.problem(f"part of the line was not analysed ({node.text.decode()[:40]!r})")
                break

    def cd_to(self, target: Word | None) -> None:
        """A ``cd`` may or may not succeed: afterwards the command may be in either place."""
        if not self.cwds:
            return
        if target is not None and (target.value is None or target.pattern is not None or target.value == "-"):
            self.cwds = ()
            return
        found = list(self.cwds)
        for cwd in self.cwds:
            new = self.home if target is None else Path(os.path.normpath(os.path.join(cwd, target.value or "")))
            if new not in found:
                found.append(new)
        self.cwds = tuple(found)

    def isolated(self, node: Any) -> None:
        """Walk ``node`` in a subshell: its ``cd`` does not leak out."""
        saved = self.cwds
        self.statement(node)
        self.cwds = saved

    # --- statements ------------------------------------------------------------------

    def statement(self, node: Any) -> None:  # noqa: C901 - one branch per node type
        kind = node.type
        if kind in ("program", "list", "compound_statement", "do_group", "else_clause", "elif_clause", "if_statement", "while_statement"):
            if kind == "compound_statement" and node.child_count and node.children[0].type == "((":
                self.arithmetic(node)
                return
            for child in node.named_children:
                self.statement(child)
        elif kind == "pipeline":
            for child in node.named_children:
                self.isolated(child)
        elif kind == "subshell":
            self.isolated_children(node)
        elif kind == "negated_command":
            for child in node.named_children:
                self.statement(child)
        elif kind == "redirected_statement":
            self.redirected(node)
        elif kind == "command":
            self.command(node, ())
        elif kind == "variable_assignment":
            self.assignment_part([node])
        elif kind == "declaration_command":
            self.declaration(node)
        elif kind == "unset_command":
            self.visited[-1].add((node.start_byte, node.end_byte))
            words = tuple(self.word(c) for c in node.named_children)
            self.add_part(Part(argv=(literal("unset"), *words), kind="declaration"))
        elif kind == "for_statement":
            for child in node.named_children:
                name = child.type
                if name == "variable_name":
                    continue
                if name == "do_group":
                    self.statement(child)
                else:
                    self.word(child)
        elif kind == "case_statement":
            for child in node.named_children:
                if child.type == "case_item":
                    for item in child.named_children:
                        if item.type in ("word", "extglob_pattern", "string", "raw_string", "concatenation", "number", "simple_expansion", "expansion"):
                            self.word(item)
                        else:
                            self.statement(item)
                else:
                    self.word(child)
        elif kind == "test_command":
            self.test_command(node)
        elif kind == "comment":
            return
        elif kind == "c_style_for_statement":
            self.problem("C-style for loops do arithmetic, which can run code hidden in variables")
        elif kind == "function_definition":
            self.problem("it defines a shell function, which could hide what a later command name runs")
        else:
            self.problem(f"it uses a shell construct the analyser does not handle ({kind})")

    def isolated_children(self, node: Any) -> None:
        saved = self.cwds
        for child in node.named_children:
            self.statement(child)
        self.cwds = saved

    def redirected(self, node: Any) -> None:
        body = node.child_by_field_name("body")
        redirects: list[Any] = []
        trailing: list[Any] = []
        for index, child in enumerate(node.children):
            if node.field_name_for_child(index) == "redirect" or child.type.endswith("_redirect"):
                redirects.append(child)
        stdin_script = None
        for redirect in redirects:
            found = self.redirect(redirect, trailing)
            if found is not None:
                stdin_script = found
        if body is None:
            return
        if body.type == "command":
            self.command(body, (), stdin_script=stdin_script)
        else:
            self.statement(body)
        for statement in trailing:
            self.statement(statement)

    def redirect(self, node: Any, trailing: list[Any]) -> str | None:
        """Record one redirection. Returns a heredoc/herestring's static text (a possible
        script for a shell reading stdin); statements parsed inside a heredoc redirect
        (``cat <<EOF | bash``) are appended to ``trailing``."""
        kind = node.type
        if kind == "heredoc_redirect":
            quoted = False
            text_parts: list[str] = []
            dynamic = False
            for child in node.children:
                ctype = child.type
                if ctype == "heredoc_start":
                    quoted = any(q in child.text.decode() for q in "'\"\\")
                elif ctype == "heredoc_body":
                    if quoted:
                        text_parts.append(child.text.decode())
                        continue
                    if child.named_child_count == 0:
                        text = child.text.decode()
                        dynamic |= self.unparsed(text)
                        text_parts.append(text)
                    for sub in child.named_children:
                        if sub.type == "heredoc_content":
                            text = sub.text.decode()
                            dynamic |= self.unparsed(text)
                            text_parts.append(text)
                        else:
                            self.word(sub)
                            dynamic = True
                elif ctype in ("<<", "<<-", "heredoc_end", "&&", "||", ";", "|", "|&"):
                    continue
                elif ctype.endswith("_redirect"):
                    self.redirect(child, trailing)
                elif child.is_named:
                    trailing.append(child)
                else:
                    self.problem(f"an unexpected token after a heredoc ({ctype!r})")
            return None if dynamic else "".join(text_parts)
        if kind == "herestring_redirect":
            words = [self.word(c) for c in node.named_children]
            self.analysis.redirects.append(Redirect(op="<<<", cwds=self.cwds))
            return words[0].value if len(words) == 1 else None
        if kind != "file_redirect":
            self.problem(f"it uses a redirection the analyser does not handle ({kind})")
            return None
        op = ""
        fd = None
        target_node = None
        for index, child in enumerate(node.children):
            field_name = node.field_name_for_child(index)
            if child.type == "file_descriptor":
                fd = child.text.decode()
            elif field_name == "destination":
                if target_node is not None:
                    self.problem("a redirection has more than one target")
                target_node = child
            elif not child.is_named:
                op = child.type
        target = self.word(target_node) if target_node is not None else None
        if target_node is not None and target_node.type == "process_substitution":
            target = None  # a pipe to the commands inside, which are parts themselves
        if op in (">&", "<&", ">&-", "<&-") and (target is None or (target.value or "").isdigit() or target.value == "-"):
            target = None  # fd duplication or closing, not a file
        elif op == ">&" and target is not None and target.value is None:
            self.problem("a redirection target is only known at run time")
        self.analysis.redirects.append(Redirect(op=op, target=target, fd=fd, cwds=self.cwds))
        return None

    def unparsed(self, text: str) -> bool:
        """Text the parser left plain but bash would expand: dynamic, and code if ``$(``."""
        plain = _UNESCAPED.sub("", text)
        if "$(" in plain or "`" in plain or "$[" in plain:
            self.problem("it has a command substitution the parser left as plain text")
        return "$" in plain

    def arithmetic(self, node: Any) -> None:
        if _mentions_variables(node):
            self.problem("it does arithmetic on variables, which can run code hidden in them")
        for sub in _descendants(node, ("command_substitution", "process_substitution")):
            self.isolated_children(sub)

    def test_command(self, node: Any) -> None:
        ops = {c.text.decode() for c in _descendants(node, ("test_operator",))}
        if ops & {"-eq", "-ne", "-lt", "-le", "-gt", "-ge", "-v"} and _mentions_variables(node):
            self.problem("[[ ]] compares variables arithmetically, which can run code hidden in them")
        for child in node.named_children:
            self.test_operand(child)

    def test_operand(self, node: Any) -> None:
        if node.type in ("binary_expression", "unary_expression", "parenthesized_expression", "negation_expression"):
            for child in node.named_children:
                self.test_operand(child)
        elif node.type == "test_operator":
            return
        elif node.type == "regex":
            self.unparsed(node.text.decode())  # bash expands $(…) even in a regex operand
        else:
            self.word(node)

    def declaration(self, node: Any) -> None:
        self.visited[-1].add((node.start_byte, node.end_byte))
        self.check_word_boundaries(node)
        argv: list[Word] = []
        assignments: list[tuple[str, Word]] = []
        for child in node.children:
            if not child.is_named:
                if child.type in ("declare", "typeset", "export", "readonly", "local"):
                    argv.append(literal(child.type))
                else:
                    self.problem(f"an unexpected token in a declaration ({child.type!r})")
                continue
            if child.type == "variable_assignment":
                name, value = self.assignment(child)
                assignments.append((name, value))
                argv.append(Word(value=None if value.value is None else f"{name}={value.value}", source=child.text.decode()))
            elif child.type == "variable_name":
                name = child.text.decode()
                self.check_variable(name)
                argv.append(literal(name))
            else:
                argv.append(self.word(child))
        self.add_part(Part(argv=tuple(argv), assignments=tuple(assignments), kind="declaration"))

    def assignment(self, node: Any) -> tuple[str, Word]:
        name_node = node.child_by_field_name("name")
        value_node = node.child_by_field_name("value")
        if name_node is None:
            self.problem("an assignment without a name")
            return "", Word(None, node.text.decode())
        if name_node.type != "variable_name":
            self.problem("it assigns to an array element, whose subscript is arithmetic that can run code")
            for sub in _descendants(name_node, ("command_substitution",)):
                self.isolated_children(sub)
            return name_node.text.decode(), Word(None, node.text.decode())
        name = name_node.text.decode()
        self.check_variable(name)
        if value_node is None:
            return name, literal("")
        if value_node.type == "array":
            for child in value_node.named_children:
                self.word(child)
            return name, Word(None, value_node.text.decode())
        return name, self.word(value_node)

    def check_variable(self, name: str) -> None:
        if name == "IFS":
            self.problem("it changes $IFS, which changes how every later word splits")
        elif name in SENSITIVE_VARIABLES or name.startswith(("LD_", "DYLD_")):
            self.problem(f"it sets {name}, which changes which program a later command runs or how")

    def assignment_part(self, nodes: list[Any]) -> None:
        pairs = tuple(self.assignment(n) for n in nodes)
        self.add_part(Part(argv=(), assignments=pairs, kind="assignment"))

    # --- words -----------------------------------------------------------------------

    def word(self, node: Any) -> Word:  # noqa: C901 - one branch per node type
        """Evaluate a word node; substitutions inside it are walked as commands."""
        kind = node.type
        source = node.text.decode()
        if kind == "word":
            return self.unquoted(source)
        if kind in ("number", "variable_name"):
            return Word(source, source)
        if kind == "raw_string":
            value = source[1:-1]
            return Word(value, source)
        if kind == "ansi_c_string":
            decoded = _ansi_c(source[2:-1])
            return Word(decoded, source)
        if kind in ("string", "translated_string"):
            # The value comes from the text between the quotes: tree-sitter-bash can
            # put characters into its quote tokens (``" "`` is ``"`` and `` "``).
            dynamic = False
            for child in node.children:
                if not child.is_named:
                    dynamic |= child.type != '"' or self.unparsed(child.text.decode())
                elif child.type == "string_content":
                    dynamic |= self.unparsed(child.text.decode())
                else:
                    self.word(child)
                    dynamic = True
            body = source[1:-1] if source.startswith('"') else source[2:-1]
            return Word(None if dynamic else _dquote_unescape(body), source)
        if kind == "concatenation":
            # Every piece is evaluated first, so substitutions anywhere in it are walked.
            # ``~`` only expands at the very start of a word, never inside ``x]~``.
            children = node.named_children
            words = [self.unquoted(c.text.decode(), tilde=i == 0) if c.type == "word" else self.word(c) for i, c in enumerate(children)]
            if any(not c.is_named for c in node.children):
                return Word(None, source)  # a bare token inside a word (``a$``): not a plain word
            first = children[0].text.decode() if children and children[0].type == "word" else ""
            if first.startswith("~") and "/" not in first:
                return Word(None, source)  # ``~'x'``: a quoted tilde-prefix is not expanded; do not guess
            unquoted = "".join(w.source if c.type == "word" else "x" for w, c in zip(words, children, strict=True))
            if any(w.value is None for w in words) or _BRACE.search(unquoted):
                return Word(None, source)
            value = "".join(w.value or "" for w in words)
            has_glob = any(w.pattern is not None for w in words)
            pattern = "".join(w.pattern if w.pattern is not None else _glob_escape(w.value or "") for w in words) if has_glob else None
            return Word(value, source, pattern)
        if kind in ("simple_expansion", "expansion"):
            if any(c.text.decode() == "IFS" for c in _descendants(node, ("variable_name",))):
                self.problem("it expands $IFS, which makes word splitting ambiguous")
            for sub in _descendants(node, ("command_substitution", "process_substitution")):
                self.isolated_children(sub)
            if _descendants(node, ("subscript",)):
                self.problem("it expands an array element, whose subscript is arithmetic that can run code")
            return Word(None, source)
        if kind == "command_substitution":
            self.isolated_children(node)
            return Word(None, source)
        if kind == "process_substitution":
            self.isolated_children(node)
            return Word(PROCESS_SUBSTITUTION_PATH, source)  # what bash passes: a pipe's path
        if kind == "arithmetic_expansion":
            self.arithmetic(node)
            return Word(None, source)
        if kind == "brace_expression":
            return Word(None, source)
        if kind == "extglob_pattern":
            if any(c in source for c in " \t\n"):
                self.problem("a pattern the parser and bash split differently (unquoted whitespace inside it)")
            return Word(source, source, source)
        if kind == "command_name":
            inner = node.named_children
            if len(inner) != 1 or len(node.children) != 1:
                for child in inner:
                    self.word(child)  # still walk any substitution in it
                self.problem("a program name the analyser cannot read")
                return Word(None, source)
            return self.word(inner[0])
        self.problem(f"it uses a word form the analyser does not handle ({kind})")
        return Word(None, source)

    def unquoted(self, source: str, *, tilde: bool = True) -> Word:
        if self.unparsed(source):
            return Word(None, source)
        if _BRACE.search(_UNESCAPED.sub("x", source)):
            return Word(None, source)  # brace expansion: several words
        value_chars: list[str] = []
        pattern_chars: list[str] = []
        has_glob = False
        index = 0
        while index < len(source):
            char = source[index]
            if char == "\\" and index + 1 < len(source):
                following = source[index + 1]
                index += 2
                if following == "\n":
                    continue
                value_chars.append(following)
                pattern_chars.append(_glob_escape(following))
                continue
            if char in " \t\n":
                # bash splits words here; tree-sitter-bash kept them together (``ls⏎\rm``).
                self.problem("a word the parser and bash split differently (unquoted whitespace inside it)")
                return Word(None, source)
            if char in "*?[":
                has_glob = True
            value_chars.append(char)
            pattern_chars.append(char)
            index += 1
        value = "".join(value_chars)
        pattern = "".join(pattern_chars)
        if tilde and source.startswith("~"):
            head, slash, rest = value.partition("/")
            if head != "~":
                return Word(None, source)  # ~user, ~+, ~-: another user's home or a variable
            value = str(self.home) + slash + rest
            pattern = _glob_escape(str(self.home)) + pattern[1:]
        return Word(value, source, pattern if has_glob else None)

    # --- commands ----------------------------------------------------------------------

    def command(self, node: Any, extra_redirects: tuple[Redirect, ...], stdin_script: str | None = None) -> None:
        assignments: list[tuple[str, Word]] = []
        argv: list[Word] = []
        trailing: list[Any] = []
        self.visited[-1].add((node.start_byte, node.end_byte))
        self.check_word_boundaries(node)
        for index, child in enumerate(node.children):
            field_name = node.field_name_for_child(index)
            if child.type == "variable_assignment":
                assignments.append(self.assignment(child))
            elif field_name in ("name", "argument"):
                if field_name == "name" and child.text.decode() in RESERVED_WORDS:
                    # tree-sitter reads ``…; do rm x; done`` as a command named "do";
                    # bash rejects it. Two readings of one line: never allow.
                    self.problem(f"'{child.text.decode()}' stands where bash expects a command (a syntax error in bash)")
                argv.append(self.word(child))
            elif child.type.endswith("_redirect"):
                found = self.redirect(child, trailing)
                if found is not None:
                    stdin_script = found
            elif child.type == "comment":
                continue
            elif child.is_named:
                self.problem(f"it uses a command form the analyser does not handle ({child.type})")
            else:
                self.problem(f"it has an unexpected token in a command ({child.type!r})")
        if not argv:
            if assignments:
                self.add_part(Part(argv=(), assignments=tuple(assignments), kind="assignment"))
            return
        self.run(argv, tuple(assignments), stdin_script=stdin_script)
        for statement in trailing:
            self.statement(statement)

    def check_word_boundaries(self, node: Any) -> None:
        """Two words of one command must be apart in the source. When they touch
        (``ls`ls`ls``), tree-sitter-bash split a word that bash keeps whole."""
        previous_end: int | None = None
        for index, child in enumerate(node.children):
            is_word = node.field_name_for_child(index) in ("name", "argument") or child.type in ("variable_assignment", "variable_name", "word", "concatenation", "string", "raw_string")
            if not is_word:
                previous_end = None
                continue
            if previous_end is not None and child.start_byte == previous_end:
                self.problem("two words the parser separated but bash joins into one")
            previous_end = child.end_byte

    def add_part(self, part: Part) -> None:
        self.analysis.parts.append(
            replace(part, wrappers=self.chain + part.wrappers, cwds=self.cwds, privileged=part.privileged or self.privileged)
        )

    def run(self, argv: list[Word], assignments: tuple[tuple[str, Word], ...], *, stdin_script: str | None = None, extra_args: bool = False) -> None:
        """One command: unwrap it if it runs another, else record it as a part."""
        program = argv[0]
        if program.value is None or program.pattern is not None:
            self.problem(f"the program name ({program.source}) is only known at run time")
            return
        name = os.path.basename(program.value)
        if program.value in RESERVED_WORDS:
            # ``env X=1 ! curl`` runs a program named "!"; nobody means that.
            self.problem(f"the reserved word '{program.value}' is used as a program name")
            return
        if name == "time" and any((w.value or "").startswith(("-o", "--output", "-a", "--append")) for w in argv[1:]):
            self.problem("time -o writes its report to a file")
            return
        if name in OPAQUE:
            self.problem(f"'{name}' runs code the analyser cannot see")
            return
        if name == "cd" or name == "pushd":
            self.add_part(Part(argv=tuple(argv), assignments=assignments, extra_args=extra_args))
            target = next((w for w in argv[1:] if not (w.value or "").startswith("-")), None)
            self.cd_to(target)
            return
        if name == "popd":
            self.add_part(Part(argv=tuple(argv), assignments=assignments, extra_args=extra_args))
            self.cwds = ()
            return
        if name in WRAPPERS and is_system_program(program.value):
            if self.depth >= MAX_DEPTH:
                self.problem(f"commands are nested more than {MAX_DEPTH} levels deep")
                return
            self.unwrap(name, argv, assignments, stdin_script, extra_args)
            return
        self.add_part(Part(argv=tuple(argv), assignments=assignments, extra_args=extra_args))
        if name == "find":
            self.find_exec(argv)

    def nested(self, wrapper: list[Word], *, privileged: bool = False) -> _Nested:
        return _Nested(self, tuple(wrapper), privileged)

    def unwrap(self, name: str, argv: list[Word], assignments: tuple[tuple[str, Word], ...], stdin_script: str | None, extra_args: bool) -> None:  # noqa: C901
        args = argv[1:]
        if name in SHELLS:
            self.shell(argv, assignments, stdin_script, extra_args)
            return
        if name == "eval" or name == "watch":
            start = 0
            if name == "watch":
                start = _skip_options(args, short_with_arg="ndnq", long_with_arg=("interval", "differences", "chgexit", "equexit"))
                if start is None:
                    self.problem("watch with options the analyser cannot read")
                    return
                if any(w.value in ("-x", "--exec") for w in args[:start]):
                    if args[start:]:
                        with self.nested(argv[: start + 1]):
                            self.run(list(args[start:]), assignments)
                    return
            words = args[start:]
            if extra_args or any(w.value is None for w in words):
                self.problem(f"{name} runs text that is only known at run time")
                return
            if words:
                with self.nested(argv[: start + 1]):
                    self.script(" ".join(w.value or "" for w in words), self.cwds, same_shell=name == "eval")
            return
        if name in PRIVILEGED:
            self.privileged_command(name, argv, assignments, extra_args)
            return
        spec = _WRAPPER_OPTIONS.get(name)
        if name == "xargs":
            start = _skip_options(args, short_with_arg="adEeIiLlnPs", long_with_arg=("arg-file", "delimiter", "eof", "replace", "max-lines", "max-args", "max-procs", "max-chars", "process-slot-var"), optional_short="eil")
            if start is None:
                self.problem("xargs with options the analyser cannot read")
                return
            replaces = any((w.value or "").startswith(("-I", "-i", "--replace")) for w in args[:start])
            inner = list(args[start:]) or [literal("echo")]
            inner_name = os.path.basename(inner[0].value or "")
            if replaces and (inner_name in SHELLS or inner_name in ("eval",) or inner_name in PRIVILEGED):
                self.problem("xargs -I substitutes input into a shell script, where it can become code")
                return
            with self.nested(argv[: start + 1]):
                self.run(inner, (), extra_args=True)
            return
        if name == "env":
            self.env(argv, assignments, extra_args)
            return
        if name == "command" and any(w.value in ("-v", "-V") for w in args[:1]):
            self.add_part(Part(argv=tuple(argv), assignments=assignments, extra_args=extra_args))
            return
        if spec is None:
            self.problem(f"'{name}' with options the analyser cannot read")
            return
        short, long, positional = spec
        start = _skip_options(args, short_with_arg=short, long_with_arg=long, numeric=name == "nice")
        if start is None:
            self.problem(f"'{name}' with options the analyser cannot read")
            return
        start += positional
        inner = list(args[start:]) if start <= len(args) else []
        if name == "ionice" and any((w.value or "").startswith(("-p", "-P", "-u", "--pid", "--pgid", "--uid")) for w in args[:start]):
            inner = []
        if not inner:
            self.add_part(Part(argv=tuple(argv), assignments=assignments, extra_args=extra_args))
            return
        with self.nested(argv[: start + 1]):
            self.run(inner, assignments, stdin_script=stdin_script, extra_args=extra_args)

    def shell(self, argv: list[Word], assignments: tuple[tuple[str, Word], ...], stdin_script: str | None, extra_args: bool) -> None:
        args = argv[1:]
        index = 0
        command_mode = False
        reads_stdin = False
        while index < len(args):
            word = args[index]
            value = word.value
            if value is None:
                self.problem("a shell's options are only known at run time")
                return
            if value == "--":
                index += 1
                break
            if value in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file"):
                index += 2
                continue
            if value.startswith("--"):
                index += 1
                continue
            if value.startswith(("-", "+")) and len(value) > 1:
                letters = value[1:]
                command_mode |= "c" in letters
                reads_stdin |= "s" in letters or "i" in letters
                index += 1
                continue
            break
        rest = args[index:]
        if rest and rest[0].value == "-":
            reads_stdin, rest = True, rest[1:]
        if command_mode:
            if not rest or rest[0].value is None or extra_args:
                self.problem("a shell runs a script that is only known at run time")
                return
            with self.nested(argv[: index + 2]):
                self.script(rest[0].value, self.cwds)
            return
        if rest and not reads_stdin:
            # ``bash script.sh``: runs a file; the part is the shell itself, never read-only.
            self.add_part(Part(argv=tuple(argv), assignments=assignments, extra_args=extra_args))
            return
        if stdin_script is not None:
            with self.nested(argv):
                self.script(stdin_script, self.cwds)
            return
        self.problem("a shell reads its script from standard input, which the analyser cannot see")

    def privileged_command(self, name: str, argv: list[Word], assignments: tuple[tuple[str, Word], ...], extra_args: bool) -> None:
        args = argv[1:]
        if name == "su":
            script = None
            for index, word in enumerate(args):
                if word.value in ("-c", "--command") and index + 1 < len(args):
                    script = args[index + 1]
            if script is None or script.value is None:
                self.problem("su without a command the analyser can read")
                return
            with self.nested(argv, privileged=True):
                self.script(script.value, self.cwds)
            return
        start = _skip_options(args, short_with_arg="ugpCDhrtTURc", long_with_arg=("user", "group", "prompt", "close-from", "chdir", "host", "role", "type", "command-timeout", "other-user", "chroot", "login-class"))
        if start is None or start >= len(args):
            self.problem(f"{name} without a command the analyser can read (a root shell?)")
            return
        if any(w.value in ("-s", "-i", "--shell", "--login") for w in args[:start]):
            self.problem(f"{name} -s/-i runs a root shell")
            return
        with self.nested(argv[: start + 1], privileged=True):
            self.run(list(args[start:]), assignments, extra_args=extra_args)

    def env(self, argv: list[Word], assignments: tuple[tuple[str, Word], ...], extra_args: bool) -> None:
        args = argv[1:]
        index = 0
        added = list(assignments)
        while index < len(args):
            value = args[index].value
            if value is None:
                self.problem("env with an argument only known at run time")
                return
            if value in ("-u", "--unset"):
                index += 2
                continue
            if value.startswith(("-S", "--split-string", "-C", "--chdir")):
                self.problem("env -S/-C changes how or where the command runs in a way the analyser does not follow")
                return
            if value == "--":
                index += 1
                break
            if value.startswith("-") and len(value) > 1:
                index += 1
                continue
            if value == "-":
                index += 1
                continue
            if "=" in value and not value.startswith("="):
                key, _, val = value.partition("=")
                self.check_variable(key)
                added.append((key, Word(val, args[index].source)))
                index += 1
                continue
            break
        inner = list(args[index:])
        if not inner:
            self.add_part(Part(argv=tuple(argv), assignments=tuple(added), extra_args=extra_args))
            return
        with self.nested(argv[: index + 1]):
            self.run(inner, tuple(added), extra_args=extra_args)

    def find_exec(self, argv: list[Word]) -> None:
        """``find … -exec CMD {} ;``: CMD is a command too (find stays a part as well)."""
        index = 1
        while index < len(argv):
            value = argv[index].value
            if value in ("-exec", "-execdir", "-ok", "-okdir"):
                end = index + 1
                while end < len(argv) and argv[end].value not in (";", "+"):
                    end += 1
                inner = list(argv[index + 1 : end])
                if not inner:
                    self.problem("find -exec without a command")
                    return
                with self.nested(argv[: index + 1]):
                    self.run(inner, (), extra_args=True)
                index = end
            index += 1


class _Nested:
    """Context: commands walked inside are run by ``wrapper`` (one level deeper)."""

    def __init__(self, walker: _Walker, wrapper: tuple[Word, ...], privileged: bool) -> None:
        self.walker, self.wrapper, self.privileged_flag = walker, wrapper, privileged

    def __enter__(self) -> None:
        walker = self.walker
        self.saved = (walker.chain, walker.privileged)
        walker.chain = (*walker.chain, self.wrapper)
        walker.privileged = walker.privileged or self.privileged_flag
        walker.depth += 1

    def __exit__(self, *exc: object) -> None:
        walker = self.walker
        walker.chain, walker.privileged = self.saved
        walker.depth -= 1


# (short options taking an argument, long options taking one, positional args before the command)
_WRAPPER_OPTIONS: dict[str, tuple[str, tuple[str, ...], int]] = {
    "timeout": ("sk", ("signal", "kill-after"), 1),
    "nice": ("n", ("adjustment",), 0),
    "nohup": ("", (), 0),
    "time": ("fo", ("format", "output"), 0),
    "stdbuf": ("ioe", ("input", "output", "error"), 0),
    "ionice": ("cnpPu", ("class", "classdata", "pid", "pgid", "uid"), 0),
    "command": ("", (), 0),
    "builtin": ("", (), 0),
    "exec": ("a", (), 0),
}


def _skip_options(
    args: list[Word] | tuple[Word, ...],
    *,
    short_with_arg: str = "",
    long_with_arg: tuple[str, ...] = (),
    optional_short: str = "",
    numeric: bool = False,
) -> int | None:
    """Index of the first argument after the options (None: an option is unreadable)."""
    index = 0
    while index < len(args):
        value = args[index].value
        if value is None:
            return None
        if value == "--":
            return index + 1
        if not value.startswith("-") or value == "-":
            return index
        if value.startswith("--"):
            name, has_value, _ = value[2:].partition("=")
            if name in long_with_arg and not has_value:
                index += 2
            else:
                index += 1
            continue
        if numeric and re.fullmatch(r"-\d+", value):
            index += 1
            continue
        letters = value[1:]
        consumed = False
        for position, letter in enumerate(letters):
            if letter in short_with_arg:
                if position == len(letters) - 1 and letter not in optional_short:
                    index += 2
                    consumed = True
                break
        if not consumed:
            index += 1
    return index


SYSTEM_DIRS = ("/usr/bin/", "/bin/", "/usr/local/bin/", "/usr/sbin/", "/sbin/")


def is_system_program(program: str) -> bool:
    """A bare name found on PATH, or a path in the system's own program directories.
    ``./timeout`` is a workspace file that happens to share a wrapper's name."""
    return "/" not in program or os.path.dirname(program) + "/" in SYSTEM_DIRS


_COMMAND_NODES = ("command", "declaration_command", "unset_command")
_KEYWORD_TOKENS = RESERVED_WORDS | {"select", "time"}
_METACHARACTERS = frozenset(b" \t\n|&;()<>")
# Symbols that are reserved words only in these statements (``{`` also opens ``x{1..3}``).
_SYMBOL_OWNERS = {"{": "compound_statement", "}": "compound_statement", "!": "negated_command", "[[": "test_command", "]]": "test_command"}


def _misread(root: Any, source: bytes) -> str | None:
    """Places where tree-sitter-bash and bash read the same text differently:

    * a lone ``$`` (``ls$``, ``export a$ b``, ``$ ls``), which bash keeps literal;
    * a reserved word glued to other characters (``if]ls``, ``!]ls``, ``{ls;}``):
      bash only knows a reserved word standing alone between blanks or operators.

    Where the tree shows one, two readings exist: never allow."""
    covered = bytearray(len(source))
    stack = [root]
    while stack:
        node = stack.pop()
        if node.child_count == 0 or node.type == "heredoc_body":  # a body's text is data
            covered[node.start_byte : node.end_byte] = b"\x01" * (node.end_byte - node.start_byte)
        if not node.is_named and node.type in _KEYWORD_TOKENS and _SYMBOL_OWNERS.get(node.type, node.parent.type if node.parent else "") == (node.parent.type if node.parent else ""):
            before = source[node.start_byte - 1] if node.start_byte > 0 else None
            after = source[node.end_byte] if node.end_byte < len(source) else None
            if (before is not None and before not in _METACHARACTERS) or (after is not None and after not in _METACHARACTERS):
                return f"the reserved word '{node.type}' is joined to other characters, which the parser and bash read differently"
        if node.type == "$" and not node.is_named and (node.parent is None or node.parent.type not in ("simple_expansion", "expansion")):
            return "a lone '$' that the parser and bash read differently"
        if node.type == "simple_expansion" and any(c.isspace() for c in node.text.decode()):
            return "a lone '$' that the parser and bash read differently"
        stack.extend(node.children)
    # Every character belongs to some token, except blanks and line continuations;
    # one the parser skipped (``\ ls``) means it read something other than bash did.
    index = 0
    while index < len(source):
        byte = source[index]
        if covered[index] or byte in b" \t\n":
            index += 1
        elif byte == 0x5C and source[index + 1 : index + 2] == b"\n":
            index += 2
        else:
            return "characters the parser skipped, which bash would read"
    return None


def _has_missing(node: Any) -> bool:
    if node.is_missing:
        return True
    return any(_has_missing(child) for child in node.children)


def _descendants(node: Any, types: tuple[str, ...]) -> list[Any]:
    found: list[Any] = []
    stack = list(node.children)
    while stack:
        child = stack.pop()
        if child.type in types:
            found.append(child)
        stack.extend(child.children)
    return found


def _mentions_variables(node: Any) -> bool:
    return bool(_descendants(node, ("variable_name", "simple_expansion", "expansion", "word", "command_substitution", "subscript")))


def _glob_escape(text: str) -> str:
    return re.sub(r"([*?\[])", r"[\1]", text)


def _dquote_unescape(text: str) -> str:
    return re.sub(r"\\([$`\"\\\n])", lambda m: "" if m.group(1) == "\n" else m.group(1), text)


_ANSI = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}


def _ansi_c(body: str) -> str | None:
    """Decode the inside of ``$'…'``; None when it uses an escape this does not know."""
    out: list[str] = []
    index = 0
    while index < len(body):
        char = body[index]
        if char != "\\":
            out.append(char)
            index += 1
            continue
        following = body[index + 1 : index + 2]
        if following in _ANSI:
            out.append(_ANSI[following])
            index += 2
            continue
        match = re.match(r"x([0-9a-fA-F]{1,2})|u([0-9a-fA-F]{1,4})|U([0-9a-fA-F]{1,8})|([0-7]{1,3})", body[index + 1 :])
        if not match:
            return None
        digits = next(g for g in match.groups() if g)
        base = 8 if match.group(4) else 16
        out.append(chr(int(digits, base)))
        index += 1 + match.end()
    return "".join(out)
