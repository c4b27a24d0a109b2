"""A session: one conversation in one workspace, with its knowledge and its authority.

Knowledge (transcript, model, mode, pins, compaction records, usage) survives a
restart; authority (the profile beyond manual, temporary approvals) never does.
The transcript is append-only; ``active`` is the derived context compaction rewrites.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ketch.messages import History, Message, Usage, new_id
from ketch.policy import Mode, PermissionSnapshot, Profile

if TYPE_CHECKING:  # pragma: no cover
    from ketch.events import Event
    from ketch.kernel import Kernel
    from ketch.providers import Provider


@dataclass
class Session:
    kernel: Kernel
    provider: Provider
    workspace: Path
    mode: Mode = "build"
    profile: Profile = "manual"
    id: str = field(default_factory=lambda: new_id("ses_"))
    name: str = ""
    transcript: History = ()
    active: History = ()
    pins: set[str] = field(default_factory=set)
    approvals: list[str] = field(default_factory=list)  # scopes allowed for this session only
    usage: Usage = field(default_factory=Usage)
    last_input_tokens: int = 0
    compactions: list[dict[str, Any]] = field(default_factory=list)
    state: dict[str, Any] = field(default_factory=dict)  # per-plugin state
    trusted_workspace: bool = False
    resumed: bool = False
    sandboxed: bool = False
    steers: asyncio.Queue[str] = field(default_factory=asyncio.Queue)
    listeners: list[Callable[[Event], None]] = field(default_factory=list)
    context_window: int | None = None

    @property
    def model(self) -> str:
        return self.provider.model

    def append(self, *messages: Message) -> None:
        """Append to the transcript and the active context (a new tuple each time)."""
        self.transcript = self.transcript + tuple(messages)
        self.active = self.active + tuple(messages)

    def steer(self, text: str) -> None:
        """Queue input typed while a turn runs; the loop delivers it at the next step."""
        self.steers.put_nowait(text)

    def set_mode(self, mode: Mode) -> None:
        from ketch.events import ModeEvent

        self.mode = mode
        self.kernel.emit(self, ModeEvent(mode=self.mode, profile=self.profile))

    def set_profile(self, profile: Profile) -> None:
        from ketch.events import ModeEvent

        self.profile = profile
        self.kernel.emit(self, ModeEvent(mode=self.mode, profile=self.profile))

    def snapshot(self) -> PermissionSnapshot:
        """The authority for one step, frozen: nothing during the step can relax it."""
        perms = self.kernel.settings.permissions
        # ``[permissions.run]``: rules given for this run only (the command line's layer),
        # added to, never replacing, the rules of the config files.
        run = (perms.model_extra or {}).get("run")
        listed = {k: run.get(k) if isinstance(run, dict) else None for k in ("allow", "ask", "deny")}
        extra = {k: tuple(str(v) for v in value) if isinstance(value, list) else () for k, value in listed.items()}
        return PermissionSnapshot(
            mode=self.mode,
            profile=self.profile,
            workspace=self.workspace,
            trusted_workspace=self.trusted_workspace,
            rules={"allow": tuple(perms.allow) + extra["allow"], "ask": tuple(perms.ask) + extra["ask"], "deny": tuple(perms.deny) + extra["deny"]},
            approvals=tuple(self.approvals),
            sandboxed=self.sandboxed,
        )
