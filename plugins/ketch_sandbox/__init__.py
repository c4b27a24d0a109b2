"""The bubblewrap sandbox for shell commands (Linux): the boundary, whatever the analyser says.

Tools that run programs call ``sandbox_command(argv, workspace, network, exposed,
reporters, context, kernel)`` (the contract in ``ketch_tool_kit.sandbox``) right before
starting one; this plugin returns the argv wrapped in bwrap. What the sandbox shows, hides
and masks is in ``view.py`` and docs/sandbox.md. bwrap is checked once per kernel when it
is configured, and each session's workspace view is tried once (per kernel) when the
session starts: when bwrap is
missing, cannot create namespaces, or refuses the view, ketch says so once and the
session is not sandboxed (the snapshot's ``sandboxed`` fact is False: commands then
run unwrapped, and the policy allows without asking only what it can prove harmless).

A call that asks to run *outside* the sandbox (``Access.detail["sandboxed"] is
False``) always asks, with the reason, and the answer is never remembered beyond that
call (the vote offers no scope). A command given the network reaches it only through
this session's egress proxy (``egress.py``, ``network.py``): its own network
namespace, the ``[sandbox.network]`` domain rules, each unlisted host asked about
through the call, every connection journaled. A connection to a local address
(loopback, private, link-local, metadata) asks in every profile unless a ``local``
rule names it.

Protected paths -- what runs code later, outside any sandbox (``.git`` at any depth,
``.ketch``, ``.claude``, ``.vscode``, git hooks, configured scripts:
:mod:`ketch_policy_kit.protected`) -- are read-only in every command whether or not
they exist yet: existing ones bound read-only (``view.guard``), absent ones at known
places reserved while commands run (``reserve.py``), and what a command made elsewhere
moved to a quarantine once it has ended, one line each in its result (``planted.py``).

``[sandbox] enabled = false`` in the user config turns it off (a workspace config
can change this only once the workspace is trusted).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ketch.api import StashKey, hookimpl

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import (
        Kernel,
        PermissionSnapshot,
        ProposedCall,
        Session,
        SettingsSection,
        ToolContext,
        Vote,
    )

# Whether this session's commands run sandboxed (bwrap works and took its view).
SANDBOXED = StashKey[bool]()


@dataclass
class _KernelState:
    """What the sandbox knows for one kernel (``kernel.stash``): ``ketch acp`` serves
    several kernels in one process, each with its own settings and workspace, and none
    sees another's."""

    probe: Any = None  # bwrap.Probe, tried when first needed
    enabled: bool = True  # ``[sandbox] enabled``
    views: dict[str, tuple[bool, str]] = field(default_factory=dict)  # workspace -> trial
    said: set[str] = field(default_factory=set)  # notices already given
    # Live sessions by id: the sandbox hook gets the call's context, which names its session.
    sessions: dict[str, Any] = field(default_factory=dict)
    # Workspace scans waiting for their session's first answer (by session id).
    warm: dict[str, Callable[[], None]] = field(default_factory=dict)


_STATE = StashKey[_KernelState]()


def _state(kernel: Kernel) -> _KernelState:
    found = kernel.stash.get(_STATE)
    if found is None:
        found = kernel.stash[_STATE] = _KernelState()
    return found


def _probe(kernel: Kernel | None) -> Any:
    from ketch_sandbox.bwrap import probe

    if kernel is None:
        return probe()
    state = _state(kernel)
    if state.probe is None:
        state.probe = probe()
    return state.probe


def active(kernel: Kernel | None = None) -> bool:
    """Whether ``kernel``'s commands run sandboxed (bwrap works, the sandbox is on);
    without a kernel, whether bwrap works here."""
    if kernel is not None and not _state(kernel).enabled:
        return False
    return bool(_probe(kernel).available)


def _say_once(kernel: Kernel, message: str, session: Session | None = None) -> None:
    said = _state(kernel).said
    if message in said:
        return
    said.add(message)
    if session is None:
        kernel.notices.append(message)
    else:
        from ketch.api import NoticeEvent

        kernel.emit(session, NoticeEvent(level="warning", message=message))


