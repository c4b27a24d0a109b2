"""What one root session's subagents share: the concurrency limit, one approval at a
time, the background subagents still running, and which definition each child runs."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ketch.api import StashKey

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Session
    from ketch_agents.definitions import Definition


@dataclass
class Runtime:
    loop: asyncio.AbstractEventLoop
    limit: asyncio.Semaphore
    approvals: asyncio.Lock = field(default_factory=asyncio.Lock)
    worktrees: asyncio.Lock = field(default_factory=asyncio.Lock)  # made one at a time
    background: dict[str, asyncio.Task[None]] = field(default_factory=dict)


@dataclass
class ChildState:
    """Kept on a subagent's session: its definition and what it did."""

    definition: Definition
    changed: list[str] = field(
        default_factory=list
    )  # files written (workspace-relative when inside)
    commands: list[str] = field(default_factory=list)  # command lines run


RUNTIME = StashKey[Runtime]()
CHILD = StashKey[ChildState]()


def runtime_of(session: Session, max_concurrent: int) -> Runtime:
    """The session's runtime on the running loop (a new loop, as each ``asyncio.run``
    brings, gets fresh primitives; background subagents do not outlive their loop)."""
    loop = asyncio.get_running_loop()
    current = session.stash.get(RUNTIME)
    if current is None or current.loop is not loop:
        current = Runtime(loop, asyncio.Semaphore(max_concurrent))
        session.stash[RUNTIME] = current
    return current
