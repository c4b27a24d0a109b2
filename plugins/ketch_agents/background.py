"""Background subagents: the parent goes on; the result arrives at its next step.

The result is delivered through the steer path (as if typed while the turn runs), so
it reaches the model at the parent's next step, and a notice tells the person at once.
A turn does not end while background subagents it started still run: it waits for
them (Ctrl-C cancels them), so a ``ketch -p`` run gets every result. Cancelling the
parent's turn, or ending its session, cancels them.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING

from ketch.api import NoticeEvent

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Session
    from ketch_agents.child import Child
    from ketch_agents.runtime import Runtime


def start(parent: Session, child: Child, runtime: Runtime) -> None:
    task = asyncio.ensure_future(_deliver(parent, child))
    runtime.background[child.agent.id] = task
    task.add_done_callback(lambda _: runtime.background.pop(child.agent.id, None))


async def _deliver(parent: Session, child: Child) -> None:
    try:
        outcome = await child.run()
    except asyncio.CancelledError:
        return
    agent = child.agent
    parent.steer(
        f"[ketch] The background agent '{agent.name}' ({agent.id}) you started for \"{agent.description}\" is done.\n\n{outcome.report()}"
    )
    with contextlib.suppress(Exception):
        parent.kernel.emit(
            parent,
            NoticeEvent(
                level="info",
                message=f"background agent '{agent.name}' ({agent.description}) finished: {outcome.stop_reason}",
            ),
        )


async def wait_all(parent: Session) -> bool:
    """Wait for the session's running background subagents; True if there were any."""
    from ketch_agents.runtime import RUNTIME

    runtime = parent.stash.get(RUNTIME)
    if runtime is None or not runtime.background or runtime.loop is not asyncio.get_running_loop():
        return False
    while running := [task for task in runtime.background.values() if not task.done()]:
        await asyncio.wait(running)  # a cancelled wait leaves them running: cancel_all() ends them
    return True


def cancel_all(parent: Session) -> None:
    from ketch_agents.runtime import RUNTIME

    runtime = parent.stash.get(RUNTIME)
    if runtime is not None:
        for task in list(runtime.background.values()):
            task.cancel()
