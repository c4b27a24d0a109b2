"""Putting paths back, without clobbering anyone's work.

A restore is a list of :class:`Change`: for one path, the state to put back (``target``)
and the state ketch left it in (``expected``). A path is only touched when it is still
as ketch left it; one that is already as wanted is left alone; any other state means
someone else changed it since (the person, another program, another session), and it
is a *conflict*: listed and left alone unless forced or confirmed for that path. A
path that something else changed *between* two of ketch's calls is a conflict too:
putting it back would undo that change along with ketch's.

Every operation goes through directory file descriptors opened with ``O_NOFOLLOW``
from the workspace root: a directory that became a symbolic link is refused, never
followed out of the workspace, and nothing is ever written under a ``.git``. Files are
written to a temporary name and renamed over the old one, mode bits set; directories
are created with their recorded mode and removed only when empty. Timestamps are not
set back: build tools must see a restored file as new.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ketch_checkpoints.timeline import Window
from ketch_checkpoints.tree import ROOT, Entry, Trees, same
from ketch_store_kit.protocols import BlobStore
from ketch_text_kit.names import shown_name

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW


class Unsafe(Exception):
    """The path cannot be reached without following a link or entering ``.git``."""


@dataclass
class Change:
    path: str
    target: Entry | None  # what to put back (None: the path should not exist)
    expected: Entry | None  # what ketch left there
    between: bool = False  # something else changed it between ketch's calls
    why: str = ""  # what that something else was, when known


@dataclass
class Outcome:
    path: str
    status: str  # restored | already | conflict | kept | skipped | failed
    what: str = ""  # rewritten, recreated, removed, mode, created directory, ...
    reason: str = ""
    target: Entry | None = None
    expected: Entry | None = None

    def as_dict(self) -> dict[str, Any]:
        """For the person (``--json`` included): the path as text (``bad\\xff.txt``)."""
        out = {"path": shown_name(self.path), "status": self.status}
        if self.what:
            out["change"] = self.what
        if self.reason:
            out["reason"] = self.reason
        return out


@dataclass
class Report:
    outcomes: list[Outcome] = field(default_factory=list)
    stopped: bool = False  # conflicts and no one allowed overwriting them: nothing was done

    def of(self, *statuses: str) -> list[Outcome]:
        return [o for o in self.outcomes if o.status in statuses]

    @property
    def restored(self) -> list[Outcome]:
        return self.of("restored")

    @property
    def conflicts(self) -> list[Outcome]:
        return self.of("conflict")


# --- planning -------------------------------------------------------------------------------


def plan_undo(windows: list[Window], trees: Trees) -> list[Change]:
    """Put every path these windows changed back to before the first window that
    changed it; it must now be as the last such window left it."""
    firsts: dict[str, int] = {}
    lasts: dict[str, int] = {}
    touched: dict[str, list[int]] = {}
    for index, window in enumerate(windows):
        for path in window.changed:
            firsts.setdefault(path, index)
            lasts[path] = index
            touched.setdefault(path, []).append(index)
    changes: list[Change] = []
    for path, indexes in touched.items():
        first, last = windows[firsts[path]], windows[lasts[path]]
        assert last.post_root is not None
        target = trees.lookup(first.pre_root, path)
        expected = trees.lookup(last.post_root, path)
        between = False
        for a, b in zip(indexes, indexes[1:], strict=False):
            left = trees.lookup(windows[a].post_root or windows[a].pre_root, path)
            if not same(left, trees.lookup(windows[b].pre_root, path)):
                between = True
        changes.append(Change(path, target, expected, between))
    return changes


def plan_redo(undo: dict[str, Any]) -> list[Change]:
    """Put forward again what an undo put back (only the paths it did restore)."""
    changes = []
    for item in undo.get("paths") or []:
        if item.get("status") == "restored":
            changes.append(
                Change(
                    item["path"], Entry.from_json(item.get("from")), Entry.from_json(item.get("to"))
                )
            )
    return changes


# --- the workspace, by descriptor ---------------------------------------------------------------


class Workspace:
    def __init__(self, root: Path, blobs: BlobStore, max_file_size: int) -> None:
        self.root = root
        self.blobs = blobs
        self.max_file_size = max_file_size
        self.fd = os.open(root, DIR_FLAGS)

    def close(self) -> None:
        os.close(self.fd)

    def parent(self, path: str, *, create: bool = False) -> tuple[int, str]:
        """A descriptor of ``path``'s directory (the caller closes it) and its last name."""
        parts = path.split("/")
        if any(p in ("", ".", "..", ".git") for p in parts):
            raise Unsafe(f"{path}: not a plain path inside the workspace")
        fd = os.dup(self.fd)
        try:
            for part in parts[:-1]:
                try:
                    inner = os.open(part, DIR_FLAGS, dir_fd=fd)
                except FileNotFoundError:
                    if not create:
                        raise
                    os.mkdir(part, 0o755, dir_fd=fd)
                    inner = os.open(part, DIR_FLAGS, dir_fd=fd)
                except OSError:  # ELOOP (a symbolic link), ENOTDIR
                    raise Unsafe(
                        f"{path}: {part} is not a directory any more (a symbolic link?)"
                    ) from None
                os.close(fd)
                fd = inner
        except BaseException:
            os.close(fd)
            raise
        return fd, parts[-1]

    def state(self, path: str) -> Entry | None:
        """What ``path`` is now, in checkpoint terms (raises :class:`Unsafe`)."""
        if path == ROOT:
            return Entry("r", stat.S_IMODE(os.fstat(self.fd).st_mode))
        try:
            fd, name = self.parent(path)
        except FileNotFoundError:
            return None
        try:
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                return None
            facts = (st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns)
            mode = stat.S_IMODE(st.st_mode)
            if stat.S_ISDIR(st.st_mode):
                return Entry("d", mode)
            if stat.S_ISLNK(st.st_mode):
                return Entry("l", 0o777, *facts, ref=os.readlink(name, dir_fd=fd))
            if not stat.S_ISREG(st.st_mode):
                return Entry("u", mode, *facts)
            if st.st_size > self.max_file_size:
                return Entry("b", mode, *facts)
            try:
                data = self._read(name, fd)
            except OSError:
                return Entry("u", mode, *facts)
            return Entry("f", mode, *facts, ref=self.blobs.blob_id(data))
        finally:
            os.close(fd)

    @staticmethod
    def _read(name: str, dir_fd: int) -> bytes:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=dir_fd)
        with os.fdopen(fd, "rb") as handle:
            return handle.read()

    # --- operations ---------------------------------------------------------------------------

    def remove(self, path: str) -> None:
        fd, name = self.parent(path)
        try:
            os.unlink(name, dir_fd=fd)
        finally:
            os.close(fd)

    def rmdir(self, path: str) -> bool:
        """Remove an empty directory; False when it is not empty (left as it is)."""
        fd, name = self.parent(path)
        try:
            os.rmdir(name, dir_fd=fd)
            return True
        except OSError as exc:
            if exc.errno in (39, 66):  # ENOTEMPTY (Linux, BSD)
                return False
            raise
        finally:
            os.close(fd)

    def mkdir(self, path: str, mode: int) -> None:
        fd, name = self.parent(path, create=True)
        try:
            os.mkdir(name, 0o700, dir_fd=fd)
            self._chmod_dir(name, fd, mode)
        finally:
            os.close(fd)

    def chmod_dir(self, path: str, mode: int) -> None:
        if path == ROOT:
            os.fchmod(self.fd, mode)
            return
        fd, name = self.parent(path)
        try:
            self._chmod_dir(name, fd, mode)
        finally:
            os.close(fd)

    @staticmethod
    def _chmod_dir(name: str, parent: int, mode: int) -> None:
        inner = os.open(name, DIR_FLAGS, dir_fd=parent)
        try:
            os.fchmod(inner, mode)
        finally:
            os.close(inner)

    def write(self, path: str, entry: Entry) -> None:
        """Put a file or a link at ``path`` (replacing what is there), atomically."""
        fd, name = self.parent(path, create=True)
        temp = f".{name}.ketch-restore-{os.getpid()}"
        try:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temp, dir_fd=fd)
            if entry.kind == "l":
                os.symlink(entry.ref, temp, dir_fd=fd)
            else:
                data = self.blobs.get(entry.ref)
                out = os.open(
                    temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=fd
                )
                try:
                    view = memoryview(data)
                    while view:
                        view = view[os.write(out, view) :]
                    os.fchmod(out, entry.mode)
                    os.fsync(out)
                finally:
                    os.close(out)
            os.replace(temp, name, src_dir_fd=fd, dst_dir_fd=fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=fd)
            raise
        finally:
            os.close(fd)


