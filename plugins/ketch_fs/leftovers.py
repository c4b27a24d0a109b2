"""Sweeping the temporary files a killed write left behind.

Every write through ``ketch_tool_kit.writing`` (``write_file``, ``edit_file``, a
language server's rename) goes to ``.NAME.ketch-PID-XXXX.tmp`` next to the
target and rename it into place. A writer killed in between (SIGKILL, a power cut)
leaves that file, possibly tens of MB. On the next session start, a background walk
of the workspace removes every such file whose writer process is gone (files of the
older ``.NAME.ketch-XXXX.tmp`` form, which carry no process id, once they are an hour
old). The walk skips ``.git`` and symbolic links and stops after a time budget, so a
huge tree never delays anything.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from ketch_tool_kit.writing import TEMP

OLD_FORM_AGE = 3600.0  # seconds before a leftover without a pid counts as abandoned
BUDGET = 5.0  # seconds of walking at most


def _writer_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: alive
    return True


def abandoned(entry: os.DirEntry[str], now: float) -> bool:
    match = TEMP.match(entry.name)
    if match is None or not entry.is_file(follow_symlinks=False):
        return False
    pid = match.group("pid")
    if pid is not None:
        return not _writer_alive(int(pid))
    return now - entry.stat(follow_symlinks=False).st_mtime > OLD_FORM_AGE


def sweep(root: Path, *, budget: float = BUDGET) -> list[Path]:
    """Remove abandoned temporary files under ``root``; returns what was removed."""
    removed: list[Path] = []
    deadline = time.monotonic() + budget
    now = time.time()
    stack = [str(root)]
    while stack and time.monotonic() < deadline:
        directory = stack.pop()
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name != ".git":
                        stack.append(entry.path)
                elif abandoned(entry, now):
                    os.unlink(entry.path)
                    removed.append(Path(entry.path))
            except OSError:
                continue
    return removed


def sweep_in_background(root: Path) -> threading.Thread:
    thread = threading.Thread(target=sweep, args=(root,), name="ketch-fs-sweep", daemon=True)
    thread.start()
    return thread
