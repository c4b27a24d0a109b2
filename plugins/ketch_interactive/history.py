"""Prompt history, encrypted at rest, as a prompt_toolkit ``History``.

Everything typed at the shell prompt is something the user typed, so it never reaches
the disk in plaintext: each entry is encrypted on its own with the field cipher the
encryption plugin provides (the same key as the session store), and the AAD binds the
file's purpose and the entry's position, so an entry cannot be moved to another file
or to another place in this one. Without a cipher the history lives in memory only.

The file's format is ``ketch_prompt_kit.history_file``'s (the store re-seals the same
file when the key rotates). Appends take an exclusive lock on a sibling lock file, so
two shells never give two entries the same index.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from prompt_toolkit.history import History, InMemoryHistory

from ketch_prompt_kit.history_file import (
    HEADER,
    PURPOSE,
    entry_lines,
    file_bytes,
    history_path,
    open_entry,
    seal_entry,
)

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: appends go unlocked
    fcntl = None  # type: ignore[assignment]

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import FieldCipher, Kernel

KEEP = 1000  # entries offered for recall; the file is rewritten when it holds twice as many


class EncryptedPromptHistory(History):
    """History whose entries are each encrypted; undecryptable entries are skipped."""

    def __init__(self, path: Path, cipher: FieldCipher, *, keep: int = KEEP) -> None:
        super().__init__()
        self.path = path
        self.cipher = cipher
        self.keep = keep
        self.skipped = 0  # entries that failed authentication on load
        self.write_error: str | None = None  # why the last append failed, if it did

    # --- prompt_toolkit's interface ----------------------------------------------------

    def load_history_strings(self) -> Iterable[str]:
        """Newest first, as prompt_toolkit wants them."""
        entries = self._read_entries()
        # Trim only a file this key reads whole: entries under another key (a keyring
        # swapped for a while) are left alone, never destroyed by housekeeping.
        if len(entries) > 2 * self.keep and self.skipped == 0:
            self._rewrite(entries[-self.keep :])
        return list(reversed(entries[-self.keep :]))

    def store_string(self, string: str) -> None:
        if self.write_error is not None:
            return  # it failed once: stay in memory rather than fail on every line
        try:
            self._append(string)
        except OSError as exc:
            self.write_error = f"cannot save prompt history to {self.path}: {exc.strerror or exc}"
        except Exception as exc:  # noqa: BLE001 - e.g. the keyring went away: never write plaintext
            self.write_error = f"cannot encrypt prompt history ({getattr(exc, 'message', None) or exc}); keeping it in memory"

    # --- the file ------------------------------------------------------------------------

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(self.path.with_name(self.path.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the lock

    def _lines(self) -> list[bytes]:
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return []
        return entry_lines(data) or []  # not ours (or from a future version): nothing

    def _read_entries(self) -> list[str]:
        entries: list[str] = []
        self.skipped = 0
        with self._locked():
            lines = self._lines()
        for index, line in enumerate(lines):
            try:
                plain = open_entry(self.cipher, line, index)
                entries.append(plain.decode("utf-8"))
            except Exception:  # noqa: BLE001 - IntegrityError, bad base64, bad UTF-8 alike
                # Tampered, truncated, moved, or written under another key: skip it.
                self.skipped += 1
        return entries

    def _append(self, text: str) -> None:
        with self._locked():
            index = len(self._lines())
            line = seal_entry(self.cipher, text.encode("utf-8"), index) + b"\n"
            fresh = not self.path.exists() or self.path.stat().st_size == 0
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            try:
                os.write(fd, (HEADER if fresh else b"") + line)
            finally:
                os.close(fd)

    def _rewrite(self, entries: list[str]) -> None:
        """Keep only the newest entries, re-encrypted under their new positions."""
        tmp = self.path.with_name(self.path.name + ".tmp")
        try:
            with self._locked():
                body = file_bytes(
                    [seal_entry(self.cipher, t.encode("utf-8"), i) for i, t in enumerate(entries)]
                )
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                try:
                    os.write(fd, body)
                    os.fsync(fd)
                finally:
                    os.close(fd)
                os.replace(tmp, self.path)
        except OSError:
            tmp.unlink(missing_ok=True)  # keep the longer file; trimming is only housekeeping


def open_history(kernel: Kernel) -> tuple[History, str | None]:
    """The shell's history and, when it is memory-only, a one-line reason to tell the user.

    Call it after the session has started: the store decides whether a data key may be
    minted (a brand-new store) or must already exist; the history never mints one over
    existing data, it only mints when there is neither a store nor a history file.
    """
    memory_only = "prompt history is kept in memory only"
    if kernel.hooks.first("store_problem", kernel=kernel) is not None:
        return (
            InMemoryHistory(),
            None,
        )  # the session's notice already says nothing is saved, and why
    if str(kernel.settings.section("storage").get("encryption", "on")) == "off":
        return InMemoryHistory(), f"{memory_only} (storage.encryption is off)"
    path = history_path()
    try:
        cipher = kernel.hooks.first("ketch_field_cipher", settings=kernel.settings)
        if cipher is None:
            return InMemoryHistory(), (
                f"{memory_only}: no encryption plugin is loaded, and ketch never writes "
                "what you type to disk unencrypted"
            )
        unlock = getattr(cipher, "unlock", None)
        if callable(unlock):
            unlock(create=_store_absent(kernel) and not path.exists())
        else:
            cipher.encrypt(b"", PURPOSE)  # a cipher without unlock: check it works at all
    except Exception as exc:  # noqa: BLE001 - a locked keyring must not stop the shell
        reason = getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}"
        return InMemoryHistory(), f"{memory_only} (no encryption key: {reason.splitlines()[0]})"
    return EncryptedPromptHistory(path, cipher), None


def _store_absent(kernel: Kernel) -> bool:
    try:
        return kernel.store is None
    except Exception:  # noqa: BLE001 - a store that cannot open: do not mint either
        return False
