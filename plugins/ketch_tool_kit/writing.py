"""Writing files: atomically, never through a symlink, and with a diff for the user.

Every tool that changes a file's content writes it through here (``write_file`` and
``edit_file`` of the ``fs`` plugin, a language server's rename), so they share one
write path: the same temporary-file names (swept by the ``fs`` plugin when a killed
write left one), the same symlink refusals, the same session file backend.

The new content goes to a temporary file beside the target (created with
``O_EXCL|O_NOFOLLOW`` in a directory reached without following symlinks), is
fsynced, and replaces the target with ``rename``, which never follows a symlink
either. A crash mid-write leaves the old file or the new one, never half of each.
The file's mode (and owner, when running as root) is kept.
"""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from ketch_tool_kit.files import FileBackend
from ketch_tool_kit.paths import (
    PathProblem,
    is_regular,
    kind_of,
    lstat_in,
    open_nofollow,
    parent_dir,
)

# ``.NAME.ketch-PID-XXXXXXXX.tmp`` (older ketch: without the pid).
TEMP = re.compile(r"^\..+\.ketch-(?:(?P<pid>\d+)-)?[0-9a-f]{8}\.tmp$")
CHUNK = 1 << 20


def temp_name(target: str) -> str:
    """The temporary file name for writing ``target`` (its writer's pid inside)."""
    import secrets

    return f".{target[:200]}.ketch-{os.getpid()}-{secrets.token_hex(4)}.tmp"


@dataclass(frozen=True)
class Fingerprint:
    size: int
    mtime_ns: int
    sha256: str

    def same_content(self, other: Fingerprint) -> bool:
        return self.size == other.size and self.sha256 == other.sha256

    def as_dict(self) -> dict[str, object]:
        return {"size": self.size, "mtime_ns": self.mtime_ns, "sha256": self.sha256}


def fingerprint_fd(fd: int) -> tuple[Fingerprint, bytes]:
    """Fingerprint and full content of an open file (for files about to be rewritten)."""
    st = os.fstat(fd)
    parts: list[bytes] = []
    while chunk := os.read(fd, CHUNK):
        parts.append(chunk)
    data = b"".join(parts)
    return Fingerprint(len(data), st.st_mtime_ns, hashlib.sha256(data).hexdigest()), data


def read_existing(
    path: Path, backend: FileBackend | None = None
) -> tuple[Fingerprint, bytes, os.stat_result | None] | None:
    """The current content of ``path`` (through the session's file backend when it has
    one), or None when it does not exist."""
    if backend is not None:
        try:
            data = backend.read(path)
        except FileNotFoundError:
            return None
        if data is not None:
            fp = Fingerprint(len(data), 0, hashlib.sha256(data).hexdigest())
            return fp, data, lstat_or_none(path)
    try:
        fd = open_nofollow(path)
    except FileNotFoundError:
        return None
    try:
        st = os.fstat(fd)
        if not is_regular(st):
            raise PathProblem(f"{path} is {kind_of(st)}, not a regular file")
        fp, data = fingerprint_fd(fd)
        return fp, data, st
    finally:
        os.close(fd)


def lstat_or_none(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except OSError:
        return None


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def write_atomic(
    path: Path, data: bytes, *, previous: os.stat_result | None, backend: FileBackend | None = None
) -> Fingerprint:
    """Replace (or create) ``path`` with ``data``; returns the new fingerprint. A session's
    file backend (an editor) takes the write when it has one."""
    if backend is not None and backend.write(path, data):
        return Fingerprint(len(data), 0, hashlib.sha256(data).hexdigest())
    with parent_dir(path, create=True) as dir_fd:
        current = lstat_in(dir_fd, path.name)
        if current is not None and stat.S_ISLNK(current.st_mode):
            raise PathProblem(
                f"{path} is a symlink now; it changed after the path was checked, so nothing was written"
            )
        if current is not None and not is_regular(current):
            raise PathProblem(
                f"{path} is {kind_of(current)}, not a regular file; nothing was written"
            )
        if previous is None and current is not None:
            raise PathProblem(
                f"{path} appeared while this call was running; read it first, then try again"
            )
        mode = stat.S_IMODE(current.st_mode) if current is not None else 0o666
        temp = temp_name(path.name)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
        try:
            fd = os.open(temp, flags, mode, dir_fd=dir_fd)
        except PermissionError:
            # A directory we may not create files in, but a file we may write: in place.
            return _write_in_place(dir_fd, path, data)
        try:
            try:
                _write_all(fd, data)
                if current is not None:
                    os.fchmod(fd, mode)
                    if os.geteuid() == 0:
                        os.fchown(fd, current.st_uid, current.st_gid)
                os.fsync(fd)
                st = os.fstat(fd)
            finally:
                os.close(fd)
            os.replace(temp, path.name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=dir_fd)
            raise
        return Fingerprint(len(data), st.st_mtime_ns, hashlib.sha256(data).hexdigest())


def _write_in_place(dir_fd: int, path: Path, data: bytes) -> Fingerprint:
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path.name, flags, 0o666, dir_fd=dir_fd)
    try:
        _write_all(fd, data)
        os.fsync(fd)
        st = os.fstat(fd)
    finally:
        os.close(fd)
    return Fingerprint(len(data), st.st_mtime_ns, hashlib.sha256(data).hexdigest())


def _diff_lines(text: str) -> list[str]:
    lines = text.replace("\r\n", "\n").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
        return [line + "\n" for line in lines]
    # The last line has no newline: say so, as git does.
    out = [line + "\n" for line in lines]
    if out:
        out[-1] = out[-1] + "\\ No newline at end of file\n"
    return out


def unified_diff(old: str | None, new: str | None, name: str, *, max_chars: int) -> str:
    """A unified diff of the change, git style (``a/name``, ``b/name``, /dev/null)."""
    before = _diff_lines(old) if old is not None else []
    after = _diff_lines(new) if new is not None else []
    fromfile = f"a/{name}" if old is not None else "/dev/null"
    tofile = f"b/{name}" if new is not None else "/dev/null"
    text = "".join(difflib.unified_diff(before, after, fromfile=fromfile, tofile=tofile, n=3))
    if not text:
        return ""
    if len(text) > max_chars:
        cut = text.rfind("\n", 0, max_chars) + 1 or max_chars
        text = text[:cut] + f"[diff cut: {len(text) - cut} more characters not shown]\n"
    return text


def diff_stats(diff: str) -> tuple[int, int]:
    """Lines added and removed (the two header lines are not counted)."""
    added = removed = 0
    lines = diff.splitlines()
    body = (
        lines[2:]
        if len(lines) >= 2 and lines[0].startswith("--- ") and lines[1].startswith("+++ ")
        else lines
    )
    for line in body:
        if line.startswith("+"):
            added += 1
        elif line.startswith("-"):
            removed += 1
    return added, removed
