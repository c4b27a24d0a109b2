"""Masking secrets inside the sandbox, and noticing for real when a command met one.

Each masked path gets its own empty placeholder (a file, or a directory holding
empty files of the same names), bound read-only over the secret for one command. A
git config whose URLs carry credentials gets a copy without them instead (git needs
its config; the token stays out), and its opens are not reported.
From outside the sandbox, an inotify watch on each placeholder sees every open of it:
the same inode, whatever mount namespace the opener is in. So "this command opened
``.env`` and found it masked" is an observed fact, not a guess from the command text,
and ``ls`` or ``stat`` (which never open the file) do not count. Placeholders are
per command, so a background job's reads are never blamed on another command.

Placeholders live in a private temporary directory (mode 0700) outside the workspace.
One inotify instance serves every command of the process (closing one costs the
kernel a grace period of tens of milliseconds); a command's watches go with its
placeholders, which are removed off the command's path once it has ended.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MAX_DIR_ENTRIES = 200  # a masked directory shows at most this many names (each watched)


@dataclass
class Mask:
    target: Path  # the secret, as the command sees it
    source: Path  # its placeholder
    hint: str  # the rule that would expose it, e.g. "read(.env)"
    shown: str  # how to name it to the model: relative to the workspace when inside
    watched: bool = True  # report opens (a sanitized copy works as the file: no report)


def git_configs_with_credentials(dirs: list[Path]) -> list[Path]:
    """The ``config`` of each git directory among ``dirs`` whose URLs carry a password
    or token (a remote ``https://user:TOKEN@host``). The sandbox shows each as a copy
    with the credentials taken out, so git keeps working and the token stays out."""
    from ketch_secret_kit import content_secret

    found: list[Path] = []
    for directory in dirs:
        config = directory / "config"
        if (
            (directory / "HEAD").is_file()
            and config.is_file()
            and not config.is_symlink()
            and content_secret(config)
        ):
            found.append(config)
    return found


def _sanitized(target: Path) -> bytes | None:
    """A git config's content without URL credentials (None: not a git config)."""
    if target.name != "config" or not (target.parent / "HEAD").is_file():
        return None
    from ketch_secret_kit.files import without_url_credentials

    return without_url_credentials(target)


class _Opens:
    """The process's one inotify instance for placeholders, and who each watch is for."""

    def __init__(self) -> None:
        from inotify_simple import INotify, flags

        self.flags = flags
        self.inotify = INotify(nonblocking=True)
        self.owners: dict[int, tuple[MaskSet, Mask]] = {}
        self.lock = threading.Lock()

    def add(self, path: Path, owner: MaskSet, mask: Mask) -> int | None:
        with self.lock:
            try:
                wd = self.inotify.add_watch(os.fspath(path), self.flags.OPEN)
            except OSError:
                return None
            self.owners[wd] = (owner, mask)
            return wd

    def drain(self) -> None:
        """Hand every queued open to the command whose placeholder it was."""
        with self.lock:
            for event in self.inotify.read(timeout=0):
                owned = self.owners.get(event.wd)
                if owned is None:
                    continue
                if event.mask & self.flags.IGNORED:  # the placeholder was removed
                    self.owners.pop(event.wd, None)
                elif event.mask & self.flags.OPEN:
                    owner, mask = owned
                    owner.met(mask)

    def release(self, wds: list[int]) -> None:
        with self.lock:
            for wd in wds:
                if self.owners.pop(wd, None) is not None:
                    with contextlib.suppress(OSError):
                        self.inotify.rm_watch(wd)


_SHARED: dict[str, Any] = {}


def _opens() -> _Opens | None:
    if "opens" not in _SHARED:
        try:
            _SHARED["opens"] = _Opens()
        except (ImportError, OSError):  # not on Linux, or no inotify: nothing to report
            _SHARED["opens"] = None
    return _SHARED["opens"]  # type: ignore[no-any-return]


@dataclass(eq=False)
class MaskSet:
    """The placeholders and watches of one command."""

    directory: Path
    masks: list[Mask] = field(default_factory=list)
    _wds: list[int] = field(default_factory=list)
    _met: list[Mask] = field(default_factory=list)
    _closed: bool = False

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
            sanitized = _sanitized(target)
            if sanitized is not None:
                source.write_bytes(sanitized)
                mask = Mask(target, source, hint, shown or str(target), watched=False)
                self.masks.append(mask)
                return mask
            source.touch()
        mask = Mask(target, source, hint, shown or str(target))
        self.masks.append(mask)
        return mask

    def watch(self) -> None:
        """Start seeing opens (call once every placeholder exists)."""
        opens = _opens() if self.masks else None
        if opens is None:
            return
        for mask in self.masks:
            if not mask.watched:
                continue
            paths = [mask.source]
            if mask.source.is_dir():
                paths += sorted(mask.source.iterdir())
            for path in paths:
                wd = opens.add(path, self, mask)
                if wd is not None:
                    self._wds.append(wd)

    def met(self, mask: Mask) -> None:
        if mask not in self._met:
            self._met.append(mask)

    def report(self, ended: bool) -> str | None:
        """What the command met since the last report; with ``ended``, also clean up."""
        opens = _opens() if self._wds else None
        if opens is not None:
            opens.drain()
        met, self._met = self._met, []
        if ended:
            self.close()
        if not met:
            return None
        return "\n".join(
            f"[sandbox] {m.shown} is masked in the sandbox (the command found it empty); "
            f"allow reading it with {m.hint}, or approve a command that names it"
            for m in met
        )

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        opens = _opens() if self._wds else None
        if opens is not None:
            opens.release(self._wds)
        self._wds = []
        # Removing a directory can take milliseconds: not on the command's path (and
        # whatever is still pending when ketch exits goes then).
        _PENDING.add(self.directory)
        threading.Thread(target=_remove, args=(self.directory,), daemon=True).start()


_PENDING: set[Path] = set()


def _remove(directory: Path) -> None:
    shutil.rmtree(directory, ignore_errors=True)
    _PENDING.discard(directory)


@atexit.register
def _remove_pending() -> None:
    for directory in list(_PENDING):
        _remove(directory)


Reporter = Callable[[bool], "str | None"]
