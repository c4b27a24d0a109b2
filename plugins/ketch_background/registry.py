"""Where background runs are kept track of, and how to tell which are alive.

``$XDG_STATE_HOME/ketch/background/`` (mode 0700) holds, per run ``bg_<hex>``:

* ``<run>.json`` — its status: ids and pids, its state (``starting``, ``running``,
  ``waiting``, ``finished``, ``failed``, ``stopped``), how many approvals it waits for,
  its cost so far, times, its exit code. Never content: no prompt, path, tool input or
  output (those stay in the encrypted store, and in the live worker's memory, which
  ``ketch ps`` and ``ketch attach`` ask through the socket);
* ``<run>.lock`` — held (``flock``) by the run's supervisor for as long as it lives:
  a run is alive exactly when its lock cannot be taken, whatever its status says (a
  supervisor killed with SIGKILL leaves a stale status, never a live-looking run);
* the worker's socket, here or — when this path is too long for a unix socket — in
  ``/tmp/ketch-<uid>/`` (mode 0700, checked to be the user's own).

Writes are atomic (a temporary file, then a rename). ``launch.lock`` serialises the
limit check and the start of a run, so two launches cannot both take the last slot.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import secrets
import stat
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

MAX_SOCKET_PATH = 100  # sun_path is 108 bytes on Linux; keep a margin
KEEP_FINISHED = 24 * 3600  # seconds a finished run stays in `ketch ps --all`
LIVE_STATES = frozenset({"starting", "running", "waiting"})


def root() -> Path:
    from ketch.api import state_dir

    folder = state_dir() / "background"
    folder.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(OSError):
        os.chmod(folder, 0o700)
    return folder


def new_run_id() -> str:
    return "bg_" + secrets.token_hex(5)


@dataclass
class Status:
    run: str
    state: str = "starting"
    session_id: str = ""
    supervisor_pid: int = 0
    supervisor_start: str = ""  # /proc/PID/stat start time: a reused pid is not this run
    worker_pid: int = 0
    waiting: int = 0  # approvals it waits for
    cost_usd: float = 0.0
    started: float = field(default_factory=time.time)
    updated: float = field(default_factory=time.time)
    exit_code: int | None = None
    socket: str = ""
    worktree: str = ""  # the worktree's name, when it runs in one (-w NAME)
    reaped: int = 0  # processes the supervisor ended after the worker was gone
    alive: bool = field(default=False, compare=False)  # filled when read, never stored

    @property
    def live(self) -> bool:
        return self.alive and self.state in LIVE_STATES


def status_file(run: str) -> Path:
    return root() / f"{run}.json"


def lock_file(run: str) -> Path:
    return root() / f"{run}.lock"


def write_status(status: Status) -> None:
    status.updated = time.time()
    data = asdict(status)
    data.pop("alive", None)
    folder = root()
    handle, temp = tempfile.mkstemp(prefix=".status-", suffix=".json", dir=folder)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(data, out)
        os.replace(temp, status_file(status.run))
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def update_status(run: str, **changes: Any) -> Status | None:
    """Read, change and write one run's status (the run's own processes call this)."""
    status = read_status(run)
    if status is None:
        return None
    for key, value in changes.items():
        setattr(status, key, value)
    write_status(status)
    return status


def read_status(run: str) -> Status | None:
    try:
        data = json.loads(status_file(run).read_text(encoding="utf-8"))
        known = {k: data[k] for k in Status.__dataclass_fields__ if k in data and k != "alive"}
        status = Status(**known)
    except (OSError, ValueError, TypeError):
        return None
    status.alive = lock_held(run)
    return status


def lock_held(run: str) -> bool:
    """Whether the run's supervisor is alive (it holds the lock)."""
    import fcntl

    try:
        fd = os.open(lock_file(run), os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError as exc:
        return exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN)
    finally:
        os.close(fd)
    return False


def hold_lock(run: str) -> int:
    """Take the run's lock for this process's life; the fd (not inherited by children)."""
    import fcntl

    fd = os.open(lock_file(run), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return fd


def all_runs() -> list[Status]:
    """Every run with a status, newest first; finished ones older than a day are
    forgotten (their files removed)."""
    found: list[Status] = []
    for path in root().glob("bg_*.json"):
        status = read_status(path.stem)
        if status is None:
            continue
        if not status.alive and time.time() - status.updated > KEEP_FINISHED:
            forget(status.run)
            continue
        found.append(status)
    return sorted(found, key=lambda s: s.started, reverse=True)


def live_runs() -> list[Status]:
    return [s for s in all_runs() if s.alive]


def forget(run: str) -> None:
    for path in (status_file(run), lock_file(run)):
        path.unlink(missing_ok=True)


def find(ident: str) -> Status | None:
    """A run by its session id, its run id, or a unique prefix of either (live first)."""
    if len(ident) < 3:
        raise LookupError(f"{ident!r} is too short to name a background run (ketch ps lists them)")
    runs = all_runs()
    for exact in (s for s in runs if ident in (s.session_id, s.run)):
        return exact
    matches = [s for s in runs if s.session_id.startswith(ident) or s.run.startswith(ident)]
    live = [s for s in matches if s.alive]
    if len(live) == 1:
        return live[0]
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise LookupError(
            f"{ident!r} names {len(matches)} background runs ({', '.join(s.session_id or s.run for s in matches[:5])}); give more of the id"
        )
    return None


@contextlib.contextmanager
def launching() -> Iterator[None]:
    """Held while a launch checks the limits and starts its run."""
    import fcntl

    fd = os.open(root() / "launch.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def socket_path(run: str) -> Path:
    """Where the run's worker listens: beside its status, or a short private folder."""
    near = root() / f"{run}.sock"
    if len(os.fsencode(near)) <= MAX_SOCKET_PATH:
        return near
    folder = Path(tempfile.gettempdir()) / f"ketch-{os.getuid()}"
    with contextlib.suppress(FileExistsError):
        folder.mkdir(mode=0o700)
    info = os.lstat(folder)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise OSError(f"{folder} is not a private folder of this user; not using it for sockets")
    return folder / f"{run}.sock"


def process_start(pid: int) -> str:
    """The start time of ``pid`` (field 22 of /proc/PID/stat), "" when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    return text.rsplit(")", 1)[-1].split()[19]
