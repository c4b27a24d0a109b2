"""Masking secrets inside the sandbox, and noticing for real when a command met one.

Each masked path gets its own empty placeholder (a file, or a directory holding
empty files of the same names), bound read-only over the secret for one command.
From outside the sandbox, an inotify watch on each placeholder sees every open of it:
the same inode, whatever mount namespace the opener is in. So "this command opened
``.env`` and found it masked" is an observed fact, not a guess from the command text,
and ``ls`` or ``stat`` (which never open the file) do not count.

Placeholders live in a private temporary directory (mode 0700) outside the workspace
and are removed, with the watches, when the command has ended.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

MAX_DIR_ENTRIES = 200  # a masked directory shows at most this many names (each watched)


@dataclass
class Mask:
    target: Path  # the secret, as the command sees it
    source: Path  # its placeholder
    hint: str  # the rule that would expose it, e.g. "read(.env)"
    shown: str  # how to name it to the model: relative to the workspace when inside


@dataclass
class MaskSet:
    """The placeholders and watches of one command."""

    directory: Path
    masks: list[Mask] = field(default_factory=list)
    _watch: object | None = None
    _names: dict[int, Mask] = field(default_factory=dict)
    _met: list[Mask] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def create(cls) -> MaskSet:
        return cls(Path(tempfile.mkdtemp(prefix="ketch-masks-")))

    def add(self, target: Path, hint: str, shown: str = "") -> Mask:
        source = self.directory / f"{len(self.masks)}"
        if target.is_dir():
            source.mkdir()
            with contextlib.suppress(OSError):
                for count, entry in enumerate(os.scandir(target)):
                    if count >= MAX_DIR_ENTRIES:
                        break
                    if entry.is_dir(follow_symlinks=False):
                        (source / entry.name).mkdir()
                    else:
                        (source / entry.name).touch()
        else:
            source.touch()
        mask = Mask(target, source, hint, shown or str(target))
        self.masks.append(mask)
        return mask

    def watch(self) -> None:
        """Start seeing opens (call once every placeholder exists)."""
        if not self.masks:
            return
        try:
            from inotify_simple import INotify, flags
        except ImportError:  # not on Linux: no masking to report
            return
        inotify = INotify(nonblocking=True)
        for mask in self.masks:
            paths = [mask.source]
            if mask.source.is_dir():
                paths += sorted(mask.source.iterdir())
            for path in paths:
                with contextlib.suppress(OSError):
                    self._names[inotify.add_watch(os.fspath(path), flags.OPEN)] = mask
        self._watch = inotify

    def _drain(self) -> None:
        inotify = self._watch
        if inotify is None:
            return
        from inotify_simple import flags

        for event in inotify.read(timeout=0):  # type: ignore[attr-defined]
            mask = self._names.get(event.wd)
            if mask is not None and event.mask & flags.OPEN and mask not in self._met:
                self._met.append(mask)

    def report(self, ended: bool) -> str | None:
        """What the command met since the last report; with ``ended``, also clean up."""
        with self._lock:
            self._drain()
            met, self._met = self._met, []
            if ended:
                self.close()
        if not met:
            return None
        return "\n".join(
            f"[sandbox] {m.shown} is masked in the sandbox (the command found it empty); allow reading it with {m.hint}, or approve a command that names it"
            for m in met
        )

    def close(self) -> None:
        if self._watch is not None:
            with contextlib.suppress(OSError):
                self._watch.close()  # type: ignore[attr-defined]
            self._watch = None
        shutil.rmtree(self.directory, ignore_errors=True)


Reporter = Callable[[bool], "str | None"]
