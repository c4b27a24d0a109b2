"""The pure-Python grep, for machines without ripgrep: same walk rules (the ``ignore``
crate, as rg), same order (by path, directory entries by name), same records.

Binary files (a NUL in the first 8000 bytes) and files over the size cap are skipped,
as rg skips them; symlinks are never followed.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from pathlib import Path

from ketch_search.hits import Hit, Search
from ketch_search.ripgrep import SearchError
from ketch_tool_kit.paths import open_nofollow
from ketch_tool_kit.textfile import BINARY_SNIFF_BYTES
from ketch_tool_kit.walk import GlobPattern, walk


def compile_pattern(pattern: str, *, ignore_case: bool, literal: bool) -> re.Pattern[str]:
    try:
        return re.compile(
            re.escape(pattern) if literal else pattern, re.IGNORECASE if ignore_case else 0
        )
    except re.error as exc:
        raise SearchError(
            f"invalid regular expression (Python re syntax): {exc}. Fix the pattern, or set literal to true to search for plain text."
        ) from None


def candidate_files(target: Path, glob: str) -> list[Path]:
    if not target.is_dir():
        return [target]
    negate = glob.startswith("!")
    matcher = (
        GlobPattern(glob[1:] if negate else glob, match_base=True) if glob.lstrip("!") else None
    )
    files: list[Path] = []
    for entry in walk(target):
        if entry.is_dir or entry.is_symlink:
            continue
        if (
            matcher is not None
            and matcher.match(entry.path.relative_to(target).as_posix()) == negate
        ):
            continue
        files.append(entry.path)
    files.sort(key=lambda p: [part.encode("utf-8", "surrogateescape") for part in p.parts])
    return files


def search_files(
    files: list[Path],
    regex: re.Pattern[str],
    *,
    context: int,
    cap: int,
    max_filesize: int,
    deadline: float,
    skip: Callable[[Path], bool],
) -> Search:
    search = Search()
    for path in files:
        if time.monotonic() > deadline:
            search.timed_out = True
            break
        data = _read(path, max_filesize)
        if data is None:
            continue
        lines = data.decode("utf-8", "replace").split("\n")
        if skip(path):
            # Left out, as rg's results are: only named, and only when it matched.
            if any(regex.search(line) for line in lines):
                search.skipped.add(path)
            continue
        if lines and lines[-1] == "":
            lines.pop()
        last_emitted = 0  # the last line number already recorded for this file
        pending_after = 0
        for index, line in enumerate(lines):
            number = index + 1
            text = line[:-1] if line.endswith("\r") else line
            if regex.search(text):
                if search.matches >= cap:
                    search.truncated = True
                    return search
                for before in range(max(last_emitted + 1, number - context), number):
                    search.add(Hit(path, before, _plain(lines[before - 1]), False))
                search.add(Hit(path, number, text, True))
                last_emitted = number
                pending_after = context
            elif pending_after:
                search.add(Hit(path, number, text, False))
                last_emitted = number
                pending_after -= 1
    return search


def _plain(line: str) -> str:
    return line[:-1] if line.endswith("\r") else line


def _read(path: Path, max_filesize: int) -> bytes | None:
    try:
        fd = open_nofollow(path)
    except (OSError, ValueError):
        return None
    try:
        st = os.fstat(fd)
        if st.st_size > max_filesize or not _regular(st):
            return None
        head = os.read(fd, BINARY_SNIFF_BYTES)
        if b"\x00" in head:
            return None
        rest = bytearray(head)
        while chunk := os.read(fd, 1 << 20):
            rest += chunk
            if len(rest) > max_filesize:
                return None
        return bytes(rest)
    except OSError:
        return None
    finally:
        os.close(fd)


def _regular(st: os.stat_result) -> bool:
    import stat

    return stat.S_ISREG(st.st_mode)
