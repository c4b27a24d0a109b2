"""A session's journal, read back as what a receipt states: turns, calls, decisions.

Only the store's public reading API is used (``entries(session_id)``: every entry,
decrypted, after the store has checked its MAC chain), and only the kernel's event
vocabulary plus the ``sandbox`` and ``egress`` entries the sandbox journals. Per call:
what the model proposed (its assistant message), what ran (``tool_started``: a hook
may have rewritten the input), every permission decision with its origin, the mode and
profile in force, the sandbox record of each command and every connection, the files
the checkpoints saw it change (``changes`` entries, cumulative per turn: a call is
credited with the paths first changed in that turn by it), and its outcome.

The journal digest binds a receipt to the stored session: SHA-256 over entries 1..N,
each framed as (seq, kind, timestamp, SHA-256 of its payload). Entries appended later
(the session went on) leave it unchanged; any change to those N does not.
"""

from __future__ import annotations

import hashlib
import json
import struct
from dataclasses import dataclass, field
from typing import Any

from ketch.api import KetchError

AGENT_PREFIX = "agent/"
DIGEST_ALGORITHM = "ketch-journal-digest/v1"

Entry = tuple[int, str, float, bytes]


def journal_digest(entries: list[Entry]) -> str:
    """SHA-256 over each entry framed as (seq, kind, ts, SHA-256(payload))."""
    h = hashlib.sha256(DIGEST_ALGORITHM.encode())
    for seq, kind, ts, payload in entries:
        name = kind.encode("utf-8")
        h.update(struct.pack(">qI", seq, len(name)) + name + struct.pack(">d", ts))
        h.update(hashlib.sha256(payload).digest())
    return h.hexdigest()


@dataclass
class Call:
    id: str
    tool: str
    turn: int
    agent: str | None = None
    proposed: dict[str, Any] | None = None  # the input the model proposed
    ran: dict[str, Any] | None = None  # the input that ran (None: it never started)
    decisions: list[dict[str, Any]] = field(default_factory=list)
    mode: str = ""
    profile: str = ""
    outcome: str = ""  # succeeded | failed | blocked | cancelled | refused | "" (unknown)
    ok: bool | None = None
    sandbox: list[dict[str, Any]] = field(default_factory=list)
    network: list[dict[str, Any]] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    journal: dict[str, int] = field(default_factory=dict)  # seq of its entries, by kind

    @property
    def effects(self) -> set[str]:
        return {e for d in self.decisions for e in d.get("effects") or ()}

    @property
    def executed(self) -> bool:
        """It ran (or may have run) a program."""
        return self.ran is not None and "execute" in self.effects

    @property
    def sandboxed(self) -> bool | None:
        """Every command it ran was wrapped in the sandbox (None: it ran no program).
        A call that ran a program with no sandbox record ran outside any sandbox."""
        if not self.executed:
            return None
        return bool(self.sandbox) and all(s.get("sandboxed") is True for s in self.sandbox)


@dataclass
class Turn:
    number: int
    prompt: str = ""
    stop_reason: str = ""
    changed: list[str] = field(default_factory=list)


@dataclass
class Usage:
    provider: str
    model: str
    turn: int
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cost_usd: float | None = None


@dataclass
class Facts:
    session_id: str
    entries: int
    digest: str
    turns: list[Turn] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    usage: list[Usage] = field(default_factory=list)
    runs: list[dict[str, Any]] = field(default_factory=list)  # each session entry (a ketch run)
    subagents: list[dict[str, Any]] = field(default_factory=list)


def read(session_id: str, entries: list[Entry]) -> Facts:
    facts = Facts(session_id, len(entries), journal_digest(entries))
    state = _State(facts)
    for seq, kind, _ts, payload in entries:
        agent: str | None = None
        if kind.startswith(AGENT_PREFIX):
            agent, _, kind = kind[len(AGENT_PREFIX) :].partition("/")
        try:
            data = json.loads(payload)
        except ValueError:
            continue  # not JSON: nothing a receipt states (the chain still covers it)
        if isinstance(data, dict):
            state.entry(seq, kind, agent, data)
    return facts


