"""A checkpoint's shape: directory trees of entries, stored as blobs (like git's trees).

A checkpoint is the id of the workspace root's tree. A tree lists a directory's kept
entries (``.gitignore`` applied, ``.git`` never) by name; each entry says what the path
is and carries the stat facts the next checkpoint compares against:

* ``f`` a regular file: ``ref`` is the blob of its content;
* ``l`` a symbolic link: ``ref`` is its target (never followed);
* ``d`` a directory: ``ref`` is its tree;
* ``b`` a file larger than ``max_file_size`` and ``u`` one that could not be read:
  recorded by stat only, so a change is seen but cannot be undone;
* ``r`` the workspace root itself, entry ``.`` of the root tree: its mode bits (a
  ``chmod`` of the workspace is undone like any other). Checkpoints taken before this
  entry existed have none, and then the root's mode is not compared.

Trees are content-addressed like everything else: an unchanged directory is the same
blob in every checkpoint, which is what keeps the store's growth per checkpoint small.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ketch_store_kit.protocols import BlobStore

FORMAT = 1
CAPTURED = frozenset("fldr")  # kinds whose state can be restored
ROOT = "."  # the root tree's entry for the workspace directory itself


@dataclass(frozen=True, slots=True)
class Entry:
    kind: str
    mode: int  # permission bits (st_mode & 0o7777)
    size: int = 0
    mtime_ns: int = 0
    ino: int = 0
    ctime_ns: int = 0
    ref: str = ""

    def same(self, other: Entry | None) -> bool:
        """Whether ``other`` is the same state of the path (content, type, mode bits);
        stat times only where the content is not known."""
        if other is None or other.kind != self.kind:
            return False
        if self.kind == "f":
            return self.ref == other.ref and self.mode == other.mode
        if self.kind == "l":
            return self.ref == other.ref
        if self.kind in ("d", "r"):
            return self.mode == other.mode
        return self.size == other.size and self.mtime_ns == other.mtime_ns

    @property
    def restorable(self) -> bool:
        return self.kind in CAPTURED

    def row(self, name: str) -> list[Any]:
        return [
            name,
            self.kind,
            self.mode,
            self.size,
            self.mtime_ns,
            self.ino,
            self.ctime_ns,
            self.ref,
        ]

    def as_json(self) -> list[Any]:
        return [self.kind, self.mode, self.size, self.mtime_ns, self.ino, self.ctime_ns, self.ref]

    @classmethod
    def from_json(cls, data: list[Any] | None) -> Entry | None:
        if data is None:
            return None
        kind, mode, size, mtime_ns, ino, ctime_ns, ref = data
        return cls(
            str(kind), int(mode), int(size), int(mtime_ns), int(ino), int(ctime_ns), str(ref)
        )


def same(a: Entry | None, b: Entry | None) -> bool:
    """Two states of one path (None: absent) are the same."""
    if a is None or b is None:
        return a is None and b is None
    return a.same(b)


# A name (or link target) whose bytes are not UTF-8 holds lone surrogates; JSON writes
# each as its ``\\udcNN`` escape, which ``json.loads`` reads back as the same name.
_RAW_BYTE = re.compile("[\udc80-\udcff]")


def encode(entries: dict[str, Entry]) -> bytes:
    rows = [entries[name].row(name) for name in sorted(entries)]
    text = json.dumps({"v": FORMAT, "e": rows}, separators=(",", ":"), ensure_ascii=False)
    if not text.isascii():
        text = _RAW_BYTE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    return text.encode("utf-8")


def decode(data: bytes) -> dict[str, Entry]:
    parsed = json.loads(data)
    if parsed.get("v") != FORMAT:
        raise ValueError(f"unknown checkpoint tree format {parsed.get('v')!r}")
    return {
        row[0]: Entry(row[1], row[2], row[3], row[4], row[5], row[6], row[7]) for row in parsed["e"]
    }


def children(entries: dict[str, Entry]) -> tuple[str, ...]:
    """The blobs a tree refers to (its files' contents and its subtrees)."""
    return tuple(sorted({e.ref for e in entries.values() if e.kind in ("f", "d") and e.ref}))


class Trees:
    """Reads trees from the blob store, each once (the scanner primes what it built)."""

    LIMIT = 20_000

    def __init__(self, blobs: BlobStore) -> None:
        self.blobs = blobs
        self.cache: dict[str, dict[str, Entry]] = {}

    def prime(self, tree_id: str, entries: dict[str, Entry]) -> None:
        if len(self.cache) >= self.LIMIT:
            self.cache.clear()
        self.cache[tree_id] = entries

    def tree(self, tree_id: str) -> dict[str, Entry]:
        found = self.cache.get(tree_id)
        if found is None:
            found = decode(self.blobs.get(tree_id))
            self.prime(tree_id, found)
        return found

    def lookup(self, root: str, path: str) -> Entry | None:
        """The entry at ``path`` (``a/b/c``) in the checkpoint ``root``, or None."""
        entries = self.tree(root)
        parts = path.split("/")
        for part in parts[:-1]:
            entry = entries.get(part)
            if entry is None or entry.kind != "d":
                return None
            entries = self.tree(entry.ref)
        return entries.get(parts[-1])

    def walk(self, root: str, prefix: str = "") -> Iterator[tuple[str, Entry]]:
        """Every (path, entry) of a checkpoint, directories before their contents."""
        for name, entry in sorted(self.tree(root).items()):
            path = f"{prefix}{name}"
            yield path, entry
            if entry.kind == "d":
                yield from self.walk(entry.ref, path + "/")

    def diff(
        self, before: str, after: str, prefix: str = ""
    ) -> dict[str, tuple[Entry | None, Entry | None]]:
        """Paths whose state differs between two checkpoints: path -> (before, after).
        Equal subtrees are skipped without being read."""
        out: dict[str, tuple[Entry | None, Entry | None]] = {}
        if before == after:
            return out
        old, new = self.tree(before), self.tree(after)
        for name in sorted(old.keys() | new.keys()):
            a, b = old.get(name), new.get(name)
            if name == ROOT and (a is None or b is None):
                continue  # a checkpoint from before the root's mode was recorded
            path = f"{prefix}{name}"
            if a is not None and b is not None and a.kind == "d" and b.kind == "d":
                if a.mode != b.mode:
                    out[path] = (a, b)
                out.update(self.diff(a.ref, b.ref, path + "/"))
                continue
            if not same(a, b):
                out[path] = (a, b)
            for side, entry in (
                (0, a),
                (1, b),
            ):  # a directory that appeared or went: its contents too
                if entry is not None and entry.kind == "d":
                    for sub, inner in self.walk(entry.ref, path + "/"):
                        out[sub] = (inner, None) if side == 0 else (None, inner)
        return out