@hookimpl
def ketch_add_hookspecs(pluginmanager: Any) -> None:
    from ketch_tool_kit import sandbox

    pluginmanager.add_hookspecs(sandbox)  # the contract it implements


@hookimpl
def ketch_register_settings(register: Callable[[SettingsSection], None]) -> None:
    from ketch_sandbox.settings import SANDBOX

    register(SANDBOX)


@hookimpl
def ketch_permission_facts(session: Session) -> dict[str, Any]:
    from ketch_tool_kit.sandbox import SANDBOXED as FACT

    return {FACT: session.stash.get(SANDBOXED, False)}


@hookimpl
def ketch_configure(kernel: Kernel) -> None:
    section = kernel.settings.section("sandbox")
    enabled = _state(kernel).enabled = section.get("enabled", True) is not False
    if not enabled:
        _say_once(
            kernel, "sandbox: off ([sandbox] enabled = false); shell commands run unsandboxed"
        )
        return
    found = _probe(kernel)
    if not found.available:
        _say_once(
            kernel,
            f"sandbox: {found.reason}; shell commands run unsandboxed, and the assisted profile asks for every command it cannot prove harmless",
        )


def works_in(kernel: Kernel, workspace: Path) -> tuple[bool, str]:
    """Whether bwrap accepts the full view of ``workspace`` (tried once per kernel and workspace)."""
    views = _state(kernel).views
    key = str(workspace)
    if key not in views:
        from ketch_sandbox.bwrap import trial

        # The mounts, without what the indexes find (same kinds of mount): cheap.
        masks_held: list[Callable[[bool], str | None]] = []
        argv = wrap(
            ["true"], workspace, network=False, reporters=masks_held, scan=False, kernel=kernel
        )
        result = trial(argv, _probe(kernel).path)
        for reporter in masks_held:
            reporter(True)
        views[key] = (result.available, result.reason)
    return views[key]


def _prewarm(workspace: Path, settings: Any) -> None:
    """Scan the workspace and the toolchains now, so the first command does not wait."""
    import contextlib

    with contextlib.suppress(Exception):  # the first command scans again, and reports
        view_of(workspace, settings=settings)


@hookimpl
def ketch_session_start(session: Session) -> None:
    _state(session.kernel).sessions[session.id] = session
    if not active(session.kernel):
        session.stash[SANDBOXED] = False
        return
    import contextlib

    from ketch_sandbox.reserve import sweep

    with contextlib.suppress(Exception):  # a ketch that was killed may have left some
        sweep()
    ok, reason = works_in(session.kernel, Path(session.workspace))
    session.stash[SANDBOXED] = ok
    if ok:
        import threading

        # Started when the model first answers (ketch_event): a command can only come
        # after that, and before it the scan would slow the first request (it competes
        # for the interpreter with everything on that request's path).
        _state(session.kernel).warm[session.id] = threading.Thread(
            target=_prewarm,
            args=(Path(session.workspace), session.kernel.settings),
            name="ketch-sandbox-scan",
            daemon=True,
        ).start
    if not ok:
        _say_once(
            session.kernel,
            f"sandbox: {reason} for this workspace; shell commands run unsandboxed, and the assisted profile asks for every command it cannot prove harmless",
            session,
        )
    else:
        from ketch_sandbox.sessions import rules_for

        rules = rules_for(session)
        for line in (*rules.errors, *rules.notices):
            _say_once(session.kernel, f"sandbox: {line}", session)


@hookimpl
def ketch_event(session: Session, event: Any) -> None:
    """The model's first answer in a session starts its workspace scan."""
    if event.type in _ANSWERED:
        start = _state(session.kernel).warm.pop(session.id, None)
        if start is not None:
            start()


# Events that only come once a request has left: the model answering (or failing to).
_ANSWERED = frozenset(
    {"text_delta", "reasoning_delta", "tool_call", "usage", "waiting", "error", "retry", "turn_end"}
)


