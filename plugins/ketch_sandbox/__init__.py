"""The bubblewrap sandbox for shell commands (Linux): the boundary, whatever the analyser says.

Tools that run programs call ``ketch_sandbox_command(argv, workspace, network,
exposed, reporters)`` right before starting one; this plugin returns the argv wrapped
in bwrap. What the sandbox shows, hides and masks is in ``view.py`` and
docs/sandbox.md. bwrap is checked once per process when the kernel is configured, and
each session's workspace view is tried once when the session starts: when bwrap is
missing, cannot create namespaces, or refuses the view, ketch says so once and the
session is not ``sandboxed`` (commands then run unwrapped, and the policy allows
without asking only what it can prove harmless).

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
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ketch import hookimpl

if TYPE_CHECKING:  # pragma: no cover
    from ketch.kernel import Kernel
    from ketch.policy import PermissionSnapshot, ProposedCall, Vote
    from ketch.session import Session
    from ketch.settings import SettingsSection
    from ketch.tools import ToolContext

# The probe and the views are facts of this machine and workspace: kept per process.
# Whether the sandbox is on is a setting: kept per workspace (one process may serve
# several kernels, as ``ketch acp`` does, one per editor session).
# Live sessions by id (the sandbox hook gets the call's context, which names its session),
# and each workspace's settings (whose hooks and MCP servers run there).
_state: dict[str, Any] = {
    "probe": None, "off": set(), "views": {}, "said": set(), "sessions": {}, "settings": {}
}  # fmt: skip


def _probe() -> Any:
    if _state["probe"] is None:
        from ketch_sandbox.bwrap import probe

        _state["probe"] = probe()
    return _state["probe"]


def active(workspace: Path | str | None = None) -> bool:
    """Whether commands in ``workspace`` run sandboxed (bwrap works, the sandbox is on)."""
    if workspace is not None and str(Path(workspace)) in _state["off"]:
        return False
    return bool(_probe().available)


def _say_once(kernel: Kernel, message: str, session: Session | None = None) -> None:
    if message in _state["said"]:
        return
    _state["said"].add(message)
    if session is None:
        kernel.notices.append(message)
    else:
        from ketch.events import NoticeEvent

        kernel.emit(session, NoticeEvent(level="warning", message=message))


@hookimpl
def ketch_register_settings(register: Callable[[SettingsSection], None]) -> None:
    from ketch_sandbox.settings import SANDBOX

    register(SANDBOX)


@hookimpl
def ketch_configure(kernel: Kernel) -> None:
    section = kernel.settings.section("sandbox")
    enabled = section.get("enabled", True) is not False
    # Whose hooks and MCP servers run here: what they execute is protected (view.guard).
    _state["settings"][str(Path(kernel.workspace).resolve())] = kernel.settings
    (_state["off"].discard if enabled else _state["off"].add)(str(Path(kernel.workspace)))
    if not enabled:
        _say_once(
            kernel, "sandbox: off ([sandbox] enabled = false); shell commands run unsandboxed"
        )
        return
    found = _probe()
    if not found.available:
        _say_once(
            kernel,
            f"sandbox: {found.reason}; shell commands run unsandboxed, and the assisted profile asks for every command it cannot prove harmless",
        )


def works_in(workspace: Path) -> tuple[bool, str]:
    """Whether bwrap accepts the full view of ``workspace`` (tried once per workspace)."""
    key = str(workspace)
    if key not in _state["views"]:
        from ketch_sandbox.bwrap import trial

        # The mounts, without what the indexes find (same kinds of mount): cheap.
        masks_held: list[Callable[[bool], str | None]] = []
        argv = wrap(["true"], workspace, network=False, reporters=masks_held, scan=False)
        result = trial(argv, _probe().path)
        for reporter in masks_held:
            reporter(True)
        _state["views"][key] = (result.available, result.reason)
    return _state["views"][key]  # type: ignore[no-any-return]


def _prewarm(workspace: Path) -> None:
    """Scan the workspace and the toolchains now, so the first command does not wait."""
    import contextlib

    with contextlib.suppress(Exception):  # the first command scans again, and reports
        view_of(workspace)


@hookimpl
def ketch_session_start(session: Session) -> None:
    _state["sessions"][session.id] = session
    if not active(session.workspace):
        session.sandboxed = False
        return
    import contextlib

    from ketch_sandbox.reserve import sweep

    with contextlib.suppress(Exception):  # a ketch that was killed may have left some
        sweep()
    ok, reason = works_in(Path(session.workspace))
    session.sandboxed = ok
    if ok:
        import threading

        threading.Thread(
            target=_prewarm, args=(Path(session.workspace),), name="ketch-sandbox-scan", daemon=True
        ).start()
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
def ketch_session_end(session: Session, reason: str) -> None:
    _state["sessions"].pop(session.id, None)
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

    from ketch.paths import config_dir, state_dir
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
    """What the configured hooks and MCP servers execute (the call's session's settings,
    else those of the last kernel configured for this workspace)."""
    from ketch_policy_kit.protected import configured_paths, settings_tables

    if settings is None:
        settings = _state["settings"].get(str(root))
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
) -> list[str]:
    """``argv`` inside the sandbox's view of ``workspace``; with ``network``, reaching
    out only through the session's egress proxy (which needs the call's ``context``:
    without it the command has no network)."""
    from ketch_sandbox.bwrap import command_line
    from ketch_sandbox.masks import MaskSet

    session = _state["sessions"].get(context.session_id) if context is not None else None
    settings = session.kernel.settings if session is not None else None
    view = view_of(
        workspace, exposed=exposed, scan=scan, settings=settings, read_only=_read_only(context)
    )
    masks = MaskSet.create()
    guard = _Guard.start(view, scan=scan, reporting=reporters is not None)
    channel = None
    try:
        inner, extra, launcher = list(argv), list[str](), list[str]()
        bwrap = _probe().path or "bwrap"
        if network and context is not None:
            from ketch_sandbox.sessions import open_channel

            channel = open_channel(_state["sessions"].get(context.session_id), context, bwrap)
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

        session = _state["sessions"].get(context.session_id)
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
def ketch_sandbox_command(
    argv: list[str],
    workspace: Path,
    network: bool,
    exposed: Callable[[Path], bool] | None,
    reporters: list[Callable[[bool], str | None]] | None,
    context: ToolContext | None,
) -> list[str] | None:
    if not active(workspace):
        _unwrapped(context, "the sandbox is off or bwrap cannot run here")
        return None
    tried = _state["views"].get(str(Path(workspace)))
    if tried is not None and not tried[0]:
        # bwrap refused this workspace's view: the session was told, and is not sandboxed
        _unwrapped(context, f"bwrap refused this workspace's view ({tried[1]})")
        return None
    return wrap(
        list(argv),
        Path(workspace),
        network=bool(network),
        exposed=exposed,
        reporters=reporters,
        context=context,
    )


def _unwrapped(context: ToolContext | None, reason: str) -> None:
    if context is not None:
        from ketch_sandbox.record import record

        record(context, _state["sessions"].get(context.session_id), sandboxed=False, reason=reason)


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
    from ketch.policy import Vote
    from ketch.tools import Effect
    from ketch_net_kit.votes import local_reason

    if session.kernel.settings.section("sandbox").get("required"):
        outside = [
            a
            for a in call.accesses
            if a.effect == Effect.EXECUTE
            and (not snapshot.sandboxed or a.detail.get("sandboxed") is False)
        ]
        if outside or (Effect.EXECUTE in call.effects and not snapshot.sandboxed):
            return Vote(
                decision="deny",
                reason="the managed policy requires the sandbox, and this would run a program outside it",
                plugin="sandbox",
                scope=None,
            )
    if not snapshot.sandboxed:
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
    if not session.sandboxed or call.plugin == "shell":
        return
    from ketch.tools import Effect
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
    from ketch.tools import Effect

    if result.ok or not session.sandboxed or not active(session.workspace):
        return None
    runs = [a for a in call.accesses if a.effect == Effect.EXECUTE]
    if not runs or any(a.detail.get("sandboxed") is False for a in runs):
        return None
    import os

    from ketch.paths import user_config_file
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
