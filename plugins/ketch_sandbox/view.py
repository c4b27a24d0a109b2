"""The sandbox's view of the filesystem, built up from what programs need.

Visible, read-only: the system directories (``/usr``, ``/bin``, ``/sbin``, ``/lib*``,
``/etc``; the merged-/usr symlinks kept as symlinks), ``/sys/devices/system/cpu`` (CPU
counts), every directory on ``PATH`` and the toolchain it belongs to (``~/.cargo`` for
``~/.cargo/bin``, ``~/.pyenv`` for ``~/.pyenv/shims``; ``~/.rustup`` with cargo), the
toolchain homes named by ``RUSTUP_HOME``/``CARGO_HOME``/``PYENV_ROOT``/... , the
prefixes of ketch's own Python (``sys.prefix``, ``sys.base_prefix``), and the git
directory of a workspace that is a linked worktree. Writable: the workspace, and a
private, empty ``/tmp``, ``/var/tmp`` and ``$HOME`` (tmpfs, gone when the command ends).
New: ``/dev`` (null, zero, random, tty, shm) and ``/proc`` (this sandbox's processes).

Never visible: ``/run``, ``/var/run``, ``/var``, ``$XDG_RUNTIME_DIR``, the host's
``/tmp`` and the rest of HOME -- where sockets live (D-Bus, the Secret Service, ssh and
gpg agents, docker). A tree that would contain one of them (``/``, HOME itself, an
ancestor of the workspace) is never bound whole. Inside what is bound, every socket
and FIFO is covered by an empty file (a host service listening there would otherwise
be reachable through a read-only bind), found by :mod:`ketch_sandbox.trees`.

Inside the workspace: every ``.git`` (nested repositories, submodule ``.git`` files,
and the gitdirs they point to) and every ``.ketch`` is read-only; secrets (whatever
``looks_secret`` matches, ignored files included) are masked unless the person
allowed reading them. Home secrets (``~/.ssh``, ``~/.aws``, ``~/.gnupg``,
``~/.netrc``, keyrings, cloud and registry credentials, shell histories) are hidden
by their real paths wherever a bound tree would show them, symlinks followed. In
``/etc``, what the system keeps from other users (not world-readable: ``shadow``,
host keys, ``ssl/private``) is hidden, so a sandbox running as root shows /etc as an
ordinary user sees it. ketch's own config directory is read-only and its state
directory (the session store) hidden, when a bound tree holds them.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ketch_policy_kit.paths import HOME_SENSITIVE, is_within
from ketch_sandbox.trees import Found, index_for

SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
CPU_INFO = "/sys/devices/system/cpu"
# Where host services keep their sockets: never bound, nor anything inside them.
SOCKET_HOMES = ("/run", "/var/run", "/var/lock", "/tmp", "/var/tmp", "/dev", "/proc", "/sys")
# Bound only when PATH names something inside them, never whole.
NEVER_WHOLE = ("/", "/home", "/root", "/var", "/opt", "/srv", "/mnt", "/media", "/usr/local")
TOOLCHAIN_VARS = (
    "RUSTUP_HOME",
    "CARGO_HOME",
    "PYENV_ROOT",
    "NVM_DIR",
    "VOLTA_HOME",
    "GOROOT",
    "JAVA_HOME",
    "SDKMAN_DIR",
    "CONDA_PREFIX",
    "VIRTUAL_ENV",
)
BIN_NAMES = ("bin", "sbin", "shims")
# Hidden by their real paths wherever a bound tree shows them.
HOME_SECRET_DIRS = (
    ".ssh", ".gnupg", ".aws", ".azure", ".kube", ".docker", ".password-store", ".config/gcloud", ".config/gh",
    ".config/hub", ".config/op", ".local/share/keyrings", ".mozilla", ".config/google-chrome", ".config/chromium",
    ".thunderbird", ".gem", ".terraform.d", ".vault.d",
)  # fmt: skip
HOME_SECRET_FILES = (
    ".netrc", ".pgpass", ".git-credentials", ".pypirc", ".npmrc", ".yarnrc", ".cargo/credentials",
    ".cargo/credentials.toml", ".vault-token", ".config/git/credentials", ".m2/settings-security.xml",
    ".gradle/gradle.properties", ".bash_history", ".zsh_history", ".python_history", ".psql_history",
    ".mysql_history", ".node_repl_history", ".lesshst", ".viminfo",
)  # fmt: skip
# Read-only when the workspace holds HOME: they run code later, outside any sandbox.
HOME_STARTUP = (
    *sorted(HOME_SENSITIVE),
    ".gitconfig",
    ".config/git",
    ".config/autostart",
    ".config/systemd",
    ".config/environment.d",
    ".local/bin",
    "bin",
)


@dataclass
class View:
    """The mounts of one sandbox, in the order bwrap applies them."""

    symlinks: list[tuple[str, Path]] = field(default_factory=list)  # (target text, link)
    system: list[Path] = field(default_factory=list)  # read-only, before /tmp and HOME are made
    read_only: list[Path] = field(default_factory=list)  # host trees, read-only
    home_tmpfs: Path | None = None
    workspace: Path | None = None  # writable
    protect: list[Path] = field(default_factory=list)  # read-only, inside what is bound
    masks: list[tuple[Path, str]] = field(default_factory=list)  # (secret, rule that exposes it)
    cover: list[Path] = field(
        default_factory=list
    )  # sockets/FIFOs/private files: an empty file over each
    hide: list[Path] = field(default_factory=list)  # directories: an empty tmpfs over each


def _real(path: str | os.PathLike[str]) -> Path:
    return Path(os.path.realpath(path))


def _forbidden(path: Path, home: Path, workspace: Path, runtime: Path | None) -> bool:
    """A tree that must never be bound as a whole."""
    if (
        str(path) in NEVER_WHOLE
        or path == home
        or is_within(home, path)
        or is_within(workspace, path)
    ):
        return True
    if runtime is not None and (is_within(path, runtime) or is_within(runtime, path)):
        return True
    for socket_home in SOCKET_HOMES:
        base = Path(socket_home)
        if path == base or is_within(base, path):
            return True  # /tmp itself, or an ancestor of /run
        if socket_home in ("/run", "/var/run", "/var/lock", "/dev", "/proc", "/sys") and is_within(
            path, base
        ):
            return True
    return False


def toolchains(environ: Mapping[str, str], home: Path, workspace: Path) -> list[Path]:
    """The host trees programs on PATH need, read-only (system dirs and the workspace aside)."""
    key = (
        home,
        workspace,
        *(environ.get(v, "") for v in ("PATH", "XDG_RUNTIME_DIR", *TOOLCHAIN_VARS)),
    )
    cached = _TOOLCHAINS.get(key)
    if cached is None or not all(p.is_dir() for p in cached):
        cached = _TOOLCHAINS[key] = _toolchains(environ, home, workspace)
    return list(cached)


_TOOLCHAINS: dict[tuple[object, ...], list[Path]] = {}


def _toolchains(environ: Mapping[str, str], home: Path, workspace: Path) -> list[Path]:
    runtime = _real(environ["XDG_RUNTIME_DIR"]) if environ.get("XDG_RUNTIME_DIR") else None
    wanted: list[Path] = []
    for entry in environ.get("PATH", "").split(os.pathsep):
        if not entry or not os.path.isabs(entry) or not os.path.isdir(entry):
            continue
        path = _real(entry)
        wanted.append(path)
        if path.name in BIN_NAMES:
            prefix = path.parent
            if prefix == home / ".local":
                wanted.append(prefix / "lib")  # python user installs, not ~/.local/share
            else:
                wanted.append(prefix)
            if prefix == home / ".cargo" and (home / ".rustup").is_dir():
                wanted.append(home / ".rustup")
    for var in TOOLCHAIN_VARS:
        value = environ.get(var)
        if value and os.path.isabs(value) and os.path.isdir(value):
            wanted.append(_real(value))
    for python in {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}:
        wanted.append(_real(python))
    kept: list[Path] = []
    for path in sorted(set(wanted), key=lambda p: (len(p.parts), str(p))):
        if not path.is_dir() or _forbidden(path, home, workspace, runtime):
            continue
        if any(
            is_within(path, Path(d))
            for d in SYSTEM_DIRS
            if os.path.isdir(d) and not os.path.islink(d)
        ):
            continue  # already visible
        if is_within(path, workspace) or any(is_within(path, k) for k in kept):
            continue
        kept.append(path)
    return kept


def _outside_dependencies(
    view: View,
    ws: Path,
    bound: list[Path],
    home: Path,
    environ: Mapping[str, str],
    exposed: Callable[[Path], bool] | None,
    hint: Callable[[Path], str] | None,
    scan: bool,
    also: Iterable[str],
) -> list[Path]:
    """Editable installs, path dependencies and ``[sandbox] read_only`` directories
    outside the workspace, read-only (:mod:`ketch_sandbox.dependencies`)."""
    from ketch_sandbox.dependencies import add_to

    runtime = _real(environ["XDG_RUNTIME_DIR"]) if environ.get("XDG_RUNTIME_DIR") else None
    return add_to(
        view,
        ws,
        bound,
        home=home,
        environ=environ,
        forbidden=lambda path: _forbidden(path, home, ws, runtime),
        hidden_homes=[home / rel for rel in HOME_SECRET_DIRS],
        exposed=exposed,
        hint=hint,
        scan=scan,
        also=also,
    )


def _gitdir_of(dotgit_file: Path) -> Path | None:
    """Where a ``.git`` file points (``gitdir: ...``), resolved."""
    try:
        first = dotgit_file.read_text(encoding="utf-8", errors="replace").splitlines()[0]
    except (OSError, IndexError):
        return None
    if not first.startswith("gitdir:"):
        return None
    target = Path(first.removeprefix("gitdir:").strip())
    return _real(target if target.is_absolute() else dotgit_file.parent / target)


def _linked_gitdirs(workspace: Path) -> list[Path]:
    """A linked worktree's gitdir and its common dir (outside the workspace): git needs them."""
    dotgit = workspace / ".git"
    if not dotgit.is_file():
        return []
    gitdir = _gitdir_of(dotgit)
    if gitdir is None or not gitdir.is_dir() or is_within(gitdir, workspace):
        return []
    found = [gitdir]
    common = gitdir / "commondir"
    if common.is_file():
        text = common.read_text(encoding="utf-8", errors="replace").strip()
        found.append(_real(gitdir / text))
    return found


