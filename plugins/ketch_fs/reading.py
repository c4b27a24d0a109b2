"""Reading a file in one streaming pass: the requested lines, the line count, and a
fingerprint (size, mtime, SHA-256) for the read-coverage guard.

Memory stays bounded whatever the file: lines outside the requested range are only
counted, and an over-long line keeps only its first few kilobytes.
"""

from __future__ import annotations

import hashlib
import io
import os
from collections.abc import Callable
from dataclasses import dataclass, field

from ketch_tool_kit.textfile import Encoding, detect, looks_binary
from ketch_tool_kit.writing import CHUNK, Fingerprint

DETECT_BYTES = 64 * 1024


@dataclass
class Line:
    number: int
    text: str  # decoded, without its line ending; cut to the kept bytes
    length: int  # bytes in the whole line (without its ending)
    complete: bool  # every byte of the line was kept


@dataclass
class ReadResult:
    lines: list[Line]
    total_lines: int
    fingerprint: Fingerprint
    encoding: Encoding | None  # None for a binary file
    binary_head: bytes = b""
    notes: list[str] = field(default_factory=list)


class _Scanner:
    """Splits a byte stream into numbered lines, keeping those in [first, last]."""

    def __init__(self, first: int, last: int, keep_bytes: int) -> None:
        self.first, self.last, self.keep_bytes = first, last, keep_bytes
        self.done = 0  # lines completed so far
        self.partial = bytearray()
        self.partial_len = 0
        self.kept: list[
            tuple[int, bytes, int, bool]
        ] = []  # (number, kept bytes, full length, ended in \n)

    def feed(self, chunk: bytes) -> None:
        pos = 0
        size = len(chunk)
        while pos < size:
            if self.done >= self.last:
                # Past the range: only count what is left.
                newlines = chunk.count(b"\n", pos)
                if newlines:
                    self.done += newlines
                    self.partial_len = size - (chunk.rfind(b"\n") + 1)
                else:
                    self.partial_len += size - pos
                return
            end = chunk.find(b"\n", pos)
            stop = size if end < 0 else end + 1
            self._extend(chunk, pos, stop)
            if end < 0:
                return
            self._finish(newline=True)
            pos = stop

    def _extend(self, chunk: bytes, start: int, stop: int) -> None:
        number = self.done + 1
        if self.first <= number <= self.last:
            room = self.keep_bytes + 2 - len(self.partial)
            if room > 0:
                self.partial += chunk[start : min(stop, start + room)]
        self.partial_len += stop - start

    def _finish(self, *, newline: bool) -> None:
        number = self.done + 1
        if self.first <= number <= self.last:
            self.kept.append((number, bytes(self.partial), self.partial_len, newline))
        self.done = number
        self.partial = bytearray()
        self.partial_len = 0

    def close(self) -> int:
        """Finish the stream; returns the total number of lines."""
        if self.partial_len:
            if self.done < self.last:
                self._finish(newline=False)
            else:
                self.done += 1
                self.partial_len = 0
        return self.done


def _strip_ending(raw: bytes) -> bytes:
    if raw.endswith(b"\n"):
        raw = raw[:-1]
        if raw.endswith(b"\r"):
            raw = raw[:-1]
    return raw


def read_lines(
    fd: int, first: int, last: int, *, keep_bytes: int, max_wide_bytes: int
) -> ReadResult:
    """Read lines ``first``..``last`` (1-based, inclusive) of the open file ``fd``.

    The whole file is streamed once: it is hashed and its lines counted.
    """
    return _scan(
        lambda size: os.read(fd, size),
        os.fstat(fd).st_mtime_ns,
        first,
        last,
        keep_bytes=keep_bytes,
        max_wide_bytes=max_wide_bytes,
    )


def read_lines_of(
    data: bytes, first: int, last: int, *, keep_bytes: int, max_wide_bytes: int
) -> ReadResult:
    """The same for content a file backend returned (an editor's buffer): no mtime."""
    return _scan(
        io.BytesIO(data).read, 0, first, last, keep_bytes=keep_bytes, max_wide_bytes=max_wide_bytes
    )


def _scan(
    read: Callable[[int], bytes],
    mtime_ns: int,
    first: int,
    last: int,
    *,
    keep_bytes: int,
    max_wide_bytes: int,
) -> ReadResult:
    digest = hashlib.sha256()
    size = 0
    scanner = _Scanner(first, last, keep_bytes)
    encoding: Encoding | None = None
    head = b""
    wide_buffer: bytearray | None = None
    notes: list[str] = []
    while True:
        chunk = read(CHUNK)
        if not chunk:
            break
        digest.update(chunk)
        size += len(chunk)
        if encoding is None and not head:
            head = chunk[:DETECT_BYTES]
            if looks_binary(head):
                while chunk := read(CHUNK):  # finish the fingerprint
                    digest.update(chunk)
                    size += len(chunk)
                fp = Fingerprint(size, mtime_ns, digest.hexdigest())
                return ReadResult([], 0, fp, None, binary_head=head)
            encoding = detect(head, complete=len(chunk) < CHUNK and len(head) == len(chunk))
            if encoding.wide:
                wide_buffer = bytearray()
        if wide_buffer is not None:
            if len(wide_buffer) + len(chunk) > max_wide_bytes:
                notes.append(
                    f"the file is {encoding.label if encoding else ''} and larger than {max_wide_bytes} bytes; only its start was decoded"
                )
                wide_buffer = wide_buffer + chunk[: max(0, max_wide_bytes - len(wide_buffer))]
                while chunk := read(CHUNK):
                    digest.update(chunk)
                    size += len(chunk)
                break
            wide_buffer += chunk
            continue
        scanner.feed(chunk)
    fp = Fingerprint(size, mtime_ns, digest.hexdigest())
    if encoding is None:
        encoding = detect(b"")
    decode_as = encoding
    if wide_buffer is not None:
        # UTF-16/32: decode it all, then split the UTF-8 form into lines.
        text = bytes(wide_buffer).decode(encoding.codec, "replace")
        if encoding.bom and text.startswith("\ufeff"):
            text = text[1:]
        scanner.feed(text.encode("utf-8"))
        decode_as = Encoding("utf-8", encoding.label)
    total = scanner.close()
    lines: list[Line] = []
    for number, raw, length, newline in scanner.kept:
        complete = len(raw) >= length
        body = _strip_ending(raw) if complete else raw
        if (
            number == 1
            and encoding.bom
            and decode_as.codec == "utf-8"
            and body.startswith(encoding.bom)
        ):
            body = body[len(encoding.bom) :]
        text = body.decode(decode_as.codec, "replace")
        if not complete:
            text = text.rstrip("\ufffd")  # a multi-byte character cut in half
        ending = 2 if raw.endswith(b"\r\n") else 1 if newline else 0
        lines.append(Line(number, text, max(0, length - ending), complete))
    return ReadResult(lines, total, fp, encoding, notes=notes)


def count_lines(text: str) -> int:
    """Lines as read_file numbers them: a final line without newline counts."""
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)
