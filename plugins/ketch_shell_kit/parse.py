"""Walking a bash syntax tree (tree-sitter-bash) into simple commands.

The walk is explicit: every node type of the grammar is either handled here or makes
the command *not understood* (a problem), and a final self-check confirms that every
command node in the tree was visited. Words are evaluated as bash would (quotes
removed, escapes applied, ``~`` expanded, globs kept as patterns); a word whose value
bash only knows at run time is ``Word(value=None)``. What a simple command *does* is
not decided here: each one goes to :mod:`ketch_shell_kit.interpret`, which reads it
against the grammar table (and may call back for a nested script, ``bash -c``).

Where tree-sitter-bash reads text differently from bash (found by running both, see
tests/policy/test_policy_bash_differential.py), the difference is refused as a
problem rather than guessed at.
"""

from __future__ import annotations

import os
import re
import threading
import unicodedata
from pathlib import Path
from typing import Any

from ketch_shell_kit.model import Analysis, Command, Redirect
from ketch_shell_kit.words import Word, ansi_c, dquote_unescape, dynamic, glob_escape, literal

MAX_DEPTH = 6  # nested bash -c / eval / sudo / env ... chains
MAX_LENGTH = 32_000  # characters of command line
PROCESS_SUBSTITUTION_PATH = "/dev/fd/63"

# Variables whose value changes what a later command means, which program runs, or
# what a path means. Assigning one (anywhere, in any form) is never proven.
STEERING = frozenset(
    {"PATH", "IFS", "BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS", "PS4", "PS1", "PS2", "PS0", "PROMPT_COMMAND", "GLOBIGNORE",
     "CDPATH", "HOME", "BASH_CMDS", "BASH_ALIASES", "BASH_LOADABLES_PATH", "BASH_XTRACEFD", "POSIXLY_CORRECT", "TMPDIR",
     "PWD", "OLDPWD", "EXECIGNORE", "FIGNORE", "HISTFILE", "INPUTRC", "MAIL", "MAILPATH", "TIMEFORMAT", "BASH_COMPAT",
     "FUNCNEST", "TEXTDOMAIN", "TEXTDOMAINDIR", "OPTIND", "OPTARG", "SHELL", "EDITOR", "VISUAL", "PAGER", "MANPAGER", "LESSOPEN", "LESSCLOSE", "BROWSER",
     "GIT_DIR", "GIT_WORK_TREE", "GIT_CONFIG", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_CONFIG_COUNT",
     "GIT_EXEC_PATH", "GIT_PAGER", "GIT_EDITOR", "GIT_SSH", "GIT_SSH_COMMAND", "GIT_EXTERNAL_DIFF", "GIT_ASKPASS",
     "RIPGREP_CONFIG_PATH", "PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME", "NODE_OPTIONS", "PERL5OPT", "PERL5LIB",
     "RUBYOPT", "XDG_CONFIG_HOME", "SUDO_ASKPASS", "TAR_OPTIONS", "GREP_OPTIONS", "ZDOTDIR", "TERMINFO", "LOCPATH",
     "GCONV_PATH", "HOSTALIASES", "RESOLV_HOST_CONF", "NLSPATH", "MANPATH", "GZIP", "XZ_OPT", "ZSTD_NBTHREADS",
     "BZIP2", "SSH_AUTH_SOCK", "DISPLAY", "WAYLAND_DISPLAY", "DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR"}
)  # fmt: skip
STEERING_PREFIXES = ("LD_", "DYLD_", "GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_", "BASH_FUNC_", "LC_")
# Locale variables are safe to *set* to plain values, but LOCPATH is steering.
SAFE_PREFIXED = ("LC_",)
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

RESERVED_WORDS = frozenset(
    {"do", "done", "then", "fi", "elif", "else", "esac", "in", "if", "for", "while", "until", "case", "select", "function",
     "{", "}", "!", "[[", "]]"}
)  # fmt: skip


