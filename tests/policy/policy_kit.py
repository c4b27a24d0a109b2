"""Helpers for the permission-engine tests: a realistic workspace, proposed calls,
and the combined decision of the real guards and policy plugins."""

from __future__ import annotations

import os
from pathlib import Path

from ketch.policy import PermissionSnapshot, ProposedCall, Vote, combine_votes
from ketch.tools import Access, Effect
from ketch_guards.guards import vote as guards_vote
from ketch_policy.decide import vote as policy_vote
from ketch_tool_kit.sandbox import RUNS_SANDBOXED, SANDBOXED

PROFILES = ("manual", "assisted", "full-access")
CODE = {"allow": "A", "ask": "?", "deny": "D"}


def make_workspace(root: Path) -> Path:
    """A workspace with code, a secret, git internals, ketch config and a look-alike sibling."""
    ws = root / "proj"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "a.py").write_text("print('a')\n")
    (ws / "src" / "b.py").write_text("print('b')\n")
    (ws / "README.md").write_text("# proj\n")
    (ws / "files.txt").write_text("src/a.py\n")
    (ws / ".env").write_text("API_KEY=sk-canary\n")
    (ws / ".env.example").write_text("API_KEY=\n")
    (ws / ".git" / "hooks").mkdir(parents=True)
    (ws / ".git" / "config").write_text("[core]\n")
    (ws / ".ketch").mkdir()
    (ws / ".ketch" / "config.toml").write_text("")
    (ws / "build").mkdir()
    os.symlink(ws / ".env", ws / "link-to-env")
    os.symlink(ws / ".git" / "config", ws / "innocent.txt")
    evil = root / "proj-evil"
    evil.mkdir()
    (evil / "x.txt").write_text("x")
    return ws


def snapshot(
    ws: Path,
    profile: str = "manual",
    *,
    mode: str = "build",
    rules: dict[str, list[str]] | None = None,
    approvals: tuple[str, ...] = (),
    sandboxed: bool = False,
) -> PermissionSnapshot:
    rules = rules or {}
    return PermissionSnapshot(
        mode=mode,  # type: ignore[arg-type]
        profile=profile,  # type: ignore[arg-type]
        workspace=ws,
        rules={k: tuple(rules.get(k, ())) for k in ("allow", "ask", "deny")},
        approvals=approvals,
        facts={SANDBOXED: sandboxed},
    )


def shell_call(
    command: str, ws: Path, *, cwd: Path | None = None, plugin: str = "shell", network: bool = False
) -> ProposedCall:
    access = Access(
        effect=Effect.EXECUTE, target=command, detail={"cwd": str(cwd or ws), "network": network}
    )
    return ProposedCall(
        id="call_1",
        tool="shell",
        input={"command": command},
        effects=frozenset({Effect.EXECUTE}),
        mutating=True,
        accesses=(access,),
        plugin=plugin,
        # The shell tool declares that its commands go through the sandbox.
        capabilities=frozenset({RUNS_SANDBOXED}) if plugin == "shell" else frozenset(),
    )


def file_call(
    tool: str, effect: Effect, path: Path | str, *, mutating: bool | None = None
) -> ProposedCall:
    mutating = effect == Effect.WRITE if mutating is None else mutating
    access = Access(effect=effect, target=str(path))
    return ProposedCall(
        id="call_1",
        tool=tool,
        input={"path": str(path)},
        effects=frozenset({effect}),
        mutating=mutating,
        accesses=(access,),
        plugin="fs",
    )


def web_call(url: str, host: str | None = None) -> ProposedCall:
    detail = {"host": host} if host is not None else {}
    access = Access(effect=Effect.NETWORK, target=url, detail=detail)
    return ProposedCall(
        id="call_1",
        tool="web_fetch",
        input={"url": url},
        effects=frozenset({Effect.NETWORK}),
        mutating=False,
        accesses=(access,),
        plugin="web",
    )


def combined(call: ProposedCall, snap: PermissionSnapshot) -> Vote:
    """What the loop would decide with the bundled guards and policy plugins."""
    return combine_votes([policy_vote(call, snap), guards_vote(call, snap)])


def decisions(command: str, ws: Path, rules: dict[str, list[str]] | None = None) -> str:
    """Four letters: manual, assisted, full-access, assisted with a working sandbox."""
    letters = [
        CODE[combined(shell_call(command, ws), snapshot(ws, p, rules=rules)).decision]
        for p in PROFILES
    ]
    letters.append(
        CODE[
            combined(
                shell_call(command, ws), snapshot(ws, "assisted", rules=rules, sandboxed=True)
            ).decision
        ]
    )
    return "".join(letters)
