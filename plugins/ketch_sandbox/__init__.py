"""The bubblewrap sandbox for shell commands (Linux).

Tools that run programs call ``ketch_sandbox_command(argv, workspace, network)``
right before starting one; this plugin returns the argv wrapped in bwrap (see
``bwrap.py`` for what the sandbox allows). bwrap is checked once per process, when
the kernel is configured; when it is missing or cannot run, ketch says so once and
commands run unwrapped, with the permission profile asking as if there were no
sandbox. A session's ``sandboxed`` flag means "this session has a working sandbox":
with it, the assisted profile allows more shell commands without asking.

``[sandbox] enabled = false`` in the user config turns it off (a workspace config
can change this only once the workspace is trusted).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ketch import hookimpl

if TYPE_CHECKING:  # pragma: no cover
    from ketch.kernel import Kernel
    from ketch.session import Session

_state: dict[str, Any] = {"probe": None, "enabled": True}


def _probe() -> Any:
    if _state["probe"] is None:
        from ketch_sandbox.bwrap import probe

        _state["probe"] = probe()
    return _state["probe"]


def active() -> bool:
    return bool(_state["enabled"]) and bool(_probe().available)


@hookimpl
def ketch_configure(kernel: Kernel) -> None:
    section = kernel.settings.section("sandbox")
    enabled = section.get("enabled", True)
    _state["enabled"] = enabled is not False
    if not _state["enabled"]:
        kernel.notices.append("sandbox: off ([sandbox] enabled = false); shell commands run unsandboxed")
        return
    found = _probe()
    if not found.available:
        kernel.notices.append(f"sandbox: {found.reason}; shell commands run unsandboxed, and the assisted profile asks for every command that is not read-only")


@hookimpl
def ketch_session_start(session: Session) -> None:
    session.sandboxed = active()


@hookimpl
def ketch_sandbox_command(argv: list[str], workspace: Path, network: bool) -> list[str] | None:
    if not active():
        return None
    from ketch_sandbox.bwrap import wrap

    return wrap(list(argv), Path(workspace), network=bool(network), bwrap=_probe().path or "bwrap")