def steering(name: str) -> bool:
    """Setting this variable can change which program runs or what a later word means."""
    if name in STEERING:
        return True
    return name.startswith(STEERING_PREFIXES) and not name.startswith(SAFE_PREFIXED)


def plain_name(text: str | None) -> bool:
    return text is not None and _NAME.match(text) is not None


_local = threading.local()


def parser() -> Any:
    found = getattr(_local, "parser", None)
    if found is None:
        import tree_sitter_bash
        from tree_sitter import Language, Parser

        found = Parser(Language(tree_sitter_bash.language()))
        _local.parser = found
    return found


_JOINED_LINES = re.compile(r"(?<=\S)\\\n(?=\S)")


def bad_characters(text: str) -> str | None:
    if _JOINED_LINES.search(text):
        # bash joins ``ls\<newline>ls`` into one word; tree-sitter-bash splits it.
        return "a line continuation inside a word, which the parser and bash read differently"
    for char in text:
        if char in "\n\t":
            continue
        if char == "\r":
            return "it contains a carriage return (\\r), which bash and a reader see differently"
        category = unicodedata.category(char)
        if category in ("Cc", "Cf", "Co", "Cs", "Cn", "Zl", "Zp") or (
            category == "Zs" and char != " "
        ):
            return f"it contains an invisible or control character (U+{ord(char):04X})"
    return None


_UNESCAPED = re.compile(r"\\.", re.S)
_ASSIGNMENT_TILDE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=(?:.*:)?~")
_BRACE = re.compile(r"\{[^{}]*(,|\.\.)[^{}]*\}")
# Statement nodes whose named children are all statements.
_SEQUENCES = frozenset(
    {
        "program",
        "list",
        "compound_statement",
        "do_group",
        "else_clause",
        "elif_clause",
        "if_statement",
        "while_statement",
        "negated_command",
    }
)
# ``${name OP word}`` operators whose word is plain text to expand.
_EXPANSION_DEFAULTS = frozenset({":-", "-", ":+", "+", ":?", "?"})
_EXPANSION_ASSIGN = frozenset({":=", "="})
_EXPANSION_TRIM = frozenset({"#", "##", "%", "%%", "/", "//", "/#", "/%", "^", "^^", ",", ",,"})
# Words a case item's pattern may be.
_PATTERN_WORDS = frozenset(
    {
        "word",
        "extglob_pattern",
        "string",
        "raw_string",
        "concatenation",
        "number",
        "simple_expansion",
        "expansion",
    }
)


