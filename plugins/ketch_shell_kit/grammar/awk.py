"""Does an awk program name a file, run a command, or change which files awk reads?

awk picks files by more than its operands: a program can assign ``ARGV``/``ARGC``
(awk then reads whatever it put there), read with ``getline < FILE``, run commands
(``system()``, ``CMD | getline``, ``print | CMD``), write with ``print > FILE``, pull in
code (``@include``, ``@load``) or call a function by name (``@f()``, which may be
``system``). So an awk program is proven read-only only when it is *parsed* and provably
does none of that.

No maintained, permissively licensed awk parser is packaged for Python (there is no
tree-sitter awk grammar on PyPI that loads offline), so this is a small recursive
descent parser for the POSIX awk grammar (IEEE Std 1003.1, "awk", Grammar), with the
gawk/mawk/busybox extensions that matter here recognised and refused. It is
conservative in every place where awks differ or the text is ambiguous:

* anything it cannot parse is not proven (the command asks);
* ``/`` after ``length`` or ``getline`` (division or a regular expression, depending on
  the awk) is refused, and so is a ``/`` inside a bracket expression of a regular
  expression literal (``/[/]/`` ends at different places in different awks);
* every ``|`` (pipes to and from commands, gawk's ``|&``) names a command;
* in ``print``/``printf``, a ``>`` outside parentheses is a redirection;
* ``ARGV``/``ARGC`` as the target of any assignment (``=``, ``+=``, ``++``, ``getline``,
  ``sub``/``gsub``, ``split``, ``for (ARGV[1] in a)``, ``delete``) or ``ARGV`` passed
  whole to a function (arrays go by reference); ``SYMTAB`` at all (gawk's indirect
  access to every variable, ``ARGV`` included);
* ``system``, ``close``, ``bindtextdomain``/``dcgettext`` (which read message
  catalogs from a directory the program names), ``@`` anything, ``switch`` (gawk only).

``ENVIRON`` is allowed: reading it is ``printenv``, and the shell's environment is an
allow-list (nothing secret is in it); assigning it changes only the environment of
commands the program runs, which it cannot.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

KEYWORDS = frozenset(
    {"BEGIN", "END", "BEGINFILE", "ENDFILE", "function", "func", "if", "else", "while", "for", "do", "break",
     "continue", "next", "nextfile", "exit", "return", "delete", "in", "getline", "print", "printf", "switch",
     "case", "default"}
)  # fmt: skip
# Built-in functions (POSIX, gawk, mawk, busybox): calls only, never values, except length.
BUILTINS = frozenset(
    {"length", "substr", "index", "split", "sub", "gsub", "match", "sprintf", "sin", "cos", "atan2", "exp", "log",
     "sqrt", "int", "rand", "srand", "tolower", "toupper", "system", "close", "fflush", "gensub", "patsplit",
     "asort", "asorti", "strftime", "systime", "mktime", "and", "or", "xor", "lshift", "rshift", "compl", "isarray",
     "typeof", "strtonum", "bindtextdomain", "dcgettext", "dcngettext", "mkbool"}
)  # fmt: skip
RUNS_OR_OPENS = {
    "system": "runs a command (system)",
    "close": "closes a file or command the program opened (close)",
    "bindtextdomain": "reads message catalogs from a directory it names (bindtextdomain)",
    "dcgettext": "reads message catalogs (dcgettext)",
    "dcngettext": "reads message catalogs (dcngettext)",
}
# Built-ins that assign to an argument: (function, index of the assigned argument).
ASSIGNS_ARGUMENT = {
    "sub": 2,
    "gsub": 2,
    "split": 1,
    "patsplit": 1,
    "match": 2,
    "asort": 1,
    "asorti": 1,
}
FILE_SELECTORS = frozenset({"ARGV", "ARGC"})
ASSIGN_OPS = frozenset({"=", "+=", "-=", "*=", "/=", "%=", "^=", "**="})
STANDARD_STREAMS = frozenset({'"/dev/stdout"', '"/dev/stderr"'})
_AMBIGUOUS_BEFORE_SLASH = frozenset({"length", "getline"})

_NUMBER = re.compile(r"0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_OPERATORS = sorted(
    [
        "**=",
        "+=",
        "-=",
        "*=",
        "/=",
        "%=",
        "^=",
        "**",
        "++",
        "--",
        "&&",
        "||",
        "==",
        "!=",
        "<=",
        ">=",
        "!~",
        ">>",
        "|&",
        ">",
        "<",
        "|",
        "!",
        "~",
        "?",
        ":",
        ",",
        ";",
        "{",
        "}",
        "(",
        ")",
        "[",
        "]",
        "$",
        "+",
        "-",
        "*",
        "/",
        "%",
        "^",
        "=",
    ],
    key=len,
    reverse=True,
)
# After these, a newline is not a terminator (POSIX: newline_opt).
_CONTINUES = frozenset({",", "{", "&&", "||", "do", "else"})


class AwkError(ValueError):
    """The program cannot be read (or is read differently by different awks)."""


@dataclass(frozen=True)
class Token:
    kind: str  # name | keyword | builtin | number | string | regex | op | newline | end
    text: str
    offset: int


def tokenize(source: str) -> list[Token]:
    if "\x00" in source:
        raise AwkError("a NUL byte in the program")
    tokens: list[Token] = []
    index, length = 0, len(source)

    def regex_allowed() -> bool:
        for token in reversed(tokens):
            if token.kind == "newline":
                return True
            if token.kind in ("name", "number", "string", "regex"):
                return False
            if token.kind == "builtin" and token.text in _AMBIGUOUS_BEFORE_SLASH:
                raise AwkError(
                    f"'/' after {token.text}: division or a regular expression, depending on the awk"
                )
            if token.kind == "keyword" and token.text == "getline":
                raise AwkError(
                    "'/' after getline: division or a regular expression, depending on the awk"
                )
            return not (token.kind == "op" and token.text in (")", "]", "$", "++", "--"))
        return True

    while index < length:
        char = source[index]
        if char in " \t\r":
            index += 1
            continue
        if char == "\\" and source.startswith("\\\n", index):
            index += 2
            continue
        if char == "\\" and source.startswith("\\\r\n", index):
            index += 3
            continue
        if char == "#":
            while index < length and source[index] != "\n":
                index += 1
            continue
        if char == "\n":
            if tokens and not (tokens[-1].kind == "newline" or tokens[-1].text in _CONTINUES):
                tokens.append(Token("newline", "\n", index))
            index += 1
            continue
        if char == '"':
            end = index + 1
            while True:
                if end >= length or source[end] == "\n":
                    raise AwkError("an unterminated string")
                if source[end] == "\\":
                    end += 2
                    continue
                if source[end] == '"':
                    break
                end += 1
            tokens.append(Token("string", source[index : end + 1], index))
            index = end + 1
            continue
        if char == "/" and regex_allowed():
            end = index + 1
            bracket = False
            while True:
                if end >= length or source[end] == "\n":
                    raise AwkError("an unterminated regular expression")
                current = source[end]
                if current == "\\":
                    end += 2
                    continue
                if bracket:
                    if current == "/":
                        raise AwkError(
                            "a '/' inside a bracket expression (awks end the regular expression at different places)"
                        )
                    if current == "]" and source[end - 1] not in "[^":
                        bracket = False
                elif current == "[":
                    bracket = True
                    if source.startswith("[^]", end) or source.startswith("[]", end):
                        end += 2 if source[end + 1] == "]" else 3
                        continue
                elif current == "/":
                    break
                end += 1
            tokens.append(Token("regex", source[index : end + 1], index))
            index = end + 1
            continue
        if char.isdigit() or (char == "." and source[index + 1 : index + 2].isdigit()):
            match = _NUMBER.match(source, index)
            assert match is not None
            tokens.append(Token("number", match.group(), index))
            index = match.end()
            continue
        match = _NAME.match(source, index)
        if match:
            word = match.group()
            kind = "keyword" if word in KEYWORDS else "builtin" if word in BUILTINS else "name"
            tokens.append(Token(kind, word, index))
            index = match.end()
            continue
        if char == "@":
            raise AwkError("'@' (gawk's @include, @load, @namespace or an indirect function call)")
        for operator in _OPERATORS:
            if source.startswith(operator, index):
                tokens.append(Token("op", operator, index))
                index += len(operator)
                break
        else:
            raise AwkError(f"a character awk does not read here ({char!r})")
    tokens.append(Token("end", "", length))
    return tokens


class Parser:
    """The POSIX grammar, recording what the program does beyond reading its input."""

    def __init__(self, source: str) -> None:
        self.tokens = tokenize(source)
        self.position = 0
        self.problems: list[str] = []
        self.print_depth: int | None = None  # paren depth inside a print statement
        self.depth = 0
        self.nesting = 0

    # --- tokens ------------------------------------------------------------------------------

    @property
    def token(self) -> Token:
        return self.tokens[self.position]

    def peek(self, ahead: int = 1) -> Token:
        return self.tokens[min(self.position + ahead, len(self.tokens) - 1)]

    def at(self, *texts: str) -> bool:
        return self.token.kind in ("op", "keyword", "newline") and self.token.text in texts

    def take(self, *texts: str) -> Token:
        token = self.token
        if texts and not self.at(*texts):
            raise AwkError(
                f"expected {' or '.join(texts)!r} at {token.text!r} (offset {token.offset})"
            )
        self.position += 1
        return token

    def newlines(self) -> None:
        while self.token.kind == "newline":
            self.position += 1

    def terminators(self) -> None:
        while self.token.kind == "newline" or self.at(";"):
            self.position += 1

    def problem(self, why: str) -> None:
        if why not in self.problems:
            self.problems.append(why)

    def deeper(self) -> None:
        self.nesting += 1
        if self.nesting > 200:
            raise AwkError("nested too deeply")

    # --- program -----------------------------------------------------------------------------

    def program(self) -> list[str]:
        self.terminators()
        while self.token.kind != "end":
            self.item()
            self.terminators()
        return self.problems

    def item(self) -> None:
        if self.at("function", "func"):
            self.take()
            if self.token.kind not in ("name", "builtin"):
                raise AwkError("a function without a name")
            self.position += 1
            self.take("(")
            while not self.at(")"):
                if self.token.kind != "name":
                    raise AwkError("a function parameter that is not a name")
                if self.token.text in FILE_SELECTORS or self.token.text == "SYMTAB":
                    self.problem(f"a function parameter named {self.token.text}")
                self.position += 1
                if self.at(","):
                    self.take()
                    self.newlines()
            self.take(")")
            self.newlines()
            self.block()
            return
        if self.at("BEGIN", "END", "BEGINFILE", "ENDFILE"):
            self.take()
            self.newlines()
            self.block()
            return
        if self.at("{"):
            self.block()
            return
        self.expression()
        if self.at(","):
            self.take()
            self.newlines()
            self.expression()
        if self.at("{"):
            self.block()

    def block(self) -> None:
        self.deeper()
        self.take("{")
        self.terminators()
        while not self.at("}"):
            if self.token.kind == "end":
                raise AwkError("an unterminated block")
            self.statement()
            self.terminators()
        self.take("}")
        self.nesting -= 1

    # --- statements --------------------------------------------------------------------------

    def statement(self) -> None:
        self.deeper()
        try:
            self._statement()
        finally:
            self.nesting -= 1

    def _end_simple(self) -> None:
        if self.at(";") or self.token.kind == "newline":
            self.position += 1
        elif not self.at("}") and self.token.kind != "end":
            raise AwkError(
                f"unexpected {self.token.text!r} after a statement (offset {self.token.offset})"
            )

    def _statement(self) -> None:  # noqa: C901 - one branch per statement
        token = self.token
        if self.at("{"):
            self.block()
        elif self.at(";"):
            self.take()
        elif self.at("if"):
            self.take()
            self.parenthesised()
            self.newlines()
            self.statement_or_empty()
            save = self.position
            self.terminators()
            if self.at("else"):
                self.take()
                self.newlines()
                self.statement_or_empty()
            else:
                self.position = save
        elif self.at("while"):
            self.take()
            self.parenthesised()
            if self.at(";"):
                self.take()
                return
            self.newlines()
            self.statement_or_empty()
        elif self.at("do"):
            self.take()
            self.newlines()
            self.statement_or_empty()
            self.terminators()
            self.take("while")
            self.parenthesised()
            self._end_simple()
        elif self.at("for"):
            self._for()
        elif self.at("switch", "case", "default"):
            raise AwkError("switch (a gawk extension ketch does not read)")
        elif self.at("break", "continue", "next", "nextfile"):
            self.take()
            self._end_simple()
        elif self.at("exit", "return"):
            self.take()
            if not (self.at(";", "}") or token.kind == "end" or self.token.kind == "newline"):
                self.expression()
            self._end_simple()
        else:
            self.simple_statement()
            self._end_simple()

    def statement_or_empty(self) -> None:
        if self.at(";"):
            self.take()
            return
        self.statement()

    def parenthesised(self) -> None:
        self.take("(")
        self.newlines()
        self.expression()
        self.newlines()
        self.take(")")

    def _for(self) -> None:
        self.take("for")
        self.take("(")
        # for (NAME in ARRAY) / for ((NAME) in ARRAY)
        save = self.position
        name = self.token
        if name.kind == "name" and self.peek().text == "in" and self.peek().kind == "keyword":
            self.position += 2
            if self.token.kind != "name":
                self.position = save
            else:
                self.assigned(name.text, "the variable of for (... in ...)")
                self.position += 1
                if self.at(")"):
                    self.take(")")
                    self.newlines()
                    self.statement_or_empty()
                    return
                self.position = save
        if not self.at(";"):
            self.simple_statement()
        self.take(";")
        self.newlines()
        if not self.at(";"):
            self.expression()
        self.take(";")
        self.newlines()
        if not self.at(")"):
            self.simple_statement()
        self.take(")")
        self.newlines()
        self.statement_or_empty()

    def simple_statement(self) -> None:
        if self.at("print", "printf"):
            self._print()
        elif self.at("delete"):
            self.take()
            if self.token.kind != "name":
                raise AwkError("delete without an array name")
            self.assigned(self.token.text, "delete")
            self.position += 1
            if self.at("["):
                self.subscript()
        else:
            self.expression()

    def _print(self) -> None:
        keyword = self.take().text
        outer = self.print_depth
        self.print_depth = self.depth
        try:
            if not (self.at(";", "}", ">", ">>", "|") or self.token.kind in ("newline", "end")):
                self.expression_list()
        finally:
            self.print_depth = outer
        if self.at(">", ">>", "|", "|&"):
            operator = self.take().text
            target = self.token
            if (
                operator in (">", ">>")
                and target.kind == "string"
                and target.text in STANDARD_STREAMS
            ):
                self.position += 1  # awk writes these to its own standard output or error
                return
            kind = "a command" if operator.startswith("|") else "a file"
            self.problem(f"{keyword} {operator} sends output to {kind}")
            self.concatenation()

    def expression_list(self) -> None:
        self.expression()
        while self.at(","):
            self.take()
            self.newlines()
            self.expression()

    # --- expressions (lowest precedence first) ----------------------------------------------------

    def expression(self) -> None:
        self.deeper()
        try:
            self.ternary()
        finally:
            self.nesting -= 1

    def ternary(self) -> None:
        target = self.or_()
        if self.at(*ASSIGN_OPS):
            if target is None:
                raise AwkError("an assignment to something that is not a variable")
            self.assigned(target, "an assignment")
            self.take()
            self.newlines()
            self.ternary()
            return
        if self.at("?"):
            self.take()
            self.newlines()
            self.ternary()
            self.newlines()
            self.take(":")
            self.newlines()
            self.ternary()

    def or_(self) -> str | None:
        target = self.and_()
        while self.at("||"):
            self.take()
            self.newlines()
            self.and_()
            target = None
        return target

    def and_(self) -> str | None:
        target = self.membership()
        while self.at("&&"):
            self.take()
            self.newlines()
            self.membership()
            target = None
        return target

    def membership(self) -> str | None:
        target = self.matching()
        while self.at("in") and self.token.kind == "keyword":
            self.take()
            if self.token.kind != "name":
                raise AwkError("'in' without an array name")
            self.position += 1
            target = None
        return target

    def matching(self) -> str | None:
        target = self.comparison()
        while self.at("~", "!~"):
            self.take()
            self.comparison()
            target = None
        return target

    def comparison(self) -> str | None:
        target = self.concatenation()
        operators = (
            ("<", "<=", "!=", "==", ">=")
            if self.print_depth == self.depth
            else ("<", "<=", "!=", "==", ">", ">=")
        )
        if self.at(*operators):
            self.take()
            self.concatenation()
            target = None
        return target

    def concatenation(self) -> str | None:
        target = self.additive()
        while True:
            if self.at("|", "|&"):
                operator = self.take().text
                if self.at("getline"):
                    self.problem(f"CMD {operator} getline runs a command")
                    self.take()
                    if self._starts_lvalue():
                        self.assigned(self.lvalue(), "getline")
                    target = None
                    continue
                if self.print_depth == self.depth:
                    self.position -= 1  # print ... | CMD: the statement reads it
                    return target
                raise AwkError(f"'{operator}' where awk expects getline")
            if self._starts_operand() and not self.at("in"):
                self.additive()
                target = None
                continue
            return target

    def _starts_operand(self) -> bool:
        token = self.token
        if token.kind in ("name", "builtin", "number", "string", "regex"):
            return True
        if token.kind == "keyword":
            return token.text == "getline"
        return token.kind == "op" and token.text in ("$", "!", "(", "-", "+", "++", "--")

    def additive(self) -> str | None:
        target = self.multiplicative()
        while self.at("+", "-"):
            self.take()
            self.multiplicative()
            target = None
        return target

    def multiplicative(self) -> str | None:
        target = self.unary()
        while self.at("*", "/", "%"):
            self.take()
            self.unary()
            target = None
        return target

    def unary(self) -> str | None:
        if self.at("!", "-", "+"):
            self.take()
            self.unary()
            return None
        return self.power()

    def power(self) -> str | None:
        target = self.postfix()
        if self.at("^", "**"):
            self.take()
            self.unary()  # right associative, and -x binds: 2^-1
            return None
        return target

    def postfix(self) -> str | None:
        if self.at("++", "--"):
            self.take()
            self.assigned(self.lvalue(), "++/--")
            return None
        target = self.primary()
        if target is not None and self.at("++", "--"):
            self.take()
            self.assigned(target, "++/--")
            return None
        return target

    def _starts_lvalue(self) -> bool:
        return self.token.kind == "name" or self.at("$")

    def lvalue(self) -> str:
        """NAME, NAME[...] or $expr; returns the variable's name ("$" for a field)."""
        if self.at("$"):
            self.take()
            self.field_operand()
            return "$"
        if self.token.kind != "name":
            raise AwkError(f"expected a variable at {self.token.text!r}")
        name = self.take().text
        self._used(name)
        if self.at("["):
            self.subscript()
        elif name in ("ARGV", "SYMTAB"):
            self._bare_array(name)
        return name

    def field_operand(self) -> None:
        if self.at("++", "--"):
            self.take()
            self.lvalue()
            return
        if self.at("-", "!", "+"):
            self.take()
            self.field_operand()
            return
        self.primary()

    def subscript(self) -> None:
        self.take("[")
        self.depth += 1
        self.newlines()
        self.expression_list()
        self.newlines()
        self.depth -= 1
        self.take("]")

    def _used(self, name: str) -> None:
        if name == "SYMTAB":
            self.problem("SYMTAB (gawk's access to every variable by name, ARGV included)")

    def _bare_array(self, name: str) -> None:
        """ARGV without a subscript: fine as the array of ``in`` and for length()."""
        previous = self.tokens[self.position - 2] if self.position >= 2 else None
        if previous is not None and previous.kind == "keyword" and previous.text == "in":
            return
        self.problem(f"the whole {name} array is passed on (a function can change it)")

    def assigned(self, name: str | None, how: str) -> None:
        if name in FILE_SELECTORS:
            self.problem(
                f"{name} is changed ({how}), so awk reads files the command line does not name"
            )
        elif name == "SYMTAB":
            self._used(name)

    def primary(self) -> str | None:  # noqa: C901 - one branch per operand
        token = self.token
        if token.kind in ("number", "string", "regex"):
            self.position += 1
            return None
        if self.at("$"):
            self.take()
            self.field_operand()
            return "$"
        if self.at("("):
            self.take()
            self.depth += 1
            self.newlines()
            self.expression_list()
            self.newlines()
            self.depth -= 1
            self.take(")")
            if self.at("in") and self.token.kind == "keyword":
                return None  # (i, j) in ARRAY: the membership rule reads it
            return None
        if self.at("getline"):
            self.take()
            if self._starts_lvalue():
                self.assigned(self.lvalue(), "getline")
            if self.at("<"):
                self.take()
                self.problem("getline < FILE reads a file the command line does not name")
                self.primary()
            return None
        if token.kind == "builtin":
            self.position += 1
            self.call(token.text, builtin=True)
            return None
        if token.kind == "name":
            self.position += 1
            if self.at("(") and self.tokens[self.position].offset == token.offset + len(token.text):
                self.call(token.text, builtin=False)
                return None
            self._used(token.text)
            if self.at("["):
                self.subscript()
                return token.text
            if token.text in ("ARGV", "SYMTAB"):
                self._bare_array(token.text)
            return token.text
        raise AwkError(f"unexpected {token.text!r} (offset {token.offset})")

    def call(self, name: str, *, builtin: bool) -> None:
        if name in RUNS_OR_OPENS:
            self.problem(RUNS_OR_OPENS[name])
        if not self.at("("):
            if name == "length":
                return None
            raise AwkError(f"{name} without its arguments")
        self.take("(")
        self.depth += 1
        self.newlines()
        index = 0
        while not self.at(")"):
            start = self.position
            if (
                self.token.kind == "name"
                and self.peek().text in (",", ")")
                and self.peek().kind == "op"
            ):
                argument = self.token.text
                self.position += 1
                self._used(argument)
                changes = argument == "ARGV" or (builtin and ASSIGNS_ARGUMENT.get(name) == index)
                if argument in FILE_SELECTORS and name != "length" and changes:
                    self.problem(f"{argument} is passed to {name}, which can change it")
            else:
                self.position = start
                target = self.expression_list_item()
                if builtin and ASSIGNS_ARGUMENT.get(name) == index:
                    self.assigned(target, name)
            index += 1
            self.newlines()
            if self.at(","):
                self.take()
                self.newlines()
            elif not self.at(")"):
                raise AwkError(f"unexpected {self.token.text!r} in the arguments of {name}")
        self.depth -= 1
        self.take(")")
        return None

    def expression_list_item(self) -> str | None:
        save = self.position
        self.expression()
        # The target of sub/gsub/split is a plain lvalue: re-read it to name it.
        end = self.position
        self.position = save
        try:
            if self._starts_lvalue():
                name = self.lvalue()
                if self.position == end:
                    return name
        except AwkError:
            pass
        self.position = end
        return None


def program_problems(source: str) -> list[str]:
    """Why an awk program is not proven to read only its input (empty: it is); a
    program that cannot be parsed gives one problem saying so."""
    try:
        return Parser(source).program()
    except AwkError as exc:
        return [f"the awk program is not understood: {exc}"]
    except RecursionError:
        return ["the awk program is nested too deeply"]
