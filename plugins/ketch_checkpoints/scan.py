"""Taking a checkpoint: the workspace's state as trees of blobs, incrementally.

The first checkpoint of a workspace reads every kept file; after that, a file whose
size, mtime, ctime, inode and mode are what the last checkpoint saw costs one
``lstat`` (ctime too, because a program can set mtime back but not ctime). A file
modified within :data:`RACY_NS` of a checkpoint is read again next time, whatever its
stat says: a write in the same clock tick as the last look would otherwise be missed.

Which entries count is ripgrep's ``ignore`` crate's answer (``.gitignore`` at every
level, ``.ignore``, ``.git/info/exclude``, the global excludes; ``.git`` never), asked
once per directory whose listing changed, not once per file: an unchanged directory
lists the same names with ``scandir`` and keeps its verdicts. A changed ignore file
re-asks for its directory and everything below it.

Symbolic links are recorded as links and never followed; sockets, pipes and devices
are left out. Nothing here writes anywhere but the blob store.
"""

from __future__ import annotations

import contextlib
import os
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ketch_checkpoints.tree import ROOT, Entry, Trees, children, encode
from ketch_store_kit.protocols import BlobStore, NewBlob

RACY_NS = 2_000_000_000  # coarse (FAT: 2 s) timestamps make same-tick writes invisible
FLUSH_BYTES = 32 * 1024 * 1024  # file contents held before they are written out
IGNORE_FILES = (".gitignore", ".ignore")


class TooManyFiles(Exception):
    pass


@dataclass
class Node:
    """What the last checkpoint saw of one directory."""

    names: tuple[str, ...] | None = None  # everything scandir listed, sorted
    kept: tuple[str, ...] = ()  # what the ignore rules keep of them, sorted
    guards: dict[str, tuple[int, int, int]] = field(default_factory=dict)  # ignore files' stat
    entries: dict[str, Entry] = field(default_factory=dict)
    tree_id: str = ""
    subdirs: dict[str, Node] = field(default_factory=dict)
    racy: set[str] = field(default_factory=set)


@dataclass
class Result:
    root: str
    files: int = 0
    read: int = 0  # files whose content was read this time
    written: int = 0  # bytes added to the store
    skipped: list[str] = field(default_factory=list)  # too large or unreadable
    seconds: float = 0.0
    started_ns: int = 0


class _Pending:
    def __init__(self, blobs: BlobStore) -> None:
        self.blobs = blobs
        self.files: dict[str, bytes] = {}
        self.size = 0
        self.written = 0

    def add(self, blob_id: str, data: bytes) -> None:
        if blob_id not in self.files:
            self.files[blob_id] = data
            self.size += len(data)
            if self.size >= FLUSH_BYTES:
                self.flush()

    def flush(self) -> None:
        if self.files:
            self.written += self.blobs.put(NewBlob(i, d) for i, d in self.files.items())
            self.files, self.size = {}, 0


def _stat_key(st: os.stat_result) -> tuple[int, int, int, int, int]:
    return (st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns, st.st_mode)


def _entry_key(entry: Entry) -> tuple[int, int, int, int]:
    return (entry.size, entry.mtime_ns, entry.ino, entry.ctime_ns)


def kept_names(directory: str) -> frozenset[str]:
    """The names in ``directory`` that the ignore rules keep (one level)."""
    from ignore import WalkBuilder

    from ketch_tool_kit.walk import under, walk_start

    start, below = walk_start(directory)  # a path that is not UTF-8: from an ancestor
    builder = (
        WalkBuilder(start).hidden(False).follow_links(False).require_git(False).max_depth(1 + below)
    )
    kept: set[str] = set()
    iterator = iter(builder.build())
    while True:
        try:
            item = next(iterator)
        except StopIteration:
            break
        except Exception:  # noqa: BLE001 - an entry it cannot read: leave it out
            continue
        if item.depth() == 1 + below and (not below or under(item.path(), Path(directory))):
            kept.add(item.path().name)
    kept.discard(".git")
    return frozenset(kept)


