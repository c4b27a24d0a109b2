"""The workspace boundary: resolving model-supplied paths, and opening them safely.

A path from the model is resolved against the workspace root fixed at session start
(``ctx.workspace``), symlinks included, and compared by path component (``/w/proj-evil``
is not inside ``/w/proj``). A path that resolves outside the workspace is *not* refused
here: the tool declares it as an :class:`~ketch.tools.Access`, and the policy (the
essential guards plugin at least) asks or denies. Only malformed paths (NUL bytes,
control characters, absurd lengths) are refused by the tools themselves.

Opening walks the resolved path one component at a time with ``O_NOFOLLOW``, so a
symlink planted after the policy decided (by a background job, say) makes the open
fail instead of silently redirecting it.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from ketch_policy_kit.paths import is_within as is_within  # one definition, the policy kit's

MAX_PATH_CHARS = 4096


class PathProblem(ValueError):
    """A path the tools refuse outright (malformed, or changed under our feet)."""


def check_path_text(value: str) -> str:
    """Validate a model-supplied path string; used as a pydantic validator."""
    if not value or not value.strip():
        raise ValueError("the path is empty")
    if "\x00" in value:
        raise ValueError("the path contains a NUL byte; paths must be plain text")
    for char in value:
        if ord(char) < 0x20 or ord(char) == 0x7F:
            raise ValueError(
                f"the path contains a control character (U+{ord(char):04X}); paths must be plain text"
            )
    if len(value) > MAX_PATH_CHARS:
        raise ValueError(f"the path is longer than {MAX_PATH_CHARS} characters")
    return value


def workspace_root(workspace: Path | str) -> Path:
    return Path(os.path.realpath(os.fspath(workspace)))


def resolve(workspace: Path | str, value: str) -> Path:
    """Absolute, symlink-resolved path of ``value`` (relative to the workspace).

    ``~`` means the user's home directory (outside the workspace, so the policy asks).
    """
    from ketch_text_kit.names import os_name

    check_path_text(value)
    text = os.path.expanduser(value) if value.startswith("~") else value
    # A name shown as ``bad\\xff.txt`` (its bytes are not UTF-8) is that file.
    joined = os_name(os.path.join(os.fspath(workspace_root(workspace)), text))
    return Path(os.path.realpath(joined))


def display(path: Path, workspace: Path | str) -> str:
    """How a path is shown to the model: relative inside the workspace, absolute outside;
    bytes that are not UTF-8 as ``\\xNN`` (``ketch_text_kit.names``)."""
    from ketch_text_kit.names import shown_name

    root = workspace_root(workspace)
    if path == root:
        return "."
    if is_within(path, root):
        return shown_name(path.relative_to(root).as_posix())
    return shown_name(str(path))


# --- opening without following symlinks -----------------------------------------------

# O_PATH (Linux): a directory handle needs no read permission, only search (x).
_DIR_FLAGS = (
    getattr(os, "O_PATH", os.O_RDONLY)
    | os.O_DIRECTORY
    | os.O_NOFOLLOW
    | getattr(os, "O_CLOEXEC", 0)
)


def open_parent(path: Path, *, create: bool = False) -> int:
    """A directory fd for ``path.parent``, reached without following any symlink.

    ``path`` must be absolute and already resolved: every component is then a real
    directory, and finding a symlink means it was swapped in since (refused).
    ``create`` makes missing directories (mode 0o777 & ~umask).
    """
    if not path.is_absolute():
        raise PathProblem(f"{path}: not an absolute path")
    fd = os.open("/", _DIR_FLAGS)
    try:
        for part in path.parent.parts[1:]:
            try:
                next_fd = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                with suppress(FileExistsError):
                    os.mkdir(part, 0o777, dir_fd=fd)
                next_fd = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise PathProblem(
                        f"{path}: a component of the path ({part}) is a symlink or not a directory; "
                        "it changed after the path was checked, so it was not touched"
                    ) from None
                raise
            os.close(fd)
            fd = next_fd
    except BaseException:
        os.close(fd)
        raise
    return fd


@contextmanager
def parent_dir(path: Path, *, create: bool = False) -> Iterator[int]:
    fd = open_parent(path, create=create)
    try:
        yield fd
    finally:
        os.close(fd)


def open_nofollow(path: Path, flags: int = os.O_RDONLY) -> int:
    """Open ``path`` (absolute, resolved) refusing symlinks at every component.

    ``O_NONBLOCK`` keeps a FIFO from blocking the open; callers check the type with fstat.
    """
    with parent_dir(path) as dir_fd:
        try:
            return os.open(
                path.name,
                flags | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0),
                dir_fd=dir_fd,
            )
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise PathProblem(
                    f"{path}: is a symlink now; it changed after the path was checked, so it was not opened"
                ) from None
            raise


def lstat_in(dir_fd: int, name: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def is_regular(st: os.stat_result) -> bool:
    return stat.S_ISREG(st.st_mode)


def kind_of(st: os.stat_result) -> str:
    mode = st.st_mode
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISLNK, "a symlink"),
        (stat.S_ISFIFO, "a named pipe"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    ):
        if test(mode):
            return name
    return "a regular file" if stat.S_ISREG(mode) else "a special file"
