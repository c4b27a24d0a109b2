"""Helpers for the tool tests: a session that runs one scripted tool call per turn.

Only the tool plugins (and the essential guards) load, so these tests do not depend
on what the policy plugin decides; calls that ask go to the test's approver.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ketch.policy import ApprovalAnswer, ApprovalRequest, Approver
from ketch.testing import Harness, approve_all, call, text

TOOL_PLUGINS = ["fs", "search", "shell", "web"]


class Recorder:
    """An approver that records every request and answers with ``answer``."""

    def __init__(
        self, answer: bool = True, before: Callable[[ApprovalRequest], None] | None = None
    ) -> None:
        self.answer = answer
        self.before = before
        self.requests: list[ApprovalRequest] = []

    async def __call__(self, request: ApprovalRequest) -> ApprovalAnswer:
        self.requests.append(request)
        if self.before is not None:
            self.before(request)
        return ApprovalAnswer(approved=self.answer)

    @property
    def targets(self) -> list[str]:
        return [a.target for r in self.requests for a in r.call.accesses]


class ToolSession:
    """One ketch session; ``call`` runs one tool call in its own turn and returns its result event."""

    def __init__(self, harness: Harness, approver: Approver | None) -> None:
        self.harness = harness
        self.approver = approver

    @property
    def workspace(self) -> Path:
        return self.harness.workspace

    @property
    def state(self) -> dict[str, Any]:
        return self.harness.session.state

    def call(
        self, name: str, input: dict[str, Any], *, approver: Approver | None | str = "default"
    ) -> Any:
        self.harness.provider.add(call(name, input), text("ok"))
        chosen = self.approver if approver == "default" else approver
        before = len(self.harness.events)
        self.harness.run(f"use {name}", approver=chosen)  # type: ignore[arg-type]
        results = [e for e in self.harness.events[before:] if e.type == "tool_result"]
        assert len(results) == 1, [e.type for e in self.harness.events[before:]]
        return results[0]

    def events(self, kind: str) -> list[Any]:
        return self.harness.of_type(kind)


def make_session(
    tmp_path: Path,
    *,
    approver: Approver | None = approve_all,
    settings: dict[str, Any] | None = None,
    plugins: list[tuple[str, Any]] | None = None,
    config: str | None = None,
) -> ToolSession:
    harness = Harness.create(
        tmp_path,
        bundled=TOOL_PLUGINS,
        settings={"tools": settings or {}},
        plugins=plugins,
        config=config,
    )
    return ToolSession(harness, approver)


def alive(pid: int) -> bool:
    """A process that exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            data = handle.read()
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    state = data[data.rfind(b")") + 2 :].split()[0]
    return state not in (b"Z", b"X")