@hookimpl
def ketch_session_end(session: Session, reason: str) -> None:
    _state(session.kernel).sessions.pop(session.id, None)
    _state(session.kernel).warm.pop(session.id, None)
    from ketch_sandbox.sessions import EGRESS

    egress = session.stash.pop(EGRESS, None)
    if egress is not None:
        egress.close()


def view_of(
    workspace: Path,
    *,
    exposed: Callable[[Path], bool] | None = None,
    scan: bool = True,
    settings: Any = None,
    read_only: list[str] | None = None,
) -> Any:
    """The sandbox's view of ``workspace`` for one command (see view.py)."""
    import os

    from ketch.api import config_dir, state_dir
    from ketch_policy_kit.scopes import read_scope
    from ketch_sandbox.bwrap import home_of
    from ketch_sandbox.view import build

    environ = dict(os.environ)
    root = Path(os.path.realpath(workspace))

    def hint(path: Path) -> str:
        return read_scope(path, root) or f"read({path})"

    view = build(
        root,
        home=home_of(environ),
        environ=environ,
        exposed=exposed,
        hint=hint,
        protected_dirs=[config_dir()],
        hidden_dirs=[state_dir()],
        extra=_configured(root, environ, settings) if scan else (),
        scan=scan,
        also_read_only=read_only or (),
    )
    if scan:
        from ketch_sandbox.masks import git_configs_with_credentials

        masked = {m for m, _ in view.masks}
        for config in git_configs_with_credentials([*view.protect, *view.read_only]):
            if config not in masked and not (exposed is not None and exposed(config)):
                view.masks.append((config, hint(config)))
    return view


def _configured(root: Path, environ: dict[str, str], settings: Any = None) -> list[Any]:
    """What the configured hooks and MCP servers execute (the kernel's settings: whose
    hooks and MCP servers run here; none without a kernel)."""
    from ketch_policy_kit.protected import configured_paths, settings_tables

    tables = settings_tables(settings) if settings is not None else {}
    return configured_paths(root, tables, environ)


def wrap(
    argv: list[str],
    workspace: Path,
    *,
    network: bool,
    exposed: Callable[[Path], bool] | None = None,
    reporters: list[Callable[[bool], str | None]] | None = None,
    scan: bool = True,
    context: ToolContext | None = None,
    kernel: Kernel | None = None,
) -> list[str]:
    """``argv`` inside the sandbox's view of ``workspace``; with ``network``, reaching
    out only through the session's egress proxy (which needs the call's ``context``:
    without it the command has no network). ``kernel``: whose settings, sessions and
    probe (None: bwrap from PATH, no configured hooks to protect, no session)."""
    from ketch_sandbox.bwrap import command_line
    from ketch_sandbox.masks import MaskSet

    session = _session(kernel, context)
    settings = kernel.settings if kernel is not None else None
    view = view_of(
        workspace, exposed=exposed, scan=scan, settings=settings, read_only=_read_only(context)
    )
    masks = MaskSet.create()
    guard = _Guard.start(view, scan=scan, reporting=reporters is not None)
    channel = None
    try:
        inner, extra, launcher = list(argv), list[str](), list[str]()
        # the kernel's probed bwrap; without a kernel (benchmarks, tests), PATH's: no probe
        bwrap = (_probe(kernel).path if kernel is not None else None) or "bwrap"
        if network and context is not None:
            from ketch_sandbox.sessions import open_channel

            channel = open_channel(session, context, bwrap)
            if channel is not None:
                inner, extra = channel.prefix() + inner, channel.bwrap_args()
                launcher = channel.launcher()
        wrapped = launcher + command_line(inner, view, masks, extra=extra, bwrap=bwrap)
    except BaseException:
        masks.close()
        guard.report(True)
        if channel is not None:
            channel.report(True)
        raise
    if context is not None:
        from ketch_sandbox.record import record

        record(context, session, sandboxed=True, network=channel is not None, view=view)
    if reporters is not None:
        masks.watch()
        reporters.append(masks.report)
        reporters.append(guard.report)
        if channel is not None:
            reporters.append(channel.report)
    else:  # nobody will report: nothing to watch; the placeholders go when ketch exits
        _leftover(masks)
    return wrapped


