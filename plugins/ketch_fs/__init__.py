"""ketch_fs: the file tools — read_file, write_file, edit_file, list_dir, glob.

Every path is resolved against the workspace fixed at session start and declared to
the policy (outside the workspace, the guards ask); writes go through the
read-coverage guard and show a unified diff. See docs/tools.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ketch.api import hookimpl, provides


@hookimpl
def ketch_session_start(session: Any) -> None:
    # What a killed write left behind last time is swept while the session starts.
    from ketch_fs.leftovers import sweep_in_background

    sweep_in_background(session.workspace)


@hookimpl
def ketch_event(session: Any, event: Any) -> None:
    """The read guard follows the conversation: a prompt starts a turn, a rewind goes
    back to before one (see :mod:`ketch_fs.coverage`)."""
    kind = event.type
    if kind not in ("user_prompt", "rewind") or getattr(event, "agent_id", None):
        return
    from ketch_context_kit.turns import prompt_numbers
    from ketch_fs import coverage

    state = session.state.setdefault("fs", {})
    if kind == "user_prompt" and not event.steer:
        coverage.start_turn(state, len(prompt_numbers(session.transcript)) + 1)
    elif kind == "rewind":
        number = prompt_numbers(session.transcript).get(event.message_id)
        if number is not None:
            coverage.rewind(state, number)


@hookimpl
@provides("read_file", "write_file", "edit_file", "list_dir", "glob")
def ketch_register_tools(register: Callable[[Any], None]) -> None:
    from ketch_fs.edit_tools import EditFile, WriteFile
    from ketch_fs.listing import Glob, ListDir
    from ketch_fs.read_tool import ReadFile

    for tool in (ReadFile(), WriteFile(), EditFile(), ListDir(), Glob()):
        register(tool)
