"""What a directory tree holds that the sandbox must treat specially, kept up to date cheaply.

A sandboxed command sees some host trees (the workspace, toolchains, /etc). Before it
starts, the sandbox needs to know, for each tree, where its secrets are (to mask them),
its sockets and FIFOs (a host service listening there would be reachable even through
a read-only bind), its ``.git`` directories and files and ``.ketch`` directories (made
read-only), and -- for /etc -- what the system itself keeps private (not readable by
others). Ignored files count: ``.env`` usually is gitignored. A secret is known by its
name or its content (:mod:`ketch_secret_kit`; a file's classification is cached by its
identity, so a directory listed again costs a ``stat`` per file, and a file written in
place -- inotify's CLOSE_WRITE -- is classified again).

The first scan walks the whole tree (``os.scandir``: file types come with the
directory entries, so only the odd entry costs a ``stat``) and puts an inotify watch
on every directory *before* listing it, so nothing created after the listing is
missed. A later scan reads the queued events and lists again only the directories
they name, whoever changed them (a sandboxed command, the person's editor, another
program); with every directory watched and no event queued, it costs nothing at all.

Where inotify is unavailable, its queue overflowed, or the tree needs more watches
than :data:`MAX_WATCHES` (a share of the system's limit, so editors keep theirs), the
index falls back to a ``stat`` of every known directory, listing again those whose
mtime or inode changed (creating, removing or renaming an entry always changes its
directory's mtime), and any changed within :data:`RACY` seconds of being listed (a
coarse file-system clock could hide a change made in the same tick: git's "racy" rule).
"""

from __future__ import annotations

import contextlib
import os
import stat
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from ketch_policy_kit.protected import protected_name
from ketch_secret_kit import SECRET_DIRS, content_secret, secret_name

RACY = 2.0  # seconds


