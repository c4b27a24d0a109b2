"""The hooks the agents plugin declares (``ketch_add_hookspecs``): what other plugins may
do when a subagent starts and stops, and folders of agent definitions from elsewhere than
the workspace and the user's config. Implement them with ``@hookimpl(optionalhook=True)``
so your plugin still loads when the agents plugin is disabled (they are then not called).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ketch.api import hookspec, returns

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import HookVerdict, Kernel, Session
    from ketch_agents.child import Subagent
    from ketch_prompt_kit.markdown_files import Folder

_VERDICT = "ketch.verdicts:HookVerdict"


@hookspec
@returns(_VERDICT)
def agents_subagent_start(session: Session, agent: Subagent) -> HookVerdict | None:
    """A subagent is about to start its task.

    Called once per subagent, in the parent ``session``, after the subagent's own
    session exists and before its first request; may be awaited. ``agent`` says who
    it is (``agent.id`` is the ``agent_id`` its events carry, ``agent.name`` its
    definition). Return ``HookVerdict(context=...)`` to add text to the task the
    subagent gets; None adds nothing. All verdicts' contexts are added.
    """


@hookspec
@returns(_VERDICT)
def agents_subagent_stop(session: Session, agent: Subagent, result: str) -> HookVerdict | None:
    """A subagent finished its task with ``result`` (its final answer).

    Called once per subagent turn, in the parent ``session``, before the result goes
    back to the parent (for a cancelled subagent it is not called); may be awaited.
    Return ``HookVerdict(block=True, reason=...)`` to keep the subagent going once more
    with ``reason`` as its next instruction; None to let it finish.
    """


@hookspec
@returns(list, tuple)
def agents_folders(kernel: Kernel) -> list[Folder] | None:
    """More folders of agent definitions: an installed Claude Code plugin's ``agents/``.

    Called when the ``agent`` tool is registered (once per kernel). Return
    ``ketch_prompt_kit.markdown_files.Folder`` objects, read after the workspace's and
    the user's: each with its ``namespace`` (its agents are ``namespace:NAME``),
    ``plugin_root`` and ``trust`` (the scope a definition is pinned in: it is offered
    only while pinned there), ``users_own=False``. None or [] when there are none. All
    results are collected.
    """