# --- applying ---------------------------------------------------------------------------------

Confirm = Callable[[Outcome], Awaitable[str]]  # "overwrite" | "keep" | "cancel"


def _what(change: Change, current: Entry | None) -> str:
    target = change.target
    if target is None:
        return "removed directory" if current is not None and current.kind == "d" else "removed"
    if current is None:
        return "recreated directory" if target.kind == "d" else "recreated"
    if target.kind == current.kind and (
        target.kind in ("d", "r") or (target.kind == "f" and target.ref == current.ref)
    ):
        return "mode"
    return "rewritten"


def assess(
    workspace: Workspace, changes: list[Change]
) -> list[tuple[Change, Entry | None, Outcome]]:
    """Each change with the path's current state and what would happen to it."""
    out: list[tuple[Change, Entry | None, Outcome]] = []
    for change in sorted(changes, key=lambda c: c.path):
        try:
            current = workspace.state(change.path)
        except Unsafe as exc:
            out.append((change, None, Outcome(change.path, "skipped", reason=str(exc))))
            continue
        if same(current, change.target):
            out.append(
                (
                    change,
                    current,
                    Outcome(change.path, "already", target=change.target, expected=change.expected),
                )
            )
            continue
        if change.target is not None and not change.target.restorable:
            why = (
                "it was larger than max_file_size"
                if change.target.kind == "b"
                else "it could not be read"
            )
            out.append(
                (
                    change,
                    current,
                    Outcome(
                        change.path,
                        "skipped",
                        reason=f"not in the checkpoint: {why} when it was taken",
                    ),
                )
            )
            continue
        outcome = Outcome(
            change.path,
            "restored",
            _what(change, current),
            target=change.target,
            expected=change.expected,
        )
        if change.between:
            outcome.status = "conflict"
            outcome.reason = (
                change.why or "changed by something other than ketch between ketch's calls"
            )
        elif not same(current, change.expected):
            outcome.status, outcome.reason = (
                "conflict",
                "changed since ketch's turn, by you or another program",
            )
        out.append((change, current, outcome))
    return out


