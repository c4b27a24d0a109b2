"""Permission rules: ``TOOL`` or ``TOOL(SCOPE)``, parsed once, matched per access.

The same syntax serves ``[permissions] allow/ask/deny`` in config and the scopes an
"always allow" answer grants (see docs/permissions.md for the full table):

* ``shell(git status)`` -- exactly that command; ``shell(git diff:*)`` -- ``git diff``
  followed by anything; ``shell`` / ``shell(*)`` -- any command. A rule names a program
  and its leading arguments: shell syntax (``; & | < > ( ) $ `` ` ``) is refused.
* ``read(GLOB)``, ``write(GLOB)`` (``edit`` is the same as ``write``): a path glob;
  relative globs are relative to the workspace, ``~/`` is the home directory, ``*``
  stays inside one directory, ``**`` crosses them, a trailing ``/`` or a glob-free
  path also covers everything beneath it.
* ``web(HOST)``: an exact, parsed host (``docs.python.org``), or ``*.python.org`` for
  its subdomains; an optional ``:port`` must match too.
* Any other name is a tool name (``web_fetch``, ``write_file``, ``mcp__time__*``);
  its scope, if any, is read as a glob, a command prefix or a host depending on what
  each access is (path, command, URL).
* ``*``: every call.

Parsing and matching take time linear in the rule's length (globs run as an automaton,
never as a backtracking regex), and a rule over 4 KiB is refused: a hostile config
cannot stall startup.

Several rules can be joined with ``"; "`` in one scope string (an approval covering
a chained command); config entries are one rule each.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from urllib.parse import urlsplit

from ketch.api import SCOPE_SEPARATOR, Effect
from ketch_policy_kit.globs import compile_glob, match_name

MAX_RULE_BYTES = 4096

SHELL_NAMES = frozenset({"shell", "bash", "execute"})
READ_NAMES = frozenset({"read"})
WRITE_NAMES = frozenset({"write", "edit"})
WEB_NAMES = frozenset({"web", "network", "fetch"})
_NAME = re.compile(r"^[A-Za-z0-9_.*\-]+$")
_SHELL_META = re.compile(r"[;&|<>()`$\n\r\\]")
_LABEL_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-")


class RuleError(ValueError):
    """A rule that does not parse; the message says what is wrong, in one line."""


@dataclass(frozen=True)
class ShellPrefix:
    tokens: tuple[str, ...]  # empty: any command
    open_ended: bool  # ``:*``: more arguments may follow

    def matches(self, argv: tuple[str | None, ...], extra_args: bool, *, strict: bool) -> bool:
        """``strict`` (allow rules): every compared word must be known and equal, and the
        program must be named exactly. Otherwise (ask/deny rules) a word only known at
        run time counts as matching, and the program is compared by its base name."""
        if not self.tokens:
            return True
        if len(argv) < len(self.tokens):
            return False
        for index, token in enumerate(self.tokens):
            word = argv[index]
            if word is None:
                if strict:
                    return False
                continue
            if index == 0 and not strict:
                if os.path.basename(word) != os.path.basename(token):
                    return False
            elif word != token:
                return False
        if self.open_ended:
            return True
        if strict:
            return len(argv) == len(self.tokens) and not extra_args
        return True if extra_args else len(argv) == len(self.tokens) or any(w is None for w in argv)

    def __str__(self) -> str:
        text = " ".join(shlex.quote(t) for t in self.tokens)
        return (text + ":*" if self.open_ended and text else text) or "*"


@dataclass(frozen=True)
class PathGlob:
    pattern: str  # as written
    absolute: str | None  # the pattern made absolute; None: relative, joined per workspace
    relative: bool

    def matches(self, path: str, workspace: Path) -> bool:
        pattern = (
            self.absolute if not self.relative else os.path.join(_real(workspace), self.pattern)
        )
        assert pattern is not None
        return compile_glob(pattern).matches(path)


@lru_cache(maxsize=64)
def _real(workspace: Path) -> str:
    return os.path.realpath(workspace)


@dataclass(frozen=True)
class HostPattern:
    host: str  # lowercase, no trailing dot; "*.x" for subdomains
    port: int | None

    def matches(self, url: str, host: str | None) -> bool:
        parsed = parse_host(url)
        if parsed is None:
            return False
        name, port = parsed
        if host is not None and host.lower().rstrip(".") != name:
            return False  # the tool's idea of the host and the URL's disagree
        if self.port is not None and port != self.port:
            return False
        if self.host.startswith("*."):
            return name.endswith(self.host[1:]) and name != self.host[2:]
        return name == self.host


@dataclass(frozen=True)
class Rule:
    text: str
    kind: str  # any | tool | shell | read | write | web
    tool: str | None = None  # tool-name pattern for kind "tool"
    shell: ShellPrefix | None = None
    path: PathGlob | None = None
    host: HostPattern | None = None
    scoped: bool = False  # a tool rule with a scope

    def covers_tool(self, tool: str) -> bool:
        """A scope-less rule about the whole tool (or ``*``)."""
        if self.kind == "any":
            return True
        return (
            self.kind == "tool"
            and not self.scoped
            and self.tool is not None
            and match_name(tool, self.tool)
        )

    def matches_path(self, tool: str, effect: Effect, path: str, workspace: Path) -> bool:
        if (
            self.kind == "read"
            and effect == Effect.READ
            or self.kind == "write"
            and effect == Effect.WRITE
        ):
            return self.path is None or self.path.matches(path, workspace)
        if self.kind == "tool" and self.scoped and self.path is not None and self._tool(tool):
            return self.path.matches(path, workspace)
        return False

    def matches_command(
        self, tool: str, argv: tuple[str | None, ...], extra_args: bool, *, strict: bool
    ) -> bool:
        if self.kind == "shell":
            return self.shell is None or self.shell.matches(argv, extra_args, strict=strict)
        if self.kind == "tool" and self.scoped and self.shell is not None and self._tool(tool):
            return self.shell.matches(argv, extra_args, strict=strict)
        return False

    def matches_url(self, tool: str, url: str, host: str | None) -> bool:
        if self.kind == "web":
            return self.host is None or self.host.matches(url, host)
        if self.kind == "tool" and self.scoped and self.host is not None and self._tool(tool):
            return self.host.matches(url, host)
        return False

    def _tool(self, tool: str) -> bool:
        return self.tool is not None and match_name(tool, self.tool)


def parse_rule(text: str) -> Rule:
    """Parse one rule; raise RuleError with a one-line reason."""
    if not isinstance(text, str):
        raise RuleError(f"a rule is a string like 'shell(git status:*)', not {type(text).__name__}")
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_RULE_BYTES:
        raise RuleError(f"a rule of {size:,} bytes ('{text[:40]}...'); a rule may be at most 4 KiB")
    raw = text.strip()
    if not raw:
        raise RuleError("an empty rule")
    if raw == "*":
        return Rule(text=raw, kind="any")
    name, paren, rest = raw.partition("(")
    name = name.strip()
    if not _NAME.match(name):
        raise RuleError(f"'{raw}': '{name}' is not a tool name (letters, digits, _ . - and *)")
    scope: str | None = None
    if paren:
        if not rest.endswith(")"):
            raise RuleError(f"'{raw}': missing the closing ')'")
        scope = rest[:-1].strip()
        if not scope:
            raise RuleError(f"'{raw}': empty scope; write '{name}' for every call or give a scope")
    lowered = name.lower()
    if lowered in SHELL_NAMES:
        return Rule(
            text=raw, kind="shell", shell=_shell(raw, scope) if scope not in (None, "*") else None
        )
    if lowered in READ_NAMES or lowered in WRITE_NAMES:
        kind = "read" if lowered in READ_NAMES else "write"
        return Rule(
            text=raw, kind=kind, path=_path(raw, scope) if scope not in (None, "**") else None
        )
    if lowered in WEB_NAMES:
        return Rule(
            text=raw, kind="web", host=_host(raw, scope) if scope not in (None, "*") else None
        )
    if scope is None:
        return Rule(text=raw, kind="tool", tool=name)
    # A tool's own scope: a glob, a command prefix or a host, whichever each access needs.
    path = _path(raw, scope)
    try:
        shell: ShellPrefix | None = _shell(raw, scope)
    except RuleError:
        shell = None
    try:
        host: HostPattern | None = _host(raw, scope)
    except RuleError:
        host = None
    return Rule(text=raw, kind="tool", tool=name, shell=shell, path=path, host=host, scoped=True)


def _shell(raw: str, scope: str | None) -> ShellPrefix:
    assert scope is not None
    open_ended = False
    body = scope
    if body.endswith(":*") or body.endswith(" *"):
        body, open_ended = body[:-2].rstrip(), True
    if _SHELL_META.search(body):
        raise RuleError(
            f"'{raw}': a shell rule is a program and its leading arguments; it cannot contain shell syntax (; & | < > ( ) $ ` \\)"
        )
    try:
        tokens = tuple(shlex.split(body))
    except ValueError as exc:
        raise RuleError(f"'{raw}': {exc}") from None
    if not tokens:
        raise RuleError(f"'{raw}': no program named; write 'shell(*)' for any command")
    if any("*" in t for t in tokens):
        raise RuleError(f"'{raw}': '*' is only allowed at the end, as ':*' (any further arguments)")
    return ShellPrefix(tokens=tokens, open_ended=open_ended)


def _path(raw: str, scope: str | None) -> PathGlob:
    assert scope is not None
    if "\x00" in scope:
        raise RuleError(f"'{raw}': a NUL character in a path")
    pattern = scope
    if pattern.startswith("~/") or pattern == "~":
        pattern = str(Path.home()) + pattern[1:]
    relative = not pattern.startswith("/")
    if pattern.startswith("./"):
        pattern = pattern[2:]
    if relative:
        return PathGlob(pattern=pattern, absolute=None, relative=True)
    return PathGlob(pattern=pattern, absolute=pattern, relative=False)


def _host(raw: str, scope: str | None) -> HostPattern:
    assert scope is not None
    text = scope.strip().lower().rstrip(".")
    if "://" in text or "/" in text:
        raise RuleError(f"'{raw}': a web rule names a host (docs.python.org), not a URL")
    try:
        text = ".".join(
            label.encode("idna").decode("ascii") if label != "*" else label
            for label in text.split(":")[0].split(".")
        ) + (":" + text.split(":", 1)[1] if ":" in text else "")
    except UnicodeError:
        raise RuleError(f"'{raw}': '{scope}' is not a valid host name") from None
    if not _valid_host(text):
        raise RuleError(
            f"'{raw}': '{scope}' is not a host name (use 'example.com' or '*.example.com', optionally ':port')"
        )
    host, _, port = text.partition(":")
    return HostPattern(host=host, port=int(port) if port else None)


def _valid_host(text: str) -> bool:
    """``name(.name)*`` with an optional leading ``*.`` and ``:port``; checked label by
    label (a backtracking regex here was quadratic on long hostile input)."""
    host, colon, port = text.partition(":")
    if colon and not (1 <= len(port) <= 5 and port.isdigit()):
        return False
    if host.startswith("*."):
        host = host[2:]
    labels = host.split(".")
    for label in labels:
        if not label or label[0] == "-" or label[-1] == "-" or not set(label) <= _LABEL_CHARS:
            return False
    return True


def parse_host(url: str) -> tuple[str, int | None] | None:
    """The URL's host (canonical: lowercase, IDNA, no trailing dot, an IPv4 address in
    dotted form however it was spelled) and port; None when odd."""
    if any(ord(c) < 0x21 or ord(c) == 0x7F for c in url):
        return None  # NUL, spaces, control characters: never a clean match
    try:
        parts = urlsplit(url)
        host = parts.hostname
        port = parts.port
    except ValueError:
        return None
    if not host:
        return None
    from ketch_net_kit.hosts import BadHost, canonical_host

    try:  # the network's one canonical form: IDNA, case, trailing dot, IPv4 in any spelling
        return canonical_host(host).name, port
    except BadHost:
        return None


@dataclass(frozen=True)
class RuleSet:
    """Parsed rules by decision, plus the entries that did not parse."""

    allow: tuple[Rule, ...] = ()
    ask: tuple[Rule, ...] = ()
    deny: tuple[Rule, ...] = ()
    errors: tuple[str, ...] = ()
    broken_restrictions: tuple[str, ...] = ()  # malformed ask/deny entries


@lru_cache(maxsize=64)
def compile_rules(allow: tuple[str, ...], ask: tuple[str, ...], deny: tuple[str, ...]) -> RuleSet:
    parsed: dict[str, list[Rule]] = {"allow": [], "ask": [], "deny": []}
    errors: list[str] = []
    broken: list[str] = []
    for decision, entries in (("allow", allow), ("ask", ask), ("deny", deny)):
        for index, entry in enumerate(entries):
            try:
                parsed[decision].append(parse_rule(entry))
            except RuleError as exc:
                message = f"[permissions] {decision}[{index}]: {exc}"
                errors.append(message)
                if decision != "allow":
                    broken.append(message)
    return RuleSet(
        allow=tuple(parsed["allow"]),
        ask=tuple(parsed["ask"]),
        deny=tuple(parsed["deny"]),
        errors=tuple(errors),
        broken_restrictions=tuple(broken),
    )


@lru_cache(maxsize=256)
def compile_scopes(scopes: tuple[str, ...]) -> tuple[Rule, ...]:
    """Approval scopes (each possibly several rules joined by '; ') as rules."""
    rules: list[Rule] = []
    for scope in scopes:
        for piece in split_scope(scope):
            try:
                rules.append(parse_rule(piece))
            except RuleError:
                continue  # an approval we cannot read grants nothing
    return tuple(rules)


def split_scope(scope: str) -> list[str]:
    return [piece for piece in scope.split(SCOPE_SEPARATOR) if piece.strip()]


def rules_of(snapshot_rules: dict[str, tuple[str, ...]]) -> RuleSet:
    return compile_rules(
        tuple(snapshot_rules.get("allow", ())),
        tuple(snapshot_rules.get("ask", ())),
        tuple(snapshot_rules.get("deny", ())),
    )
