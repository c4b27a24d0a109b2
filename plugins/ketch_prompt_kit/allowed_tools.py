"""``allowed-tools`` of a command or skill, as a :class:`Narrowing` of the turn it starts.
In ketch it only *narrows*: the turn is offered those tools and no others (the kernel's
``run_turn(allowed_tools=...)``), and a scoped entry (``Bash(git status:*)``) refuses
other uses of that tool (a deny vote of the plugin, until the turn ends).
It never approves anything: the policy still decides, and asks, as in any turn (Claude
Code treats the same key as a pre-approval; ketch never lets a file widen authority).

Names are Claude Code's (``Bash``, ``Read``, ``Edit``, ...) or ketch's own tool names.
``Bash(git add:*)`` allows commands starting with ``git add``; ``Bash(npm test)``
exactly that command; ``Read(src/**)`` paths matching the glob (workspace-relative).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ketch_claude_kit.tool_names import ketch_names, split_list

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import ProposedCall, Session, Vote


@dataclass(frozen=True)
class Narrowing:
    """The tools one turn may use (``tools``), and ``check(name, input)``: None, or why a
    particular call is outside a scoped entry. ``source`` names where it comes from."""

    tools: frozenset[str]
    check: Callable[[str, dict[str, Any]], str | None] | None = None
    source: str = ""
    scoped: bool = False  # some entry narrows a tool to a scope (only a vote can enforce it)

    def refusal(self, name: str, data: dict[str, Any]) -> str | None:
        """Why this call may not run in this turn, or None."""
        if name not in self.tools:
            allowed = ", ".join(sorted(self.tools)) or "none"
            return f"'{name}' is not available in this turn ({self.source} allows only: {allowed})"
        return self.check(name, data) if self.check is not None else None


_ENTRY = re.compile(r"\s*([\w.*-]+)\s*(?:\((.*)\))?\s*$", re.DOTALL)
PATH_KEYS = ("path", "file_path")


def entries(value: Any) -> list[str]:
    """The entries of an ``allowed-tools`` value: a YAML list, or one string separated by
    commas or spaces outside parentheses."""
    return split_list(value)


def narrowing(value: Any, known: Iterable[str], source: str) -> tuple[Narrowing | None, list[str]]:
    """The narrowing for ``value`` (None when there is no ``allowed-tools`` at all), and the
    entries that name no loaded tool (they allow nothing)."""
    items = entries(value)
    if value is None:
        return None, []
    known_names = set(known)
    tools: set[str] = set()
    scopes: dict[str, list[str]] = {}  # tool -> its allowed scopes; absent = the whole tool
    unrestricted: set[str] = set()
    unknown: list[str] = []
    for item in items:
        match = _ENTRY.match(item)
        if match is None:
            unknown.append(item)
            continue
        name, scope = match.group(1), match.group(2)
        names = ketch_names(name, known_names, any_case=True)
        if not names:
            unknown.append(item)
            continue
        for tool in names:
            if tool == "shell_job" and scope:
                continue  # a scoped Bash entry allows those commands, not other jobs
            tools.add(tool)
            if scope:
                scopes.setdefault(tool, []).append(scope.strip())
            else:
                unrestricted.add(tool)

    def check(name: str, data: dict[str, Any]) -> str | None:
        if name in unrestricted or name not in scopes:
            return None
        allowed = scopes[name]
        subject = (
            str(data.get("command", ""))
            if "command" in data
            else next((str(data[k]) for k in PATH_KEYS if k in data), "")
        )
        if any(_matches(scope, subject, is_command="command" in data) for scope in allowed):
            return None
        return f"{source} allows {name} only for: {', '.join(allowed)}"

    return Narrowing(
        tools=frozenset(tools), check=check, source=source, scoped=bool(scopes)
    ), unknown


def unknown_note(source: str, unknown: list[str], loaded: Iterable[str]) -> str:
    """One line for the ``allowed-tools`` entries that name no loaded tool, each with why."""
    from ketch_claude_kit.tool_names import why_unmapped

    reasons = "; ".join(why_unmapped(e.split("(", 1)[0].strip(), loaded) for e in unknown)
    return f"{source}: allowed-tools: {reasons} (so they allow nothing)"


def _matches(scope: str, subject: str, *, is_command: bool) -> bool:
    if is_command:
        if scope.endswith(":*"):
            prefix = scope[:-2].strip()
            return subject == prefix or subject.startswith(prefix + " ")
        if scope.endswith("*"):
            return subject.startswith(scope[:-1])
        return subject.strip() == scope
    from ketch_policy_kit.globs import match_name

    return match_name(subject.lstrip("./"), scope.lstrip("./"))


# --- for the rest of a turn: kept in the session's state, enforced by a deny vote -------


def narrow_rest_of_turn(session: Session, key: str, source: str, value: Any) -> None:
    """Narrow what remains of this turn (or the next one, when no turn runs yet) to
    ``value``; the plugin owning ``key`` votes with :func:`narrowing_vote` and calls
    :func:`end_of_turn` when a turn ends. Kept as plain data (the state is saved)."""
    session.state.setdefault(key, {})["narrow"] = {"source": source, "allowed": value}


def narrowing_vote(call: ProposedCall, session: Session, key: str) -> Vote | None:
    """Deny a call outside the narrowing in force (it can never allow anything)."""
    from ketch.api import Vote

    state = session.state.get(key)
    narrow = state.get("narrow") if isinstance(state, dict) else None
    if not narrow:
        return None
    limit, _ = narrowing(
        narrow.get("allowed"), session.kernel.tools, str(narrow.get("source") or "this turn")
    )
    if limit is None or call.tool == "skill":
        return None
    refusal = limit.refusal(call.tool, call.input)
    return Vote(decision="deny", reason=refusal, origin="narrowing") if refusal else None


def end_of_turn(session: Session, key: str) -> None:
    state = session.state.get(key)
    if isinstance(state, dict):
        state.pop("narrow", None)
