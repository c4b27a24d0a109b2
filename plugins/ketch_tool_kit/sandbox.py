"""The sandbox contract: between tools that run programs and a sandbox that wraps them.

A library's contract, so that neither side names the other: a tool plugin that runs
programs (the shell) and a sandbox plugin (``ketch_sandbox``, or a third party's) each
declare these specs from their ``ketch_add_hookspecs`` (declaring twice is harmless),
so the hook exists whichever of them is loaded. The tool gets a narrow callable
(:func:`wrapper`), never the kernel's hook façade, and declares the capability
:data:`RUNS_SANDBOXED` on its tool class so that policy plugins know its commands go
through here (no plugin looks another up by name). Whether the sandbox is on for a
step is the permission snapshot's fact :data:`SANDBOXED` (the sandbox plugin
contributes it with ``ketch_permission_facts``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ketch.api import fail_closed, hookspec, returns

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import ToolContext

# A tool class that declares this capability runs its commands through
# ``sandbox_command`` (so a working sandbox confines them).
RUNS_SANDBOXED = "runs_sandboxed"
# The permission snapshot's fact: True when commands of this step run sandboxed.
SANDBOXED = "sandboxed"

Reporter = Callable[[bool], "str | None"]
SandboxCommand = Callable[..., "list[str] | None"]


def _refuse(plugin: str, exc: BaseException) -> Any:
    from ketch.api import KetchError

    # None would mean "run it unsandboxed": refuse instead; the tool reports it.
    raise KetchError(
        f"sandbox plugin '{plugin}' failed ({type(exc).__name__}: {exc}); the command was not run"
    )


@hookspec(firstresult=True)
@fail_closed(_refuse)
@returns(list, tuple)
def sandbox_command(
    argv: list[str],
    workspace: Path,
    network: bool,
    exposed: Callable[[Path], bool] | None,
    reporters: list[Reporter] | None,
    context: ToolContext | None,
    kernel: Any,
) -> list[str] | None:
    """Wrap a command line so it runs inside a sandbox.

    Called by tools that execute programs, once per command, right before it starts.
    Return the argv to run instead (e.g. ``["bwrap", ..., "--", *argv]``), or None to
    run it unwrapped. Stops at the first non-None result. A raising implementation
    refuses the command (never "run it unsandboxed").

    ``network``: the command may use the network. ``exposed(path)``: True when the
    person allowed this command to read that (resolved) path, which a sandbox would
    otherwise mask as a secret; None exposes nothing. ``reporters``: a list the sandbox
    may append callables to; the caller calls ``reporter(False)`` whenever it reports
    the command's output and ``reporter(True)`` once the command and everything it
    started have ended (which also frees what the sandbox held for it), and adds the
    text each returns (e.g. "``.env`` is masked in the sandbox ...") to the result.
    ``context``: the running call's :class:`ketch.tools.ToolContext` (None outside a
    call): a sandbox that lets the command reach the network asks through
    ``context.authorize`` and journals through ``context.emit`` on that call's behalf.
    ``kernel``: the kernel the tool runs in (its settings, its sessions; a sandbox keeps
    what it learns per kernel, in ``kernel.stash``).
    """


def wrapper(kernel: Any) -> SandboxCommand:
    """The narrow callable a tool gets: ``wrap(argv, workspace, network, exposed=None,
    reporters=None, context=None)`` returns the wrapped argv, or None (no sandbox)."""
    hooks = kernel.hooks

    def wrap(
        argv: list[str],
        workspace: Path,
        network: bool,
        exposed: Callable[[Path], bool] | None = None,
        reporters: list[Reporter] | None = None,
        context: ToolContext | None = None,
    ) -> list[str] | None:
        found = hooks.first(
            "sandbox_command",
            argv=argv,
            workspace=workspace,
            network=network,
            exposed=exposed,
            reporters=reporters,
            context=context,
            kernel=kernel,
        )
        return list(found) if found else None

    return wrap


def runs_sandboxed(call: Any, access: Any) -> bool:
    """Whether one access of a proposed call runs in the sandbox when one is on: its tool
    declares :data:`RUNS_SANDBOXED`, or the access says so, and it did not ask to run
    outside (``detail["sandboxed"] is False``)."""
    detail = getattr(access, "detail", {}) or {}
    if detail.get("sandboxed") is False:
        return False
    return RUNS_SANDBOXED in getattr(call, "capabilities", ()) or detail.get("sandboxed") is True
