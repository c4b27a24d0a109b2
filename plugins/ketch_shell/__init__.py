"""ketch_shell: the ``shell`` tool (foreground commands with a timeout, or background
jobs) and ``shell_job`` (read, stop, list jobs).

Each command runs in the workspace in its own process group, killed as a whole on
timeout or cancel; its environment is stripped of secret-looking variables; the
sandbox hook (``ketch_sandbox_command``) wraps it when a sandbox plugin is loaded.
See docs/tools.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ketch import hookimpl
from ketch.plugins import provides

if TYPE_CHECKING:  # pragma: no cover
    from ketch.session import Session


@hookimpl
@provides("shell", "shell_job")
def ketch_register_tools(register: Callable[[Any], None]) -> None:
    from ketch_shell.tools import Shell, ShellJob

    register(Shell())
    register(ShellJob())


@hookimpl
def ketch_session_end(session: Session, reason: str) -> None:
    import sys

    jobs = sys.modules.get("ketch_shell.jobs")
    if jobs is not None:  # no job module loaded: no job was ever started
        jobs.JOBS.stop_session(session.id)
