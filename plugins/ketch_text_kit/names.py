"""File names as the OS gives them (bytes), shown as text.

On Linux a file name is bytes, not necessarily UTF-8 (``bad\\xff.txt``). Python hands
such a name over as a ``str`` with the undecodable bytes as lone surrogates
(``surrogateescape``), which every ``os`` call turns back into the same bytes, but which
cannot be encoded as UTF-8: not into JSON for the model, not into the store. So a name
is *shown* with each such byte as ``\\xNN`` (and a control character in a name as its
escape too, so one name is always one line), while the name itself, surrogates and
all, is what the tools and checkpoints use on disk.

:func:`os_name` reads the shown form back: where a path given as text does not exist
but the name with ``\\xNN`` taken as raw bytes does, that is the file meant.

Where a name must be kept exactly in JSON or the store (a checkpoint's record, a
session's read records), :func:`portable` gives a lossless form that is valid UTF-8:
each undecodable byte becomes NUL plus two hex digits (a NUL can never be part of a
file name, so nothing else reads the same), and :func:`from_portable` undoes it.
"""

from __future__ import annotations

import os
import re

_SHOWN = re.compile("[\x00-\x1f\x7f\ud800-\udfff]")
_ESCAPED = re.compile(r"\\x([89a-fA-F][0-9a-fA-F])")
_RAW_BYTE = re.compile("[\udc80-\udcff]")
_PORTABLE_BYTE = re.compile("\x00([89a-f][0-9a-f])")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if 0xDC80 <= code <= 0xDCFF:
        return f"\\x{code - 0xDC00:02x}"
    if code < 0x80:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}"  # a surrogate that is no escaped byte (should not happen)


def shown_name(name: str) -> str:
    """A file name or path as valid, one-line text: undecodable bytes as ``\\xNN``."""
    if name.isprintable() and not _SHOWN.search(name):
        return name
    return _SHOWN.sub(_escape, name)


def has_raw_bytes(name: str) -> bool:
    """Whether the name holds bytes that are not UTF-8 (or control characters)."""
    return bool(_SHOWN.search(name))


def os_name(text: str) -> str:
    """The name the OS has for ``text``, reading ``\\xNN`` (80-ff) as the raw byte when
    ``text`` itself does not exist but that name does. Otherwise ``text`` unchanged."""
    if "\\x" not in text or os.path.lexists(text):
        return text
    candidate = _ESCAPED.sub(lambda m: chr(0xDC00 + int(m.group(1), 16)), text)
    try:
        raw = os.fsencode(candidate)
    except UnicodeEncodeError:  # pragma: no cover - surrogates from \x80-\xff always encode
        return text
    return candidate if os.path.lexists(raw) else text


def portable(name: str) -> str:
    """``name`` as valid UTF-8 text that :func:`from_portable` turns back into it."""
    if name.isascii() or not _RAW_BYTE.search(name):
        return name
    return _RAW_BYTE.sub(lambda m: f"\x00{ord(m.group()) - 0xDC00:02x}", name)


def from_portable(text: str) -> str:
    """The name :func:`portable` was given."""
    if "\x00" not in text:
        return text
    return _PORTABLE_BYTE.sub(lambda m: chr(0xDC00 + int(m.group(1), 16)), text)