def outer_ignore_files(root: Path) -> list[Path]:
    """Ignore sources outside the workspace's own directories: ancestors' ignore files,
    the repository's ``info/exclude``, git's global excludes and the config naming them."""
    paths: list[Path] = []
    for parent in [root, *root.parents]:
        if parent != root:
            paths += [parent / name for name in IGNORE_FILES]
        paths.append(parent / ".git" / "info" / "exclude")
    home = Path.home()
    xdg = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
    paths += [home / ".gitconfig", xdg / "git" / "config", xdg / "git" / "ignore"]
    return paths


def _guard(path: Path | str) -> tuple[int, int, int]:
    try:
        st = os.stat(path)
    except OSError:
        return (0, 0, 0)
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns)


class Scanner:
    """Checkpoints one workspace; keeps what it saw for the next one (not thread-safe:
    the caller serializes)."""

    def __init__(
        self, root: Path, blobs: BlobStore, trees: Trees, *, max_file_size: int, max_files: int
    ) -> None:
        self.root = root
        self.blobs = blobs
        self.trees = trees
        self.max_file_size = max_file_size
        self.max_files = max_files
        self.top = Node()
        self.outer: dict[str, tuple[int, int, int]] = {}
        self.last: Result | None = None

    # --- starting from a stored checkpoint ---------------------------------------------

    def seed(self, root_id: str, taken_ns: int) -> None:
        """Adopt a stored checkpoint (an earlier session's) as what was seen last, so the
        first checkpoint here reads only what changed since. Verdicts are asked again."""
        self.top = self._seed_node(root_id, taken_ns)

    def _seed_node(self, tree_id: str, taken_ns: int) -> Node:
        entries = self.trees.tree(tree_id)
        node = Node(entries=dict(entries), tree_id=tree_id)
        for name, entry in entries.items():
            if entry.kind == "d":
                node.subdirs[name] = self._seed_node(entry.ref, taken_ns)
            elif entry.mtime_ns >= taken_ns - RACY_NS:
                node.racy.add(name)
        return node

    # --- one checkpoint -------------------------------------------------------------------

    def scan(self) -> Result:
        began = time.perf_counter()
        started_ns = time.time_ns()
        outer = {str(p): _guard(p) for p in outer_ignore_files(self.root)}
        stale = outer != self.outer
        self.outer = outer
        pending = _Pending(self.blobs)
        result = Result(root="", started_ns=started_ns)
        trees: list[NewBlob] = []
        root_id = self._dir(self.top, str(self.root), "", stale, pending, trees, result)
        if root_id is None:
            raise OSError(f"cannot list the workspace {self.root}")
        pending.flush()
        pending.written += self.blobs.put(trees)
        result.root = root_id
        result.written = pending.written
        result.seconds = time.perf_counter() - began
        self.last = result
        return result

    def _dir(
        self,
        node: Node,
        path: str,
        rel: str,
        stale: bool,
        pending: _Pending,
        trees: list[NewBlob],
        result: Result,
    ) -> str | None:
        try:
            with os.scandir(path) as listing:
                found = {e.name: e for e in listing}
        except OSError:
            return None
        names = tuple(sorted(found))
        guards = {n: _guard(found[n].path) for n in IGNORE_FILES if n in found}
        stale = stale or guards != node.guards
        if stale or names != node.names:
            node.kept = tuple(sorted(kept_names(path)))
            node.names, node.guards = names, guards
        entries: dict[str, Entry] = {}
        seen = node.entries
        racy = node.racy
        for name in node.kept:
            item = found.get(name)
            if item is None:
                continue
            try:
                st = item.stat(follow_symlinks=False)
            except OSError:
                continue
            mode = st.st_mode
            old = seen.get(name)
            # The hot path, inlined: a file as the last checkpoint saw it costs this stat.
            if (
                old is not None
                and old.kind == "f"
                and st.st_mtime_ns == old.mtime_ns
                and st.st_size == old.size
                and st.st_ino == old.ino
                and st.st_ctime_ns == old.ctime_ns
                and stat.S_IMODE(mode) == old.mode
                and stat.S_ISREG(mode)
                and name not in racy
            ):
                result.files += 1
                entries[name] = old
                continue
            if stat.S_ISDIR(mode):
                sub = node.subdirs.get(name)
                if sub is None:
                    sub = node.subdirs[name] = Node()
                tree_id = self._dir(sub, item.path, f"{rel}{name}/", stale, pending, trees, result)
                if tree_id is None:
                    entries[name] = Entry("u", stat.S_IMODE(mode))
                    result.skipped.append(f"{rel}{name}/")
                else:
                    entries[name] = Entry("d", stat.S_IMODE(mode), ref=tree_id)
            elif stat.S_ISREG(mode):
                result.files += 1
                entries[name] = self._file(node, name, item.path, st, pending, result, rel)
            elif stat.S_ISLNK(mode):
                result.files += 1
                entries[name] = self._link(node, name, item.path, st)
        if result.files > self.max_files:
            raise TooManyFiles(f"more than {self.max_files:,} files")
        if not rel:  # the workspace root: its own mode bits
            with contextlib.suppress(OSError):
                entries[ROOT] = Entry("r", stat.S_IMODE(os.stat(path).st_mode))
        for gone in set(node.subdirs) - {n for n, e in entries.items() if e.kind in ("d", "u")}:
            del node.subdirs[gone]
        node.racy &= set(entries)
        if entries == node.entries and node.tree_id:
            return node.tree_id
        data = encode(entries)
        tree_id = self.blobs.blob_id(data)
        trees.append(NewBlob(tree_id, data, children(entries)))
        self.trees.prime(tree_id, entries)
        node.entries, node.tree_id = entries, tree_id
        return tree_id

    def _file(
        self,
        node: Node,
        name: str,
        path: str,
        st: os.stat_result,
        pending: _Pending,
        result: Result,
        rel: str,
    ) -> Entry:
        old = node.entries.get(name)
        key = _stat_key(st)
        if (
            old is not None
            and old.kind in "fbu"
            and _entry_key(old) == key[:4]
            and old.mode == stat.S_IMODE(st.st_mode)
            and name not in node.racy
        ):
            if old.kind != "f":
                result.skipped.append(rel + name)
            return old
        mode = stat.S_IMODE(st.st_mode)
        facts = (st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns)
        if st.st_size > self.max_file_size:
            result.skipped.append(rel + name)
            return Entry("b", mode, *facts)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
        except OSError:
            result.skipped.append(rel + name)
            return Entry("u", mode, *facts)
        try:
            chunks: list[bytes] = []
            size = 0
            while size <= self.max_file_size:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
            after = os.fstat(fd)
        except OSError:
            result.skipped.append(rel + name)
            return Entry("u", mode, *facts)
        finally:
            os.close(fd)
        if size > self.max_file_size:  # grew past the limit while being read
            result.skipped.append(rel + name)
            return Entry("b", mode, *facts)
        data = b"".join(chunks)
        blob_id = self.blobs.blob_id(data)
        pending.add(blob_id, data)
        result.read += 1
        # Changed while read, or too recent to trust its timestamps: read again next time.
        if _stat_key(after) != key or st.st_mtime_ns >= result.started_ns - RACY_NS:
            node.racy.add(name)
        else:
            node.racy.discard(name)
        return Entry("f", mode, *facts, ref=blob_id)

    def _link(self, node: Node, name: str, path: str, st: os.stat_result) -> Entry:
        old = node.entries.get(name)
        facts = (st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns)
        if (
            old is not None
            and old.kind == "l"
            and _entry_key(old) == facts
            and name not in node.racy
        ):
            return old
        try:
            target = os.readlink(path)
        except OSError:
            return Entry("u", 0o777, *facts)
        return Entry("l", 0o777, *facts, ref=target)


def describe(result: Result) -> dict[str, Any]:
    return {
        "files": result.files,
        "read": result.read,
        "written": result.written,
        "seconds": round(result.seconds, 4),
    }
