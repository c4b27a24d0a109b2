"""Text encodings and line endings: decode any file safely, write it back the same way.

Decoding order: a byte-order mark decides; else strict UTF-8; else, when no valid
multi-byte UTF-8 sequence occurs at all (a legacy 8-bit file), the encoding
``charset_normalizer`` detects, if it round-trips the bytes exactly; else UTF-8 with
``surrogateescape``, which keeps invalid bytes as they are when the file is written
back (the model sees them as U+FFFD). A NUL byte in the first 8000 bytes without a
UTF-16/32 BOM means binary, as git decides.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass

BINARY_SNIFF_BYTES = 8000

# UTF-32 LE's BOM starts with UTF-16 LE's: test the longer ones first.
_BOMS: tuple[tuple[bytes, str, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32-le", "UTF-32 LE with BOM"),
    (codecs.BOM_UTF32_BE, "utf-32-be", "UTF-32 BE with BOM"),
    (codecs.BOM_UTF8, "utf-8", "UTF-8 with BOM"),
    (codecs.BOM_UTF16_LE, "utf-16-le", "UTF-16 LE with BOM"),
    (codecs.BOM_UTF16_BE, "utf-16-be", "UTF-16 BE with BOM"),
)
_WIDE = {"utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be"}
_LATIN_FAMILY = {
    codecs.lookup(name).name
    for name in (
        "cp1250",
        "cp1252",
        "cp1254",
        "cp1257",
        "cp775",
        "cp850",
        "cp858",
        "latin-1",
        "iso8859-2",
        "iso8859-3",
        "iso8859-4",
        "iso8859-9",
        "iso8859-10",
        "iso8859-13",
        "iso8859-14",
        "iso8859-15",
        "iso8859-16",
    )
}


class BinaryFile(ValueError):
    """The bytes are not text."""


@dataclass(frozen=True)
class Encoding:
    codec: str  # a Python codec name, without BOM handling
    label: str  # how it is described to the model
    bom: bytes = b""
    errors: str = "strict"  # "surrogateescape" for UTF-8 with invalid bytes

    @property
    def wide(self) -> bool:
        """UTF-16/32: lines cannot be split on the byte 0x0A."""
        return self.codec in _WIDE

    @property
    def is_plain_utf8(self) -> bool:
        return self.codec == "utf-8" and not self.bom and self.errors == "strict"

    def decode(self, data: bytes) -> str:
        body = data[len(self.bom) :] if self.bom and data.startswith(self.bom) else data
        return body.decode(self.codec, self.errors)

    def encode(self, text: str) -> bytes:
        return self.bom + text.encode(self.codec, self.errors)


UTF8 = Encoding("utf-8", "UTF-8")


def bom_encoding(data: bytes) -> Encoding | None:
    for bom, codec, label in _BOMS:
        if data.startswith(bom):
            return Encoding(codec, label, bom)
    return None


def looks_binary(head: bytes) -> bool:
    """NUL in the first 8000 bytes, unless a UTF-16/32 BOM explains it."""
    sample = head[:BINARY_SNIFF_BYTES]
    if b"\x00" not in sample:
        return False
    found = bom_encoding(sample)
    return found is None or not found.wide


def describe_binary(head: bytes) -> str:
    """A guess at what a binary file is, for the refusal message."""
    signatures = (
        (b"\x89PNG", "a PNG image"),
        (b"\xff\xd8\xff", "a JPEG image"),
        (b"GIF8", "a GIF image"),
        (b"%PDF", "a PDF document"),
        (b"PK\x03\x04", "a zip archive (or a jar/docx/xlsx/wheel)"),
        (b"\x7fELF", "an ELF executable or library"),
        (b"\x1f\x8b", "a gzip archive"),
        (b"SQLite format 3", "an SQLite database"),
    )
    for magic, what in signatures:
        if head.startswith(magic):
            return what
    if head[:4] in (b"\x00\x00\x01\x00",):
        return "an icon"
    if len(head) > 16 and head[:2] in (b"\x42\x4d",):
        return "a bitmap image"
    return "binary data"


def _is_utf8(data: bytes, complete: bool) -> bool:
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    try:
        decoder.decode(data, final=complete)
    except UnicodeDecodeError:
        return False
    return True


def detect(data: bytes, *, complete: bool = True) -> Encoding:
    """The encoding of ``data`` (the whole file when ``complete``, else its start)."""
    found = bom_encoding(data)
    if found is not None:
        return found
    if _is_utf8(data, complete):
        return UTF8
    text = data.decode("utf-8", "surrogateescape")
    invalid = sum(1 for ch in text if "\udc80" <= ch <= "\udcff")
    # Real UTF-8 sequences beside the bad bytes: a UTF-8 file with a few broken bytes,
    # not a legacy 8-bit file (where valid multi-byte sequences almost never occur).
    has_utf8 = any(ch > "\x7f" and not ("\udc80" <= ch <= "\udcff") for ch in text)
    if not has_utf8:
        guessed = _guess(data, complete)
        if guessed is not None:
            return guessed
    return Encoding(
        "utf-8",
        f"UTF-8 with {invalid} invalid byte{'s' if invalid != 1 else ''} (shown as \ufffd)",
        errors="surrogateescape",
    )


def _guess(data: bytes, complete: bool) -> Encoding | None:
    try:
        from charset_normalizer import from_bytes
    except ImportError:  # pragma: no cover - a declared dependency
        return None
    best = from_bytes(data[: 1 << 20]).best()
    if best is None:
        return None
    codec = codecs.lookup(best.encoding).name
    if codec in _LATIN_FAMILY or codec.startswith("mac-"):
        # Short Western texts fool the detector between sibling code pages (ą for à);
        # Windows-1252 (then Latin-1) is by far the most common of them, so it wins.
        for preferred in ("cp1252", "latin-1"):
            try:
                data.decode(preferred)
            except UnicodeDecodeError:
                continue
            codec = codecs.lookup(preferred).name
            break
    if (
        codec in _WIDE
        or codec.startswith(("utf-16", "utf-32", "utf_16", "utf_32"))
        or codec in ("utf-8", "ascii")
    ):
        return None
    try:
        # Only an encoding that gives back exactly these bytes is safe to write with.
        if complete and data.decode(codec).encode(codec) != data:
            return None
        if b"\n".decode(codec) != "\n":
            return None
    except (UnicodeError, LookupError):
        return None
    return Encoding(codec, f"{codec} (detected; not UTF-8)")


@dataclass
class TextFile:
    """A whole text file in memory, as decoded, with what it takes to write it back."""

    encoding: Encoding
    text: str  # decoded, without the BOM, line endings as in the file
    crlf: bool  # every line ends in \r\n

    @classmethod
    def from_bytes(cls, data: bytes) -> TextFile:
        if looks_binary(data):
            raise BinaryFile(describe_binary(data))
        encoding = detect(data, complete=True)
        text = encoding.decode(data)
        newlines = text.count("\n")
        crlf = newlines > 0 and text.count("\r\n") == newlines
        return cls(encoding, text, crlf)

    def lf_text(self) -> str:
        """The text with CRLF line endings turned into LF (the model's view)."""
        return self.text.replace("\r\n", "\n") if self.crlf else self.text

    def to_bytes(self, lf_text: str) -> bytes:
        """Encode text written in the model's view back in this file's style.

        Raises UnicodeEncodeError when the text has characters the encoding lacks.
        """
        text = lf_text.replace("\r\n", "\n").replace("\n", "\r\n") if self.crlf else lf_text
        return self.encoding.encode(text)


def unencodable_message(exc: UnicodeEncodeError, encoding: Encoding) -> str:
    bad = exc.object[exc.start : exc.end]
    shown = ", ".join(f"{ch!r} (U+{ord(ch):04X})" for ch in bad[:3])
    return (
        f"the file is encoded as {encoding.label}, which cannot hold {shown}; "
        "use only characters that encoding has (or ASCII escapes the language allows)"
    )