class _State:
    """Walks the journal in order, keeping what is in force."""

    def __init__(self, facts: Facts) -> None:
        self.facts = facts
        self.turn = 0
        self.mode: dict[str | None, str] = {}
        self.profile: dict[str | None, str] = {}
        self.model = ("", "")
        self.calls: dict[tuple[str | None, str], Call] = {}
        self.running: dict[str | None, list[Call]] = {}
        self.seen_changes: dict[str | None, set[str]] = {}

    def entry(self, seq: int, kind: str, agent: str | None, data: dict[str, Any]) -> None:
        handler = getattr(self, f"_on_{kind}", None)
        if handler is not None:
            handler(seq, agent, data)

    def _call(self, agent: str | None, call_id: Any) -> Call | None:
        return self.calls.get((agent, str(call_id))) if call_id else None

    def _on_session(self, seq: int, agent: str | None, data: dict[str, Any]) -> None:
        self.mode[agent] = str(data.get("mode") or "")
        self.profile[agent] = str(data.get("profile") or "")
        if agent is None:
            self.model = (str(data.get("provider") or ""), str(data.get("model") or ""))
            self.facts.runs.append(
                {
                    "provider": self.model[0],
                    "model": self.model[1],
                    "mode": self.mode[None],
                    "profile": self.profile[None],
                    "resumed": bool(data.get("resumed")),
                    "turn": self.turn + 1,
                }
            )

    def _on_mode(self, seq: int, agent: str | None, data: dict[str, Any]) -> None:
        self.mode[agent] = str(data.get("mode") or "")
        self.profile[agent] = str(data.get("profile") or "")

    def _on_message(self, seq: int, agent: str | None, data: dict[str, Any]) -> None:
        role, parts = data.get("role"), data.get("parts") or []
        if role == "user" and agent is None and not data.get("synthetic"):
            self.turn += 1
            self.seen_changes[None] = set()
            text = "".join(
                p.get("text", "") for p in parts if isinstance(p, dict) and p.get("type") == "text"
            )
            self.facts.turns.append(Turn(self.turn, prompt=text))
            return
        if role != "assistant":
            return
        for part in parts:
            if not isinstance(part, dict) or part.get("type") != "tool_call":
                continue
            call = Call(
                id=str(part.get("id") or ""),
                tool=str(part.get("name") or ""),
                turn=self.turn,
                agent=agent,
                proposed=part.get("input") if isinstance(part.get("input"), dict) else None,
                mode=self.mode.get(agent, self.mode.get(None, "")),
                profile=self.profile.get(agent, self.profile.get(None, "")),
            )
            call.journal["proposed"] = seq
            self.calls[(agent, call.id)] = call
            self.facts.calls.append(call)

    def _on_permission(self, seq: int, agent: str | None, data: dict[str, Any]) -> None:
        call = self._call(agent, data.get("tool_call_id"))
        if call is None:
            return
        call.decisions.append(
            {
                "decision": data.get("decision", ""),
                "approved": data.get("approved"),
                "origin": data.get("origin") or "",
                "plugin": data.get("plugin") or "",
                "rules": list(data.get("rules") or []),
                "reason": data.get("reason") or "",
                "scope": data.get("scope"),
                "effects": list(data.get("effects") or []),
                "mode": self.mode.get(agent, self.mode.get(None, "")),
                "profile": self.profile.get(agent, self.profile.get(None, "")),
            }
        )
        call.journal.setdefault("permission", seq)

    def _on_tool_started(self, seq: int, agent: str | None, data: dict[str, Any]) -> None:
        call = self._call(agent, data.get("tool_call_id"))
        if call is None:
            return
        call.ran = data.get("input") if isinstance(data.get("input"), dict) else {}
        call.journal["started"] = seq
        self.running.setdefault(agent, []).append(call)

    def _on_tool_result(self, seq: int, agent: str | None, data: dict[str, Any]) -> None:
        call = self._call(agent, data.get("tool_call_id"))
        if call is None:
            return
        call.outcome = str(data.get("outcome") or "")
        call.ok = bool(data.get("ok"))
        call.journal["result"] = seq
        running = self.running.get(agent, [])
        if call in running:
            running.remove(call)

    def _on_recovery(self, seq: int, agent: str | None, data: dict[str, Any]) -> None:
        for call in [c for calls in self.running.values() for c in calls]:
            if not call.outcome:
                call.outcome = "unknown_outcome"

    def _on_sandbox(self, seq: int, agent: str | None, data: dict[str, Any]) -> None:
        call = self._call(agent, data.get("tool_call_id"))
        if call is not None:
            call.sandbox.append(
                {
                    k: data.get(k)
                    for k in ("sandboxed", "reason", "network", "view", "rules")
                    if k in data
                }
            )

    def _on_egress(self, seq: int, agent: str | None, data: dict[str, Any]) -> None:
        call = self._call(agent, data.get("tool_call_id"))
        if call is not None:
            call.network.append(
                {
                    k: data.get(k)
                    for k in ("host", "port", "protocol", "method", "allowed", "rule", "address")
                }
                | {"bytesOut": data.get("bytes_up", 0), "bytesIn": data.get("bytes_down", 0)}
            )

    def _on_changes(self, seq: int, agent: str | None, data: dict[str, Any]) -> None:
        paths = [str(p) for p in data.get("paths") or [] if isinstance(p, str)]
        seen = self.seen_changes.setdefault(agent, set())
        new = [p for p in paths if p not in seen]
        seen.update(new)
        running = self.running.get(agent) or []
        if running:
            running[-1].changed.extend(new)
        if self.facts.turns and new:
            turn = self.facts.turns[-1]
            turn.changed.extend(p for p in new if p not in turn.changed)

    def _on_usage(self, seq: int, agent: str | None, data: dict[str, Any]) -> None:
        self.facts.usage.append(
            Usage(
                provider=str(data.get("provider") or self.model[0]),
                model=str(data.get("model") or self.model[1]),
                turn=self.turn,
                input_tokens=int(data.get("input_tokens") or 0),
                output_tokens=int(data.get("output_tokens") or 0),
                cached_tokens=int(data.get("cached_tokens") or 0),
                cost_usd=data.get("cost_usd"),
            )
        )

    def _on_turn_end(self, seq: int, agent: str | None, data: dict[str, Any]) -> None:
        if agent is None and self.facts.turns:
            self.facts.turns[-1].stop_reason = str(data.get("stop_reason") or "")

    def _on_subagent(self, seq: int, agent: str | None, data: dict[str, Any]) -> None:
        if data.get("status") == "started":
            self.facts.subagents.append(
                {
                    "id": data.get("subagent_id"),
                    "name": data.get("name"),
                    "toolCallId": data.get("tool_call_id"),
                    "turn": self.turn,
                }
            )


def load(store: Any, session_id: str) -> tuple[str, list[Entry]]:
    """(the full session id, its checked entries) through the store's public reading API."""
    resolve = getattr(store, "resolve_id", None)
    if resolve is not None:
        session_id = resolve(session_id)
    reader = getattr(store, "entries", None)
    if reader is None:
        raise KetchError("the loaded session store cannot list a session's journal entries")
    return session_id, list(reader(session_id))
