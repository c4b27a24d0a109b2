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

Inside the workspace: every protected path (:func:`guard`: every ``.git`` -- nested
repositories, submodule ``.git`` files and the gitdirs they point to --, ``.ketch``,
``.claude``, ``.vscode``..., hooks directories, config includes, configured scripts)
is read-only, existing or reserved (``reserve.py``); secrets (whatever
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
from ketch_policy_kit.protected import (
    GIT_WHY,
    INCLUDE_WHY,
    ROOT_NAMES,
    Protected,
    gitdir_of,
    protected_name,
    repository_paths,
)
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


# Protected paths reserved as empty files, not directories (see reserve.py).
FILE_KINDS = frozenset({INCLUDE_WHY})


@dataclass
class View:
    """The mounts of one sandbox, in the order bwrap applies them."""

    symlinks: list[tuple[str, Path]] = field(default_factory=list)  # (target text, link)
    system: list[Path] = field(default_factory=list)  # read-only, before /tmp and HOME are made
    read_only: list[Path] = field(default_factory=list)  # host trees, read-only
    home_tmpfs: Path | None = None
    workspace: Path | None = None  # writable
    protect: list[Path] = field(default_factory=list)  # read-only, inside what is bound
    # Protected paths that do not exist yet: each is made an empty directory for the
    # command's lifetime (reserve.py) and bound read-only, so nothing can create it.
    reserve: list[Path] = field(default_factory=list)
    reserve_files: set[Path] = field(default_factory=set)  # of those, the ones made files
    guarded: dict[Path, str] = field(default_factory=dict)  # every protected path: why
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


def _linked_gitdirs(workspace: Path) -> list[Path]:
    """A linked worktree's gitdir and its common dir (outside the workspace): git needs them."""
    dotgit = workspace / ".git"
    if not dotgit.is_file():
        return []
    gitdir = gitdir_of(dotgit)
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
    extra: Iterable[Protected] = (),
    scan: bool = True,
    also_read_only: Iterable[str] = (),
) -> View:
    """The view for one command in ``workspace``; ``exposed(path)``: the person allowed
    reading that secret, so it is not masked; ``hint(path)``: the rule that would.
    ``extra``: more protected paths (what configured hooks and MCP servers execute).
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
    # Inside the workspace: protected paths read-only, secrets masked, sockets covered.
    found = index_for(ws).refresh() if scan else Found()
    if scan:
        guard(view, ws, found, extra, environ)
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


def guard(
    view: View, ws: Path, found: Found, extra: Iterable[Protected], environ: Mapping[str, str]
) -> None:
    """Protected paths (ketch_policy_kit.protected) read-only, existing or not: every
    ``.git`` (and the git directories ``.git`` files point to inside the workspace),
    ``.ketch``, and the other protected names the index found at any depth; each
    repository's hooks directory and config includes; ``extra``; and, at the workspace
    root, every protected name. Those at known places (the root's names, hooks
    directories, includes, ``extra``) go to ``view.reserve`` too, existing or not:
    absent ones are made for the command, and existing ones may be reservations
    (reserve.py decides). A protected name that is a symbolic link keeps its target
    read-only, where that is in the workspace (the link itself can be replaced:
    :mod:`ketch_sandbox.planted` sees that)."""
    extra = tuple(extra)
    # Every input of the plan (``extra`` carries the kernel's configured paths; git
    # runs with PATH and HOME): no kernel gets a plan made for another's settings.
    home_path = (environ.get("HOME", ""), environ.get("PATH", ""))
    key = (ws, found, extra, home_path, _repository_stamps(found, environ))
    plan = _PLANS.get(ws)
    if plan is None or plan[0] != key:
        plan = _PLANS[ws] = (key, _plan(ws, found, extra, environ))
    protect, reserve, files, guarded = plan[1]
    view.protect += protect
    view.reserve += reserve
    view.reserve_files |= files
    view.guarded.update(guarded)


# The last plan per workspace, with its inputs: the same index result, configured
# paths, environment and repository configs give the same plan (with nothing changed,
# a command pays nothing; a kernel with other settings makes its own).
_PLANS: dict[
    Path, tuple[tuple[object, ...], tuple[list[Path], list[Path], set[Path], dict[Path, str]]]
] = {}


def _repository_stamps(found: Found, environ: Mapping[str, str]) -> tuple[object, ...]:
    """What a change of any repository's config changes (a git directory's mtime moves
    when git rewrites its config), and the person's own git config."""
    home = Path(environ.get("HOME") or os.path.expanduser("~"))
    stamps: list[object] = []
    for path in [*found.git, home / ".gitconfig", home / ".config" / "git" / "config"]:
        try:
            info = os.stat(path)
            stamps.append((info.st_ino, info.st_mtime_ns))
        except OSError:
            stamps.append(None)
    return tuple(stamps)


def _plan(
    ws: Path, found: Found, extra: tuple[Protected, ...], environ: Mapping[str, str]
) -> tuple[list[Path], list[Path], set[Path], dict[Path, str]]:
    wanted: dict[Path, str] = {}
    known_places: set[Path] = set()
    for dotgit in found.git:
        wanted[dotgit] = GIT_WHY
        gitdir = gitdir_of(dotgit)
        if gitdir is not None and gitdir.is_dir() and is_within(gitdir, ws):
            wanted.setdefault(gitdir, GIT_WHY)
        if gitdir is not None:
            for item in repository_paths(gitdir, dotgit.parent, ws, environ):
                wanted.setdefault(item.path, item.why)
                known_places.add(item.path)
    for path in [*found.ketch, *found.protected]:
        wanted.setdefault(path, protected_name(path.name) or GIT_WHY)
    for link in found.links:
        target = _real(link)
        if is_within(target, ws) and target != ws and os.path.exists(target):
            wanted.setdefault(target, protected_name(link.name) or GIT_WHY)
    for name in ROOT_NAMES:
        wanted.setdefault(ws / name, protected_name(name) or GIT_WHY)
        known_places.add(ws / name)
    for item in extra:
        wanted.setdefault(item.path, item.why)
        known_places.add(item.path)
    links = set(found.links)
    protect: list[Path] = []
    reserve: list[Path] = []
    files: set[Path] = set()
    guarded: dict[Path, str] = {}
    covered: set[Path] = set()  # read-only, or reserved: nothing can be made beneath
    for path, why in sorted(wanted.items(), key=lambda kv: (len(kv[0].parts), str(kv[0]))):
        if path in links or os.path.islink(path):
            continue  # a mount would land on wherever it points
        if not is_within(path, ws) or path == ws:
            continue
        guarded[path] = why
        exists = os.path.lexists(path)
        if exists:
            protect.append(path)
        elif any(parent in covered for parent in path.parents):
            continue  # nothing read-only above it stops its creation
        if path in known_places:
            reserve.append(path)
            if why in FILE_KINDS or why.startswith("run by the configured"):
                files.add(path)
        covered.add(path)
    return protect, reserve, files, guarded