class _Guard:
    """One command's protected paths: the reservations it holds while it runs, and the
    look for what it planted once it has ended (reserve.py, planted.py)."""

    def __init__(self, claim: Any = None, watch: Any = None) -> None:
        self.claim, self.watch = claim, watch

    @classmethod
    def start(cls, view: Any, *, scan: bool, reporting: bool) -> _Guard:
        import os

        if not scan or view.workspace is None:
            return cls()
        from ketch_sandbox.planted import Watch
        from ketch_sandbox.reserve import reserve
        from ketch_sandbox.trees import index_for

        index = index_for(view.workspace)
        watch = Watch.start(view.workspace, index.refresh(), view.guarded, index.refresh)
        claim = reserve(view.reserve, view.reserve_files)
        # Bind what was reserved, and what did not exist a moment ago and now does for
        # real (a reservation that failed because the name was made meanwhile).
        protected, claimed = set(view.protect), set(claim.paths)
        view.reserve = [p for p in claim.paths if p not in protected] + [
            p
            for p in view.reserve
            if p not in protected
            and p not in claimed
            and os.path.lexists(p)
            and not os.path.islink(p)
        ]
        return cls(claim, watch if reporting else None)

    def report(self, ended: bool) -> str | None:
        if not ended:
            return None
        reserved: set[tuple[int, int]] = set()
        ledger = None
        if self.claim is not None:
            reserved, ledger = self.claim.idents, self.claim.ledger
            self.claim.release()
            self.claim = None
        if self.watch is None:
            return None
        watch, self.watch = self.watch, None
        return "\n".join(watch.finish(reserved, ledger)) or None


def _session(kernel: Kernel | None, context: ToolContext | None) -> Session | None:
    """The live session a call's context belongs to."""
    if kernel is None or context is None:
        return None
    return _state(kernel).sessions.get(context.session_id)  # type: ignore[no-any-return]


def _read_only(context: ToolContext | None) -> list[str]:
    """``[sandbox] read_only``: directories the person lets commands read."""
    settings: Any = getattr(context, "settings", None)
    section = settings.section("sandbox") if hasattr(settings, "section") else {}
    paths = section.get("read_only") if isinstance(section, dict) else None
    return [str(p) for p in paths] if isinstance(paths, list) else []


_LEFTOVERS: list[Any] = []


def _leftover(masks: Any) -> None:
    if not _LEFTOVERS:
        import atexit

        atexit.register(lambda: [m.close() for m in _LEFTOVERS])
    _LEFTOVERS.append(masks)


@hookimpl
def sandbox_command(
    argv: list[str],
    workspace: Path,
    network: bool,
    exposed: Callable[[Path], bool] | None,
    reporters: list[Callable[[bool], str | None]] | None,
    context: ToolContext | None,
    kernel: Kernel | None,
) -> list[str] | None:
    if not active(kernel):
        _unwrapped(kernel, context, "the sandbox is off or bwrap cannot run here")
        return None
    tried = _state(kernel).views.get(str(Path(workspace))) if kernel is not None else None
    if tried is not None and not tried[0]:
        # bwrap refused this workspace's view: the session was told, and is not sandboxed
        _unwrapped(kernel, context, f"bwrap refused this workspace's view ({tried[1]})")
        return None
    return wrap(
        list(argv),
        Path(workspace),
        network=bool(network),
        exposed=exposed,
        reporters=reporters,
        context=context,
        kernel=kernel,
    )


def _unwrapped(kernel: Kernel | None, context: ToolContext | None, reason: str) -> None:
    if context is not None:
        from ketch_sandbox.record import record

        record(context, _session(kernel, context), sandboxed=False, reason=reason)