class Walker:
    """One analysis: the tree walk plus the state a line carries (cwds, nesting)."""

    def __init__(self, command: str, home: Path, workspace: Path | None) -> None:
        self.analysis = Analysis(command=command)
        self.home = home
        self.workspace = workspace
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
        bad = bad_characters(text)
        if bad:
            self.problem(bad)
            return
        if self.depth > MAX_DEPTH:
            self.problem(f"commands are nested more than {MAX_DEPTH} levels deep")
            return
        source = text.encode("utf-8", "surrogatepass")
        root = parser().parse(source).root_node
        if root.has_error or _has_missing(root):
            self.problem("it does not parse as a complete shell command")
            return
        odd = misread(root, source)
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
        if target is not None and (not target.static or target.value == "-" or not target.single):
            self.cwds = ()
            return
        found = list(self.cwds)
        for cwd in self.cwds:
            new = (
                self.home
                if target is None
                else Path(os.path.normpath(os.path.join(cwd, target.value or "")))
            )
            if new not in found:
                found.append(new)
        self.cwds = tuple(found)

    def isolated(self, node: Any) -> None:
        """Walk ``node`` in a subshell: its ``cd`` does not leak out."""
        saved = self.cwds
        self.statement(node)
        self.cwds = saved

    def isolated_children(self, node: Any) -> None:
        saved = self.cwds
        for child in node.named_children:
            self.statement(child)
        self.cwds = saved

    def add(self, command: Command) -> None:
        from dataclasses import replace

        self.analysis.parts.append(
            replace(
                command,
                wrappers=self.chain + command.wrappers,
                cwds=self.cwds,
                privileged=command.privileged or self.privileged,
            )
        )

    def nested(
        self, wrapper: list[Word] | tuple[Word, ...], *, privileged: bool = False
    ) -> _Nested:
        return _Nested(self, tuple(wrapper), privileged)

    # --- statements ------------------------------------------------------------------

    def statement(self, node: Any) -> None:  # noqa: C901 - one branch per node type
        kind = node.type
        if kind in _SEQUENCES:
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
        elif kind == "redirected_statement":
            self.redirected(node)
        elif kind == "command":
            self.command(node)
        elif kind == "variable_assignment":
            self.visited[-1].add((node.start_byte, node.end_byte))
            self.assignments_only([node])
        elif kind == "variable_assignments":
            self.assignments_only(list(node.named_children))
        elif kind == "declaration_command":
            self.declaration(node)
        elif kind == "unset_command":
            self.unset(node)
        elif kind == "for_statement":
            for child in node.named_children:
                name = child.type
                if name == "variable_name":
                    if steering(child.text.decode()):
                        self.problem(
                            f"a for loop assigns {child.text.decode()}, which steers later commands"
                        )
                    continue
                if name == "do_group":
                    self.statement(child)
                else:
                    self.word(child)
        elif kind == "case_statement":
            for child in node.named_children:
                if child.type == "case_item":
                    for item in child.named_children:
                        if item.type in _PATTERN_WORDS:
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
            self.problem(
                "it defines a shell function, which could hide what a later command name runs"
            )
        else:
            self.problem(f"it uses a shell construct the analyser does not handle ({kind})")

    def redirected(self, node: Any) -> None:
        body = node.child_by_field_name("body")
        trailing: list[Any] = []
        stdin_script = None
        for index, child in enumerate(node.children):
            field_name = node.field_name_for_child(index)
            if field_name == "redirect" or child.type.endswith("_redirect"):
                found = self.redirect(child, trailing)
                if found is not None:
                    stdin_script = found
            elif field_name != "body" and child.is_named and child.type != "comment":
                self.problem(f"an unexpected part of a redirected statement ({child.type})")
        if body is not None:
            if body.type == "command":
                self.command(body, stdin_script=stdin_script)
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
            return self.heredoc(node, trailing)
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
            else:
                self.problem(f"an unexpected part of a redirection ({child.type})")
        target = self.word(target_node) if target_node is not None else None
        if target_node is not None and target_node.type == "process_substitution":
            target = None  # a pipe to the commands inside, which are parts themselves
        if (
            op in (">&", "<&", ">&-", "<&-")
            and target is not None
            and target.static
            and ((target.value or "").isdigit() or target.value == "-")
        ):
            target = None  # fd duplication or closing, not a file
        elif op in (">&", "<&") and target is not None and not target.static:
            self.problem("a redirection target is only known at run time (a file or a descriptor)")
        self.analysis.redirects.append(Redirect(op=op, target=target, fd=fd, cwds=self.cwds))
        return None

    def heredoc(self, node: Any, trailing: list[Any]) -> str | None:
        quoted = False
        text_parts: list[str] = []
        dynamic_text = False
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
                    dynamic_text |= self.unparsed(text)
                    text_parts.append(text)
                for sub in child.named_children:
                    if sub.type == "heredoc_content":
                        text = sub.text.decode()
                        dynamic_text |= self.unparsed(text)
                        text_parts.append(text)
                    else:
                        if sub.type == "heredoc_redirect" or _descendants(
                            sub, ("heredoc_redirect",)
                        ):
                            # bash finds a nested heredoc's end by its own reading of the
                            # outer body, which the parser's tree does not follow
                            self.problem("a heredoc inside a heredoc's body")
                        self.word(sub)
                        dynamic_text = True
            elif ctype in ("<<", "<<-", "heredoc_end", "&&", "||", ";", "|", "|&", "&"):
                continue
            elif ctype.endswith("_redirect"):
                self.redirect(child, trailing)
            elif child.is_named:
                trailing.append(child)
            else:
                self.problem(f"an unexpected token after a heredoc ({ctype!r})")
        self.analysis.redirects.append(Redirect(op="<<", cwds=self.cwds))
        return None if dynamic_text else "".join(text_parts)

    def unparsed(self, text: str) -> bool:
        """Text the parser left plain but bash would expand: dynamic, and code if ``$(``."""
        plain = _UNESCAPED.sub("", text)
        if "$(" in plain or "`" in plain or "$[" in plain:
            self.problem("it has a command substitution the parser left as plain text")
        if "`" in text:
            self.problem(
                "it has an escaped backtick, which bash may read again as a command substitution"
            )
        return "$" in plain

    def arithmetic(self, node: Any) -> None:
        if _mentions_variables(node):
            self.problem("it does arithmetic on variables, which can run code hidden in them")
        for sub in _descendants(node, ("command_substitution", "process_substitution")):
            self.isolated_children(sub)

    def test_command(self, node: Any) -> None:
        ops = {c.text.decode() for c in _descendants(node, ("test_operator",))}
        if ops & {"-eq", "-ne", "-lt", "-le", "-gt", "-ge", "-v", "-R"} and _mentions_variables(
            node
        ):
            self.problem(
                "[[ ]] compares or names variables arithmetically, which can run code hidden in them"
            )
        if ops & {"-v", "-R"}:
            self.problem("[[ -v ]] evaluates an array subscript, which can run code")
        for child in node.named_children:
            self.test_operand(child)

    def test_operand(self, node: Any) -> None:
        if node.type in (
            "binary_expression",
            "unary_expression",
            "parenthesized_expression",
            "negation_expression",
        ):
            for child in node.named_children:
                self.test_operand(child)
        elif node.type == "test_operator":
            return
        elif node.type == "regex":
            self.unparsed(node.text.decode())  # bash expands $(…) even in a regex operand
        elif node.type in ("ternary_expression", "postfix_expression"):
            self.problem("arithmetic inside [[ ]], which can run code hidden in variables")
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
                argv.append(
                    Word(
                        value=None if value.value is None else f"{name}={value.value}",
                        source=child.text.decode(),
                    )
                )
            elif child.type == "variable_name":
                name = child.text.decode()
                self.check_variable(name)
                argv.append(literal(name))
            else:
                argv.append(self.word(child))
        from ketch_shell_kit.interpret import declaration

        declaration(self, tuple(argv), tuple(assignments))

    def unset(self, node: Any) -> None:
        self.visited[-1].add((node.start_byte, node.end_byte))
        words = tuple(self.word(c) for c in node.named_children)
        from ketch_shell_kit.interpret import declaration

        declaration(self, (literal("unset"), *words), ())

    def assignment(self, node: Any) -> tuple[str, Word]:
        name_node = node.child_by_field_name("name")
        value_node = node.child_by_field_name("value")
        if name_node is None:
            self.problem("an assignment without a name")
            return "", dynamic(node.text.decode())
        if name_node.type != "variable_name":
            self.problem(
                "it assigns to an array element, whose subscript is arithmetic that can run code"
            )
            for sub in _descendants(name_node, ("command_substitution",)):
                self.isolated_children(sub)
            return name_node.text.decode(), dynamic(node.text.decode())
        name = name_node.text.decode()
        self.check_variable(name)
        if any(c.type == "+=" for c in node.children):
            pass  # appending is assigning too; the name was checked
        if value_node is None:
            return name, literal("")
        if value_node.type == "array":
            for child in value_node.named_children:
                self.word(child)
            return name, dynamic(value_node.text.decode())
        return name, self.word(value_node)

    def check_variable(self, name: str) -> None:
        if name == "IFS":
            self.problem("it changes $IFS, which changes how every later word splits")
        elif steering(name):
            self.problem(f"it sets {name}, which changes which program a later command runs or how")

    def assignments_only(self, nodes: list[Any]) -> None:
        pairs = tuple(self.assignment(n) for n in nodes)
        self.add(Command(argv=(), assignments=pairs, kind="assignment", known=True))

    # --- words -----------------------------------------------------------------------

    def word(self, node: Any) -> Word:  # noqa: C901 - one branch per node type
        """Evaluate a word node; substitutions inside it are walked as commands."""
        kind = node.type
        source = node.text.decode()
        if kind == "word":
            return self.unquoted(source)
        if kind == "number":
            return Word(source, source)
        if kind == "variable_name":
            return Word(source, source)
        if kind == "raw_string":
            return Word(source[1:-1], source)
        if kind == "ansi_c_string":
            decoded = ansi_c(source[2:-1])
            return Word(decoded, source) if decoded is not None else dynamic(source, single=True)
        if kind == "translated_string":
            # ``$"..."`` is looked up in a message catalog (TEXTDOMAIN/TEXTDOMAINDIR): its
            # text at run time can be anything.
            self.double_quoted(node, source)
            return dynamic(source, single=True)
        if kind == "string":
            return self.double_quoted(node, source)
        if kind == "concatenation":
            return self.concatenation(node, source)
        if kind == "simple_expansion":
            if any(c.text.decode() == "IFS" for c in _descendants(node, ("variable_name",))):
                self.problem("it expands $IFS, which makes word splitting ambiguous")
            return dynamic(source)
        if kind == "expansion":
            self.expansion(node)
            return dynamic(source)
        if kind == "command_substitution":
            if source.startswith("`") and "\\" in source:
                self.problem(
                    "a backtick substitution with backslashes inside, which bash reads twice (nested commands)"
                )
            self.isolated_children(node)
            return dynamic(source)
        if kind == "process_substitution":
            self.isolated_children(node)
            return Word(PROCESS_SUBSTITUTION_PATH, source)  # what bash passes: a pipe's path
        if kind == "arithmetic_expansion":
            self.arithmetic(node)
            return dynamic(source)
        if kind == "brace_expression":
            return dynamic(source)
        if kind == "extglob_pattern":
            self.problem(
                "an extended glob pattern, which bash -c only reads with extglob set (and then differently)"
            )
            return dynamic(source)
        if kind == "command_name":
            inner = node.named_children
            if len(inner) != 1 or len(node.children) != 1:
                for child in inner:
                    self.word(child)  # still walk any substitution in it
                self.problem("a program name the analyser cannot read")
                return dynamic(source)
            return self.word(inner[0])
        self.problem(f"it uses a word form the analyser does not handle ({kind})")
        return dynamic(source)

    def double_quoted(self, node: Any, source: str) -> Word:
        # The value comes from the text between the quotes: tree-sitter-bash can put
        # characters into its quote tokens (``" "`` is ``"`` and `` "``).
        is_dynamic = False
        single = True
        for child in node.children:
            if not child.is_named:
                is_dynamic |= child.type not in ('"', '$"') or self.unparsed(child.text.decode())
            elif child.type == "string_content":
                is_dynamic |= self.unparsed(child.text.decode())
            else:
                text = child.text.decode()
                if text in ("$@", "${@}") or "[@]" in text or text.startswith("${!"):
                    single = False  # "$@" is any number of words, none included
                self.word(child)
                is_dynamic = True
        body = source[1:-1] if source.startswith('"') else source[2:-1]
        if is_dynamic:
            return dynamic(source, single=single)
        return Word(dquote_unescape(body), source)

    def concatenation(self, node: Any, source: str) -> Word:
        # Every piece is evaluated first, so substitutions anywhere in it are walked.
        # ``~`` only expands at the very start of a word, never inside ``x]~``.
        children = node.named_children
        words = [
            self.unquoted(c.text.decode(), tilde=i == 0) if c.type == "word" else self.word(c)
            for i, c in enumerate(children)
        ]
        if any(not c.is_named for c in node.children):
            return dynamic(source)  # a bare token inside a word (``a$``): not a plain word
        first = children[0].text.decode() if children and children[0].type == "word" else ""
        if first.startswith("~") and "/" not in first:
            return dynamic(source)  # ``~'x'``: a quoted tilde-prefix is not expanded; do not guess
        unquoted = "".join(
            w.source if c.type == "word" else "x" for w, c in zip(words, children, strict=True)
        )
        if any(w.value is None for w in words) or _BRACE.search(unquoted):
            # Unquoted pieces that expand may split the word; quoted ones cannot.
            single = all(
                w.single and (w.value is not None or c.type in ("string", "translated_string"))
                for w, c in zip(words, children, strict=True)
            )
            return dynamic(source, single=single and not _BRACE.search(unquoted))
        value = "".join(w.value or "" for w in words)
        has_glob = any(w.pattern is not None for w in words)
        if not has_glob:
            return Word(value, source)
        # Unquoted pieces keep their glob characters (``]`` closes a class opened in
        # another piece: ``.[[:alpha:]]nv``); quoted pieces match only themselves.
        pieces = [
            w.pattern
            if w.pattern is not None
            else _pattern_text(c.text.decode())
            if c.type == "word"
            else glob_escape(w.value or "")
            for w, c in zip(words, children, strict=True)
        ]
        return Word(value, source, "".join(pieces))

    def expansion(self, node: Any) -> None:
        """``${...}``: only the plain forms are followed; the rest bash evaluates in ways
        that can run code (``@P``, ``${!x}``, subscripts, substring arithmetic)."""
        tokens = [c for c in node.children if not c.is_named]
        operators = {t.type for t in tokens} - {"${", "}"}
        if "!" in operators and node.children[1].type == "!":
            self.problem("an indirect expansion (${!name}), whose target is only known at run time")
        if "@" in operators:
            self.problem("a ${name@...} transformation, which can expand prompts and run commands")
        if ":" in operators or operators & {"[", "]"}:
            self.problem(
                "a substring or subscript inside ${...}, which is arithmetic that can run code"
            )
        names = [c.text.decode() for c in node.named_children if c.type == "variable_name"]
        if operators & _EXPANSION_ASSIGN:
            for name in names:
                self.check_variable(name)
        if any(name == "IFS" for name in names):
            self.problem("it expands $IFS, which makes word splitting ambiguous")
        known = _EXPANSION_DEFAULTS | _EXPANSION_ASSIGN | _EXPANSION_TRIM | {"#", "!"}
        if operators - known - {"${", "}"}:
            self.problem(
                f"an expansion form the analyser does not follow ({node.text.decode()[:30]})"
            )
        for child in node.named_children:
            if child.type in ("variable_name", "special_variable_name"):
                continue
            if child.type == "regex":
                self.unparsed(child.text.decode())
            elif child.type == "subscript":
                self.problem(
                    "it expands an array element, whose subscript is arithmetic that can run code"
                )
                for sub in _descendants(child, ("command_substitution", "process_substitution")):
                    self.isolated_children(sub)
            else:
                self.word(child)

    def unquoted(self, source: str, *, tilde: bool = True) -> Word:
        if self.unparsed(source):
            return dynamic(source)
        if _BRACE.search(_UNESCAPED.sub("x", source)):
            return dynamic(source)  # brace expansion: several words
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
                pattern_chars.append(glob_escape(following))
                continue
            if char in " \t\n":
                # bash splits words here; tree-sitter-bash kept them together (``ls⏎\rm``).
                self.problem(
                    "a word the parser and bash split differently (unquoted whitespace inside it)"
                )
                return dynamic(source)
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
                return dynamic(
                    source, single=True
                )  # ~user, ~+, ~-: another user's home or a variable
            value = str(self.home) + slash + rest
            pattern = glob_escape(str(self.home)) + pattern[1:]
        if _ASSIGNMENT_TILDE.match(value):
            # ``if=~/x`` as an argument: bash expands a tilde after '=' (and ':') in a word
            # that looks like an assignment; do not guess where it points.
            return dynamic(source, single=True)
        return Word(value, source, pattern if has_glob else None)

    # --- commands ----------------------------------------------------------------------

    def command(self, node: Any, stdin_script: str | None = None) -> None:
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
                    self.problem(
                        f"'{child.text.decode()}' stands where bash expects a command (a syntax error in bash)"
                    )
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
                self.add(
                    Command(argv=(), assignments=tuple(assignments), kind="assignment", known=True)
                )
            return
        from ketch_shell_kit.interpret import run

        run(self, argv, tuple(assignments), stdin_script=stdin_script, direct=True)
        for statement in trailing:
            self.statement(statement)

    def check_word_boundaries(self, node: Any) -> None:
        """Two words of one command must be apart in the source. When they touch
        (``ls`ls`ls``), tree-sitter-bash split a word that bash keeps whole."""
        previous_end: int | None = None
        for index, child in enumerate(node.children):
            is_word = node.field_name_for_child(index) in ("name", "argument") or child.type in (
                "variable_assignment", "variable_name", "word", "concatenation", "string", "raw_string",
            )  # fmt: skip
            if not is_word:
                previous_end = None
                continue
            if previous_end is not None and child.start_byte == previous_end:
                self.problem("two words the parser separated but bash joins into one")
            previous_end = child.end_byte


