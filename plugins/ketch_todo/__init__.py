"""ketch_todo: a task list the model keeps (the ``todo`` tool), shown to the person.

For multi-step work the model writes its plan as a list and keeps it current: each
call sends the whole list (it replaces the previous one), one task ``in_progress`` at
a time. The list lives in the session's state (a resumed session has it back) and goes
out as a ``todo`` event: the shell shows it under the status line and prints it when it
changes, ``-p --output-format stream-json`` writes it as a line, and over ACP it is the
editor's plan (``plan`` session updates). The tool touches nothing, so every profile
and plan mode allow it. See docs/tools.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ketch.api import hookimpl, provides

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Session


@hookimpl
@provides("todo")
def ketch_register_tools(register: Callable[[Any], None]) -> None:
    from ketch_todo.tool import Todo

    register(Todo())


@hookimpl
def ketch_register_events(register: Callable[[Any], None]) -> None:
    from ketch_todo.tool import TodoEvent

    register(TodoEvent)


@hookimpl
def ketch_session_start(session: Session) -> None:
    """A resumed session's list is shown again (frontends learn it like any update)."""
    todos = (session.state.get("todo") or {}).get("todos")
    if session.agent_id is None and isinstance(todos, list) and todos:
        from ketch_todo.tool import TodoEvent

        session.kernel.emit(session, TodoEvent(todos=todos))
