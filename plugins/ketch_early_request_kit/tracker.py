"""What a start reads and looks at before its first request: the record's key.

From the process's start until its first request leaves, every file opened for
reading, every directory listed (Python's audit events) and every path whose status
was asked (``os.stat``/``os.lstat``, which ``Path.exists()`` and ``os.path.isfile``
call and no audit event reports) is noted, with each ``git status`` ketch ran. Then
it stops: a list of paths and nothing else, decided on later, off the request's path.
"""

from __future__ import annotations

import os
import sys
from typing import Any

_WRITING = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC
_CODE = (".py", ".pyc", ".pyi", ".so", ".pth", ".zip", ".typed")
_SYSTEM = ("/proc/", "/sys/", "/dev/")
_WATCHED = frozenset({"open", "os.scandir", "os.listdir", "os.mkdir", "subprocess.Popen"})


class Tracker:
    def __init__(self) -> None:
        self.on = False
        self.read: list[str] = []  # opened for reading, or listed
        self.looked: list[str] = []  # only its status asked
        self.written: list[str] = []
        self.made: list[str] = []
        self.popen: list[tuple[list[str], str]] = []
        self._stat: Any = None
        self._lstat: Any = None

    def start(self) -> None:
        self.on = True
        sys.addaudithook(self._audit)  # cannot be removed: it does nothing once off
        self._stat, self._lstat = os.stat, os.lstat
        os.stat = self._tracked(self._stat)  # type: ignore[assignment]
        os.lstat = self._tracked(self._lstat)  # type: ignore[assignment]

    def stop(self) -> None:
        if not self.on:
            return
        self.on = False
        if os.stat is not self._stat and getattr(os.stat, "__wrapped__", None) is self._stat:
            os.stat = self._stat  # type: ignore[assignment]
        if os.lstat is not self._lstat and getattr(os.lstat, "__wrapped__", None) is self._lstat:
            os.lstat = self._lstat  # type: ignore[assignment]

    def _tracked(self, original: Any) -> Any:
        def tracked(path: Any, *args: Any, **kwargs: Any) -> Any:
            if self.on and isinstance(path, (str, os.PathLike)):
                self.looked.append(os.fspath(path))  # type: ignore[arg-type]
            return original(path, *args, **kwargs)

        tracked.__wrapped__ = original  # type: ignore[attr-defined]
        return tracked

    def _audit(self, event: str, args: tuple[Any, ...]) -> None:
        # Called for every audited event of the process's life (thousands at a start):
        # one set lookup for all the others.
        if event not in _WATCHED or not self.on:
            return
        if event == "open":
            path, _mode, flags = args
            if isinstance(path, (str, bytes)):
                (self.written if flags & _WRITING else self.read).append(os.fsdecode(path))
        elif event in ("os.scandir", "os.listdir"):
            if args and isinstance(args[0], (str, bytes)):
                self.read.append(os.fsdecode(args[0]))
        elif event == "os.mkdir":
            if isinstance(args[0], (str, bytes)):
                self.made.append(os.fsdecode(args[0]))
        elif event == "subprocess.Popen":
            _executable, argv, cwd = args[0], args[1], args[2]
            if isinstance(argv, (list, tuple)):
                self.popen.append(([os.fsdecode(a) for a in argv], os.fsdecode(cwd or os.getcwd())))

    def paths(self, skip: tuple[str, ...]) -> tuple[list[str], list[str]]:
        """The paths read or listed, and those only looked at, that are not code
        (under ``skip``), system files, the temporary directory itself (every program
        makes and removes entries there) or ketch's own writes (each absolute)."""
        import tempfile

        temporary = os.path.abspath(tempfile.gettempdir())
        mine = tuple(os.path.join(os.path.abspath(p), "") for p in self.made)
        written = {os.path.abspath(p) for p in self.written}

        def kept(paths: list[str]) -> set[str]:
            out = set()
            for path in paths:
                full = os.path.abspath(path)
                if not (
                    full.endswith(_CODE)
                    or "__pycache__" in full
                    or full.startswith(_SYSTEM)
                    or os.path.join(full, "").startswith(skip)
                    or full.startswith(mine)
                    or full in written
                    or full == temporary
                ):
                    out.add(full)
            return out

        read = kept(self.read)
        return sorted(read), sorted(kept(self.looked) - read)

    def git_status_runs(self) -> list[tuple[list[str], str]] | None:
        """The ``git status`` argument lists ketch ran (after git's fixed ``--no-pager``
        and ``-c`` settings), with their directories; None when something else ran that
        the key cannot check (a ``git`` other than status or config)."""
        runs = []
        for argv, cwd in self.popen:
            if os.path.basename(argv[0]) != "git":
                continue  # a probe of the system (bwrap), not of the workspace
            args = argv[1:]
            while args and (args[0] == "--no-pager" or args[0] == "-c"):
                args = args[2:] if args[0] == "-c" else args[1:]
            if args[:1] == ["status"]:
                runs.append((args, cwd))
            elif args[:1] != ["config"]:
                return None
        return runs


TRACKER = Tracker()  # the process's one start (allowed module state: one per process)