def _pattern_text(source: str) -> str:
    """An unquoted word as glob text: backslash-escaped characters become literal."""
    out: list[str] = []
    index = 0
    while index < len(source):
        char = source[index]
        if char == "\\" and index + 1 < len(source):
            following = source[index + 1]
            out.append("" if following == "\n" else glob_escape(following))
            index += 2
            continue
        out.append(char)
        index += 1
    return "".join(out)


class _Nested:
    """Context: commands walked inside are run by ``wrapper`` (one level deeper)."""

    def __init__(self, walker: Walker, wrapper: tuple[Word, ...], privileged: bool) -> None:
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


_COMMAND_NODES = ("command", "declaration_command", "unset_command")
_KEYWORD_TOKENS = RESERVED_WORDS | {"select", "time"}
_METACHARACTERS = frozenset(b" \t\n|&;()<>")
# Symbols that are reserved words only in these statements (``{`` also opens ``x{1..3}``).
_SYMBOL_OWNERS = {
    "{": "compound_statement",
    "}": "compound_statement",
    "!": "negated_command",
    "[[": "test_command",
    "]]": "test_command",
}


def misread(root: Any, source: bytes) -> str | None:
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
        parent_type = node.parent.type if node.parent else ""
        if (
            not node.is_named
            and node.type in _KEYWORD_TOKENS
            and _SYMBOL_OWNERS.get(node.type, parent_type) == parent_type
        ):
            before = source[node.start_byte - 1] if node.start_byte > 0 else None
            after = source[node.end_byte] if node.end_byte < len(source) else None
            if (before is not None and before not in _METACHARACTERS) or (
                after is not None and after not in _METACHARACTERS
            ):
                return f"the reserved word '{node.type}' is joined to other characters, which the parser and bash read differently"
        if (
            node.type == "$"
            and not node.is_named
            and parent_type not in ("simple_expansion", "expansion")
        ):
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
    stack = [node]
    while stack:
        current = stack.pop()
        if current.is_missing:
            return True
        stack.extend(current.children)
    return False


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
    return bool(
        _descendants(
            node,
            (
                "variable_name",
                "simple_expansion",
                "expansion",
                "word",
                "command_substitution",
                "subscript",
            ),
        )
    )
