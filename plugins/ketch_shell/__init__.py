"""ketch_shell: the ``shell`` tool (foreground commands with a timeout, or background
jobs) and ``shell_job`` (read, stop, list jobs).

Each command runs in the workspace in its own process group, killed as a whole on
timeout or cancel; its environment is stripped of secret-looking variables; the
sandbox contract (``ketch_tool_kit.sandbox``) wraps it when a sandbox plugin is loaded,
unless the person approved running that one call outside (``dangerously_disable_sandbox``).
When a session ends (a signal the frontend turned into a cancel included), every
process group its commands started is ended: jobs with a grace period, anything a
cancelled call left with SIGKILL. See docs/tools.md and docs/sandbox.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ketch.api import hookimpl, provides

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Kernel, Session


@hookimpl
def ketch_add_hookspecs(pluginmanager: Any) -> None:
    from ketch_tool_kit import sandbox

    pluginmanager.add_hookspecs(sandbox)  # the contract its commands go through


@hookimpl
@provides("shell", "shell_job")
def ketch_register_tools(register: Callable[[Any], None], kernel: Kernel) -> None:
    from ketch_shell.tools import Shell, ShellJob
    from ketch_tool_kit.sandbox import wrapper

    register(Shell(sandbox=wrapper(kernel)))
    register(ShellJob())


@hookimpl
def ketch_session_start(session: Session) -> None:
    from ketch_shell.exposure import started

    started(session)


@hookimpl
def ketch_event(session: Session, event: Any) -> None:
    if getattr(event, "type", None) == "permission":
        from ketch_shell.exposure import observe

        observe(session, event)


@hookimpl
def ketch_session_end(session: Session, reason: str) -> None:
    import sys

    jobs = sys.modules.get("ketch_shell.jobs")
    if jobs is not None:  # no job module loaded: no job was ever started
        jobs.JOBS.stop_session(session.id)
    process = sys.modules.get("ketch_shell.process")
    if process is not None:
        process.kill_groups(session.id)
    exposure = sys.modules.get("ketch_shell.exposure")
    if exposure is not None:
        exposure.ended(session)
