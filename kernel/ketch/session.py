"""A session: one conversation in one workspace, with its knowledge and its authority.

Knowledge (transcript, model, mode, pins, compaction records, usage) survives a
restart; authority (a profile beyond the default one, temporary approvals) never does.
The transcript is append-only; ``active`` is the derived context compaction rewrites
and :meth:`Session.rewind` sets back to before a turn (the turns after it stay in the
transcript, marked in ``rewound``).

A subagent runs in a session of its own (``agent`` says who it is): its events carry
its ``agent_id`` and reach its parent's frontends; its authority is its parent's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ketch.messages import History, Message, Usage, new_id
from ketch.policy import PermissionSnapshot
from ketch.stash import Stash

if TYPE_CHECKING:  # pragma: no cover
    from ketch.events import Event, RewindEvent
    from ketch.kernel import Kernel
    from ketch.providers import Provider


@dataclass(frozen=True)
class Subagent:
    """Who a subagent's session is: ``id`` (its events carry it as ``agent_id``), the
    name of its definition, the task's short description, its parent session and the
    parent's tool call that started it."""

    id: str
    name: str
    parent_id: str
    description: str = ""
    tool_call_id: str = ""
    background: bool = False


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
    pins: set[str] = field(default_factory=set)
    approvals: list[str] = field(default_factory=list)  # scopes allowed for this session only
    usage: Usage = field(default_factory=Usage)
    compactions: list[dict[str, Any]] = field(default_factory=list)
    rewound: set[str] = field(default_factory=set)  # transcript message ids a rewind abandoned
    state: dict[str, Any] = field(default_factory=dict)  # per-plugin state, JSON, persisted
    stash: Stash = field(default_factory=Stash)  # per-plugin state in memory (ketch.stash)
    resumed: bool = False
    sandboxed: bool = False
    steers: asyncio.Queue[str] = field(default_factory=asyncio.Queue)
    listeners: list[Callable[[Event], None]] = field(default_factory=list)
    context_window: int | None = None
    agent: Subagent | None = None  # set for a subagent's session (None: a root session)

    @property
    def model(self) -> str:
        return self.provider.model

    def append(self, *messages: Message) -> None:
        """Append to the transcript and the active context (a new tuple each time)."""
        self.transcript = self.transcript + tuple(messages)
        self.active = self.active + tuple(messages)

    def rewind(self, message_id: str) -> RewindEvent:
        """Continue the conversation from before the prompt ``message_id``.

        Nothing leaves the transcript: that prompt and every later message are marked
        rewound (``rewound``), and the active context is set back to what preceded the
        prompt (:func:`ketch.rewind.rewind_context`). Emits a ``rewind`` event (storage
        keeps the marks) and returns it. Raises ``KetchError`` for an id that is not a
        prompt of the transcript or was rewound already. Call it between turns.
        """
        from ketch.events import RewindEvent
        from ketch.rewind import rewind_context

        active, cut = rewind_context(
            self.transcript, self.active, self.compactions, self.rewound, message_id
        )
        self.active = active
        self.rewound.update(cut)
        event = RewindEvent(message_id=message_id, rewound=cut, active=[m.id for m in active])
        self.kernel.emit(self, event)
        return event

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
        return PermissionSnapshot(
            mode=self.mode,
            profile=self.profile,
            workspace=self.workspace,
            rules=self.kernel.hooks.permission_rules(self),
            approvals=tuple(self.approvals),
            sandboxed=self.sandboxed,
        )