def build(
    workspace: Path,
    *,
    home: Path,
    environ: Mapping[str, str],
    exposed: Callable[[Path], bool] | None = None,
    hint: Callable[[Path], str] | None = None,
    protected_dirs: Iterable[Path] = (),
    hidden_dirs: Iterable[Path] = (),
    scan: bool = True,
    also_read_only: Iterable[str] = (),
) -> View:
    """The view for one command in ``workspace``; ``exposed(path)``: the person allowed
    reading that secret, so it is not masked; ``hint(path)``: the rule that would.
    ``scan=False`` leaves out what the tree indexes find (for trying the mounts, not
    for running anything)."""
    ws = _real(workspace)
    home = _real(home)
    view = View()
    for name in SYSTEM_DIRS:
        if os.path.islink(name):
            view.symlinks.append((os.readlink(name), Path(name)))
        elif os.path.isdir(name):
            view.system.append(Path(name))
    if os.path.isdir(CPU_INFO):
        view.system.append(Path(CPU_INFO))
    resolv = Path("/etc/resolv.conf")
    if resolv.is_symlink() and resolv.is_file():
        target = _real(resolv)
        if not any(is_within(target, Path(d)) for d in SYSTEM_DIRS):
            view.system.append(target)  # one regular file, whatever directory it is in
    if not is_within(home, ws) and home != Path("/"):
        view.home_tmpfs = home
    trees = toolchains(environ, home, ws)
    linked = [g for g in _linked_gitdirs(ws) if not any(is_within(g, t) for t in trees)]
    view.read_only += trees + linked
    view.workspace = ws

    bound = [*trees, *linked, ws]
    bound += _outside_dependencies(
        view, ws, bound, home, environ, exposed, hint, scan, also_read_only
    )
    # Inside the workspace: .git and .ketch read-only, secrets masked, sockets covered.
    found = index_for(ws).refresh() if scan else Found()
    view.protect += list(found.git) + list(found.ketch)
    for dotgit in found.git:
        gitdir = _gitdir_of(dotgit) if dotgit.is_file() else None
        if gitdir is not None and gitdir.is_dir() and is_within(gitdir, ws):
            view.protect.append(gitdir)
    for secret in found.secrets:
        if exposed is not None and exposed(secret):
            continue
        view.masks.append((secret, hint(secret) if hint else f"read({secret})"))
    view.cover += found.sockets
    for tree in [*trees, *linked] if scan else []:
        view.cover += index_for(tree, secrets=False).refresh().sockets
    etc = Path("/etc")
    if etc in view.system and scan:
        private = index_for(etc, secrets=False, private=True).refresh()
        view.cover += private.sockets
        for path in private.private:
            (view.hide if path.is_dir() else view.cover).append(path)
    # Home secrets and ketch's own files, wherever a bound tree would show them.
    # (By real path only: a mount on a symlink would land on wherever it points.)
    for rel in HOME_SECRET_DIRS:
        path = _real(home / rel)
        if path.is_dir() and any(is_within(path, b) for b in bound):
            view.hide.append(path)
    for rel in HOME_SECRET_FILES:
        path = _real(home / rel)
        if path.is_file() and any(is_within(path, b) for b in bound):
            view.cover.append(path)
    if is_within(home, ws):
        for rel in HOME_STARTUP:
            path = home / rel
            if path.exists() and not path.is_symlink():
                view.protect.append(path)
    for path in protected_dirs:
        real = _real(path)
        if real.exists() and any(is_within(real, b) for b in bound):
            view.protect.append(real)
    for path in hidden_dirs:
        real = _real(path)
        if real.is_dir() and any(is_within(real, b) for b in bound):
            view.hide.append(real)
    view.protect = sorted(set(view.protect), key=lambda p: (len(p.parts), str(p)))
    view.cover = sorted(set(view.cover))
    view.hide = sorted(set(view.hide), key=lambda p: (len(p.parts), str(p)))
    # A hidden or masked tree needs nothing beneath it covered or protected.
    gone = [*view.hide, *(m for m, _ in view.masks)]
    view.cover = [p for p in view.cover if not any(is_within(p, g) and p != g for g in gone)]
    return view
