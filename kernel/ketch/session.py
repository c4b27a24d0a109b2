"""A session: one conversation in one workspace, with its knowledge and its authority.

Knowledge (transcript, model, mode, usage, the plugins' ``state``) survives a
restart; authority (a profile beyond the default one, anything plugins keep in the
``stash``) never does. The transcript is append-only; ``active`` is the derived
context the next request carries, which plugins may replace (:meth:`Session.set_active`:
a compaction, a rewind) but never the transcript.

A session may run on behalf of another (``parent``: a tool that starts an agent of
its own): its events carry its ``agent_id`` and reach its parent's frontends; its
authority is its parent's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ketch.messages import History, Message, Usage, new_id
from ketch.policy import PermissionSnapshot
from ketch.stash import Stash

if TYPE_CHECKING:  # pragma: no cover
    from pathlib import Path

    from ketch.events import Event
    from ketch.kernel import Kernel
    from ketch.providers import Provider


@dataclass
class Session:
    kernel: Kernel
    provider: Provider
    workspace: Path
    mode: str = ""  # a registered mode (kernel.modes); "" when no plugin declares modes
    profile: str = ""  # a registered profile (kernel.profiles): the policy's vocabulary
    id: str = field(default_factory=lambda: new_id("ses_"))
    name: str = ""
    transcript: History = ()
    active: History = ()
    usage: Usage = field(default_factory=Usage)
    state: dict[str, Any] = field(default_factory=dict)  # per-plugin state, JSON, persisted
    stash: Stash = field(default_factory=Stash)  # per-plugin state in memory (ketch.stash)
    resumed: bool = False
    steers: asyncio.Queue[str] = field(default_factory=asyncio.Queue)
    listeners: list[Callable[[Event], None]] = field(default_factory=list)
    context_window: int | None = None
    # Set when this session runs as an agent of another: who it runs for, and the id
    # and name its events and hooks give it (None / "": the root session).
    parent: Session | None = None
    agent_id: str | None = None
    agent_name: str = ""

    @property
    def model(self) -> str:
        return self.provider.model

    def append(self, *messages: Message) -> None:
        """Append to the transcript and the active context (a new tuple each time)."""
        self.transcript = self.transcript + tuple(messages)
        self.active = self.active + tuple(messages)

    def set_active(self, messages: History, reason: str) -> None:
        """Replace the active context (the transcript stays whole) and say so with an
        ``active`` event, which storage keeps at once. ``reason`` names who replaced it."""
        from ketch.events import ActiveEvent

        self.active = tuple(messages)
        self.kernel.emit(self, ActiveEvent(active=[m.id for m in self.active], reason=reason))

    def steer(self, text: str) -> None:
        """Queue input typed while a turn runs; the loop delivers it at the next step."""
        self.steers.put_nowait(text)

    @property
    def read_only(self) -> bool:
        """Whether the current mode offers only read-only tools (structurally)."""
        return self.kernel.read_only_mode(self.mode)

    def set_mode(self, mode: str) -> None:
        """Switch modes (a registered one: an unknown name is a KetchError)."""
        from ketch.events import ModeEvent

        self.mode = self.kernel.check_mode(mode)
        self.kernel.emit(self, ModeEvent(mode=self.mode, profile=self.profile))

    def set_profile(self, profile: str) -> None:
        """Switch profiles (a registered one: an unknown name is a KetchError)."""
        from ketch.events import ModeEvent

        self.profile = self.kernel.check_profile(profile)
        self.kernel.emit(self, ModeEvent(mode=self.mode, profile=self.profile))

    def snapshot(self) -> PermissionSnapshot:
        """The authority for one step, frozen: nothing during the step can relax it."""
        hooks = self.kernel.hooks
        rules = hooks.permission_rules(self)
        facts: dict[str, Any] = {}
        for contributed in hooks.values("ketch_permission_facts", session=self):
            facts.update(contributed)
        return PermissionSnapshot(
            mode=self.mode,
            profile=self.profile,
            workspace=self.workspace,
            rules={kind: rules[kind] for kind in ("allow", "ask", "deny")},
            approvals=rules["approvals"],
            facts=facts,
        )