@hookimpl
def ketch_policy_vote(
    call: ProposedCall, snapshot: PermissionSnapshot, session: Session
) -> Vote | None:
    """Leaving the sandbox asks every time (no scope to remember); so does a sandboxed
    command's connection to a local address (every profile, unless a ``local`` rule
    names it). Network by itself does not ask: the egress proxy holds each host to the
    domain rules, and a host they do not list asks in every profile unless a ``web(HOST)``
    rule or approval names it (an allow rule for the whole ``shell`` tool does not).
    Where the managed policy requires the sandbox, running a program outside it is denied."""
    from ketch.api import Effect, Vote
    from ketch_net_kit.votes import local_reason
    from ketch_tool_kit.sandbox import SANDBOXED

    sandboxed = snapshot.facts.get(SANDBOXED) is True
    if session.kernel.settings.section("sandbox").get("required"):
        outside = [
            a
            for a in call.accesses
            if a.effect == Effect.EXECUTE and (not sandboxed or a.detail.get("sandboxed") is False)
        ]
        if outside or (Effect.EXECUTE in call.effects and not sandboxed):
            return Vote(
                decision="deny",
                reason="the managed policy requires the sandbox, and this would run a program outside it",
                plugin="sandbox",
                scope=None,
            )
    if not sandboxed:
        return None  # no sandbox: nothing to leave, and the network is not confined anyway

    reasons: list[str] = []
    scopes: list[str | None] = []
    for access in call.accesses:
        if access.effect == Effect.NETWORK and access.detail.get("via") == "sandbox":
            local = local_reason(access)
            if local:
                reasons.append(f"a sandboxed command {local}")
                scopes.append(None)
                continue
            from ketch_sandbox.sessions import unlisted_host

            unlisted = unlisted_host(call, access, snapshot)
            if unlisted is not None:
                reasons.append(unlisted[0])
                scopes.append(unlisted[1])
            continue
        if access.effect != Effect.EXECUTE:
            continue
        why = str(access.detail.get("reason") or "").strip()
        said = f" (the model says: {why[:300]})" if why else ""
        if access.detail.get("sandboxed") is False:
            reasons.append(
                f"runs OUTSIDE the sandbox: it can read your secrets, change any of your files and use the network{said}"
            )
            scopes.append(None)
    if not reasons:
        return None
    scope = scopes[0] if len(scopes) == 1 else None
    return Vote(
        decision="ask", reason="; ".join(reasons), plugin="sandbox", scope=scope, origin="sandbox"
    )


@hookimpl
def ketch_before_tool_effect(session: Session, call: ProposedCall) -> None:
    """A write the person authorized (a file tool's) is not something a running
    sandboxed command planted: remember it for the look after each command."""
    from ketch_tool_kit.sandbox import RUNS_SANDBOXED

    if not session.stash.get(SANDBOXED, False) or RUNS_SANDBOXED in call.capabilities:
        return
    from ketch.api import Effect
    from ketch_policy_kit.paths import resolve
    from ketch_sandbox.planted import accept

    root = resolve(session.workspace)
    for access in call.accesses:
        if access.effect == Effect.WRITE and access.target:
            accept(root, resolve(root / access.target))


@hookimpl
def ketch_tool_result(session: Session, call: ProposedCall, result: Any) -> Any:
    """A sandboxed command that failed: say what the sandbox hid that it named
    (:mod:`ketch_sandbox.hidden`)."""
    from ketch.api import Effect

    if result.ok or not session.stash.get(SANDBOXED, False) or not active(session.kernel):
        return None
    runs = [a for a in call.accesses if a.effect == Effect.EXECUTE]
    if not runs or any(a.detail.get("sandboxed") is False for a in runs):
        return None
    import os

    from ketch.api import user_config_file
    from ketch_sandbox.hidden import explain

    section = session.kernel.settings.section("sandbox")
    extra = section.get("read_only") if isinstance(section, dict) else None
    view = view_of(
        Path(session.workspace),
        scan=False,
        read_only=[str(p) for p in extra] if isinstance(extra, list) else None,
    )
    note = explain(
        result.output,
        view,
        Path(os.path.realpath(session.workspace)),
        os.environ,
        str(user_config_file()),
    )
    if not note:
        return None
    return result.model_copy(update={"output": f"{result.output}\n{note}"})