async def apply(
    workspace: Workspace,
    changes: list[Change],
    *,
    force: bool = False,
    confirm: Confirm | None = None,
    keep_changed: bool = False,
) -> Report:
    """Restore what can be; see the module docstring for what is left alone."""
    assessed = assess(workspace, changes)
    report = Report([o for _, _, o in assessed])
    conflicts = [o for _, _, o in assessed if o.status == "conflict"]
    if conflicts and not force:
        if confirm is None and not keep_changed:
            report.stopped = True
            return report
        for outcome in conflicts:
            answer = "keep" if confirm is None else await confirm(outcome)
            if answer == "cancel":
                report.stopped = True
                return report
            if answer == "overwrite":
                outcome.status, outcome.reason = (
                    "restored",
                    outcome.reason + "; overwritten as you asked",
                )
            else:
                outcome.status = "kept"
    elif conflicts:
        for outcome in conflicts:
            outcome.status, outcome.reason = "restored", outcome.reason + "; overwritten (--force)"
    todo = [(c, cur, o) for c, cur, o in assessed if o.status == "restored"]
    _run(workspace, todo)
    return report


def _depth(path: str) -> int:
    return path.count("/")


def _run(workspace: Workspace, todo: list[tuple[Change, Entry | None, Outcome]]) -> None:
    def attempt(outcome: Outcome, action: Callable[..., Any], *args: Any) -> Any:
        try:
            return action(*args)
        except (OSError, Unsafe) as exc:
            outcome.status, outcome.reason = "failed", f"{type(exc).__name__}: {exc}"
            return None

    def going(entry: Entry | None) -> bool:  # the path should not exist, or not as this kind
        return entry is None or entry.kind == "d"

    # 0. the workspace root's mode, first when it lets the rest be written, else last
    root = [(c, o) for c, _, o in todo if c.path == ROOT and c.target is not None]
    todo = [t for t in todo if t[0].path != ROOT]
    writable = [(c, o) for c, o in root if c.target is not None and c.target.mode & stat.S_IWUSR]
    for change, outcome in writable:
        attempt(outcome, workspace.chmod_dir, ROOT, change.target.mode)  # type: ignore[union-attr]

    # 1. what should not exist (or not be a file) any more: files and links first
    for change, current, outcome in todo:
        if current is not None and current.kind != "d" and going(change.target):
            attempt(outcome, workspace.remove, change.path)
    # 2. directories that should go, deepest first, only when empty
    for change, current, outcome in sorted(todo, key=lambda t: -_depth(t[0].path)):
        target = change.target
        emptying = (
            current is not None and current.kind == "d" and (target is None or target.kind != "d")
        )
        if emptying and attempt(outcome, workspace.rmdir, change.path) is False:
            outcome.status = "kept"
            outcome.reason = "a directory that is not empty (something else is in it)"
    # 3. directories to bring back, shallowest first
    for change, current, outcome in sorted(todo, key=lambda t: _depth(t[0].path)):
        target = change.target
        if target is not None and target.kind == "d" and outcome.status == "restored":
            if current is None or current.kind != "d":
                attempt(outcome, workspace.mkdir, change.path, target.mode)
            else:
                attempt(outcome, workspace.chmod_dir, change.path, target.mode)
    # 4. files and links
    for change, current, outcome in todo:
        target = change.target
        if target is not None and target.kind in ("f", "l") and outcome.status == "restored":
            if current is not None and current.kind == "d":
                outcome.status, outcome.reason = "failed", "a directory is in the way"
                continue
            attempt(outcome, workspace.write, change.path, target)
    # 5. the root's mode when it takes write permission away
    for change, outcome in root:
        if (change, outcome) not in writable:
            attempt(outcome, workspace.chmod_dir, ROOT, change.target.mode)  # type: ignore[union-attr]
