"""The prompt-history file's format: its one owner (the shell writes it, the store
re-seals it when the data key rotates).

``<state dir>/prompt-history``: a header line, then one line per entry, the base64 of
the field cipher's envelope. Each entry's AAD binds the file's purpose and the entry's
position, so an entry cannot be moved to another file or to another place in this one.
A file that does not start with the header is not ours (or from a future version):
never decrypted blindly.
"""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import FieldCipher

FILE_NAME = "prompt-history"
HEADER = b"ketch prompt-history v1\n"
PURPOSE = b"ketch/prompt-history/v1"


def history_path() -> Path:
    """Where the prompt history lives (the state dir)."""
    from ketch.api import state_dir

    return state_dir() / FILE_NAME


def entry_aad(index: int) -> bytes:
    """What one entry's ciphertext is bound to: this file's purpose and its position."""
    return PURPOSE + b"\x00" + str(index).encode("ascii")


def seal_entry(cipher: FieldCipher, plain: bytes, index: int) -> bytes:
    """One entry's line (without its newline) for position ``index``."""
    return base64.b64encode(cipher.encrypt(plain, entry_aad(index)))


def open_entry(cipher: FieldCipher, line: bytes, index: int) -> bytes:
    """The plaintext of the line at ``index``; raises (IntegrityError, ValueError) for a
    tampered, moved, truncated line or one under another key."""
    return cipher.decrypt(base64.b64decode(line, validate=True), entry_aad(index))


def entry_lines(data: bytes) -> list[bytes] | None:
    """The entry lines of a file's bytes; None when it does not start with the header."""
    if not data.startswith(HEADER):
        return None
    return data[len(HEADER) :].splitlines()


def file_bytes(lines: list[bytes]) -> bytes:
    """A whole file holding these entry lines."""
    return HEADER + b"".join(line + b"\n" for line in lines)


def reseal(path: Path | None, old: FieldCipher, new: FieldCipher) -> int:
    """Re-seal the file from ``old`` to ``new`` atomically (the store's key rotation):
    lines already under ``new`` stay, lines neither opens stay as they are. Returns how
    many lines were re-sealed."""
    from ketch.api import IntegrityError

    path = history_path() if path is None else path
    try:
        lines = entry_lines(path.read_bytes())
    except FileNotFoundError:
        return 0
    if lines is None:
        return 0
    out, changed = [], 0
    for index, line in enumerate(lines):
        try:
            plain = open_entry(old, line, index)
        except (IntegrityError, ValueError):
            out.append(line)
            continue
        out.append(seal_entry(new, plain, index))
        changed += 1
    if changed:
        tmp = path.with_name(path.name + ".rekey")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, file_bytes(out))
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    return changed