def _watch_budget() -> int:
    try:
        with open("/proc/sys/fs/inotify/max_user_watches", encoding="ascii") as handle:
            return max(1000, int(handle.read().strip()) // 4)
    except (OSError, ValueError):
        return 8192


MAX_WATCHES = _watch_budget()


@dataclass(frozen=True)
class Found:
    """Absolute paths, each sorted."""

    secrets: tuple[Path, ...] = ()  # secret-looking files, and directories whose every file is one
    sockets: tuple[Path, ...] = ()  # sockets and FIFOs
    git: tuple[Path, ...] = ()  # .git directories and .git files
    ketch: tuple[Path, ...] = ()  # .ketch directories
    # Other protected names (.claude, .vscode, .envrc, ...: ketch_policy_kit.protected),
    # directories and files; and entries of any protected name that are symbolic links.
    protected: tuple[Path, ...] = ()
    links: tuple[Path, ...] = ()
    private: tuple[Path, ...] = ()  # not readable by others (with ``private=True``)
    directories: int = 0


@dataclass
class _Dir:
    path: str
    ident: tuple[int, int] = (0, 0)  # (st_dev, st_ino)
    mtime_ns: int = -1
    listed_ns: int = 0
    wd: int | None = None
    dirty: bool = True
    # name -> secret | socket | git | ketch | protected | link | private ("+" joins two)
    marks: dict[str, str] = field(default_factory=dict)
    subdirs: dict[str, _Dir] = field(default_factory=dict)
    all_secret: bool = False  # inside a .ssh, .aws, ...: every file is a secret


class _Watcher:
    """inotify over the tree's directories (None when it cannot be used)."""

    def __init__(self) -> None:
        from inotify_simple import INotify, flags

        self.flags = flags
        self.mask = (
            flags.CREATE
            | flags.DELETE
            | flags.MOVED_FROM
            | flags.MOVED_TO
            | flags.ATTRIB
            | flags.CLOSE_WRITE  # a file's content changed: it may hold a secret now
            | flags.DELETE_SELF
            | flags.MOVE_SELF
            | flags.ONLYDIR
        )
        self.inotify = INotify(nonblocking=True)
        self.nodes: dict[int, _Dir] = {}

    def add(self, node: _Dir) -> bool:
        if len(self.nodes) >= MAX_WATCHES:
            return False
        try:
            wd = self.inotify.add_watch(node.path, self.mask)
        except OSError:
            return False
        node.wd = wd
        self.nodes[wd] = node
        return True

    def remove(self, node: _Dir) -> None:
        # Watches are per inode: a directory moved within the tree got the same watch
        # back under its new path, so only a watch still pointing at this node goes.
        if node.wd is not None and self.nodes.get(node.wd) is node:
            del self.nodes[node.wd]
            with contextlib.suppress(OSError):
                self.inotify.rm_watch(node.wd)
        node.wd = None

    def drain(self) -> tuple[bool, int]:
        """Mark the directories events name as dirty: (False when events were lost, how many)."""
        complete = True
        events = self.inotify.read(timeout=0)
        for event in events:
            if event.mask & self.flags.Q_OVERFLOW:
                complete = False
                continue
            node = self.nodes.get(event.wd)
            if node is None:
                continue
            node.dirty = True
            if event.mask & (self.flags.IGNORED | self.flags.DELETE_SELF):  # the watch is gone
                self.nodes.pop(event.wd, None)
                node.wd = None
        return complete, len(events)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.inotify.close()


class TreeIndex:
    """The special entries of one tree, refreshed on demand (thread-safe)."""

    def __init__(
        self, root: Path, *, secrets: bool = True, private: bool = False, watch: bool = True
    ) -> None:
        self.root = os.fspath(root)
        self.secrets = secrets
        self.private = private
        self._top: _Dir | None = None
        self._lock = threading.Lock()
        self._watcher: _Watcher | None = None
        if watch:
            try:
                self._watcher = _Watcher()
            except (ImportError, OSError):
                self._watcher = None
        self.last_scan_s = 0.0
        self.relisted = 0
        self._found: Found | None = None
        self._settled = False  # the last scan left every directory watched

    @property
    def watching(self) -> bool:
        return self._watcher is not None

    def refresh(self) -> Found:
        with self._lock:
            started = time.perf_counter()
            self.relisted = 0
            trusted, events = False, 0
            if self._watcher is not None and self._top is not None:
                trusted, events = self._watcher.drain()
            if trusted and not events and self._settled and self._found is not None:
                return self._found  # every directory watched, not one event: nothing changed
            self._top = self._update(self.root, self._top, trusted)
            self._found, unwatched = self._collect()
            self._settled = self._watcher is not None and unwatched == 0
            self.last_scan_s = time.perf_counter() - started
            return self._found

    def close(self) -> None:
        if self._watcher is not None:
            self._watcher.close()
            self._watcher = None

    # --- walking ------------------------------------------------------------------------------

    def _update(self, path: str, node: _Dir | None, trusted: bool) -> _Dir | None:
        """``trusted``: the watcher saw every change, so a clean watched directory needs no stat.
        A directory without a watch (none left, or not allowed) is checked by ``stat``."""
        if node is None or not (trusted and node.wd is not None and not node.dirty):
            try:
                info = os.stat(path, follow_symlinks=False)
            except OSError:
                return None
            if not stat.S_ISDIR(info.st_mode):
                return None
            all_secret = node.all_secret if node is not None else False
            if node is not None and node.ident != (info.st_dev, info.st_ino):
                self._drop(node)  # replaced by another directory: start afresh
                node = None
            racy = node is not None and info.st_mtime_ns >= node.listed_ns - int(RACY * 1e9)
            if node is None or node.dirty or node.mtime_ns != info.st_mtime_ns or racy:
                node = self._list(path, info, node, all_secret)
        for name, child in list(node.subdirs.items()):
            updated = self._update(child.path, child, trusted)
            if updated is None:
                self._drop(node.subdirs.pop(name))
            else:
                node.subdirs[name] = updated
        return node

    def _drop(self, node: _Dir) -> None:
        if self._watcher is None:
            return
        stack = [node]
        while stack:
            item = stack.pop()
            self._watcher.remove(item)
            stack.extend(item.subdirs.values())

    def _list(
        self, path: str, info: os.stat_result, old: _Dir | None, all_secret: bool = False
    ) -> _Dir:
        self.relisted += 1
        node = _Dir(
            path=path,
            ident=(info.st_dev, info.st_ino),
            mtime_ns=info.st_mtime_ns,
            listed_ns=time.time_ns(),
            dirty=False,
            all_secret=old.all_secret if old is not None else all_secret,
        )
        if self._watcher is not None:
            if old is not None and old.wd is not None:
                node.wd = old.wd
                self._watcher.nodes[old.wd] = node
            else:
                self._watcher.add(node)  # before the listing: nothing created after it is missed
        if self.private and not info.st_mode & stat.S_IROTH and path != self.root:
            node.marks["."] = "private"
            return node
        try:
            entries = list(os.scandir(path))
        except OSError:
            return node
        for entry in entries:
            name = entry.name
            try:
                if entry.is_symlink():
                    if protected_name(name) is not None:
                        node.marks[name] = "link"  # its target, and the link itself, matter
                    continue  # followed to wherever it leads, which is judged on its own
                guarded = protected_name(name) is not None
                if entry.is_dir(follow_symlinks=False):
                    if name == ".git":
                        node.marks[name] = "git"
                        continue  # read-only as a whole; nothing under it is walked
                    # Each file of a .ssh (.aws, ...) is its own secret, so a rule
                    # can show one of them and not the rest.
                    secret_tree = node.all_secret or (self.secrets and name.lower() in SECRET_DIRS)
                    if name == ".ketch":
                        node.marks[name] = "ketch"
                    elif guarded:
                        node.marks[name] = "protected"
                    keep = old.subdirs.get(name) if old is not None else None
                    if keep is not None and keep.ident[1] not in (0, entry.inode()):
                        # Another directory under the same name (removed and made
                        # again): the old one's watch may linger on its dying inode.
                        self._drop(keep)
                        keep = None
                    node.subdirs[name] = (
                        keep if keep is not None else _Dir(path=entry.path, all_secret=secret_tree)
                    )
                    continue
                if entry.is_file(follow_symlinks=False):
                    if name == ".git":
                        node.marks[name] = "git"
                    elif self.secrets and (
                        node.all_secret or secret_name(name) or content_secret(entry.path)
                    ):
                        node.marks[name] = "secret+protected" if guarded else "secret"
                    elif guarded:
                        node.marks[name] = "protected"
                    elif (
                        self.private
                        and not entry.stat(follow_symlinks=False).st_mode & stat.S_IROTH
                    ):
                        node.marks[name] = "private"
                    continue
                mode = entry.stat(follow_symlinks=False).st_mode
                if stat.S_ISSOCK(mode) or stat.S_ISFIFO(mode):
                    node.marks[name] = "socket"
            except OSError:
                continue
        if old is not None:  # subdirectories gone since the last listing
            for name, child in old.subdirs.items():
                if name not in node.subdirs:
                    self._drop(child)
        return node

    def _collect(self) -> tuple[Found, int]:
        """What the tree holds, and how many of its directories have no watch."""
        kinds: dict[str, list[Path]] = {
            k: [] for k in ("secret", "socket", "git", "ketch", "protected", "link", "private")
        }
        count = unwatched = 0
        stack: list[_Dir] = [self._top] if self._top is not None else []
        while stack:
            node = stack.pop()
            count += 1
            unwatched += node.wd is None
            for name, marked in node.marks.items():
                for kind in marked.split("+"):
                    kinds[kind].append(
                        Path(node.path if name == "." else os.path.join(node.path, name))
                    )
            stack.extend(node.subdirs.values())
        found = Found(
            secrets=tuple(sorted(kinds["secret"])),
            sockets=tuple(sorted(kinds["socket"])),
            git=tuple(sorted(kinds["git"])),
            ketch=tuple(sorted(kinds["ketch"])),
            protected=tuple(sorted(kinds["protected"])),
            links=tuple(sorted(kinds["link"])),
            private=tuple(sorted(kinds["private"])),
            directories=count,
        )
        return found, unwatched


_INDEXES: dict[tuple[str, bool, bool], TreeIndex] = {}
_INDEXES_LOCK = threading.Lock()


def index_for(root: Path, *, secrets: bool = True, private: bool = False) -> TreeIndex:
    """One index per tree per process, so every command after the first pays only for changes."""
    key = (os.fspath(root), secrets, private)
    with _INDEXES_LOCK:
        found = _INDEXES.get(key)
        if found is None:
            found = _INDEXES[key] = TreeIndex(Path(root), secrets=secrets, private=private)
        return found


def forget(root: Path) -> None:
    """Drop the indexes of ``root`` (tests; a workspace that went away)."""
    with _INDEXES_LOCK:
        for key in [k for k in _INDEXES if k[0] == os.fspath(root)]:
            _INDEXES.pop(key).close()
