"""Classifying files: a secret by its name, or by what it holds.

:func:`secret_reason` is the one question every part of ketch asks about a path before
its content may reach the model: the guards and the policy (a read, a command that
reads it), the read and search tools, ``@`` attachments, context files, the sandbox's
masks. The answer is a short reason ("its name", "it holds a github-token") or None.

Content is read from the start of the file, up to :data:`MAX_BYTES`; binary files (a
NUL byte in the first 8 KiB) are classified by name only. Results are cached by the
file's identity and state -- (device, inode, size, mtime) -- so a tree of 50,000 files
is read once and afterwards costs one ``stat`` per file asked about.

Source code is classified by credential formats and URL userinfo only: the keyword
rule (``password = "..."``), sample JWTs and bearer tokens would find mostly test data
there. Configuration, data,
scripts and files without a known extension get every rule.
"""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path, PurePath

from ketch_secret_kit.content import first_finding
from ketch_secret_kit.names import looks_secret

MAX_BYTES = 1 << 20  # read at most this much of a file to classify it
MAX_CACHED = 1 << 18  # classifications kept (a few hundred bytes each)
SNIFF = 8192  # a NUL byte here makes it binary
# Extensions of source code and prose, where ``key = "value"`` is mostly test data.
CODE_SUFFIXES = frozenset(
    [".py", ".pyi", ".pyx", ".js", ".mjs", ".cjs", ".ts", ".tsx", ".jsx", ".go", ".rs", ".java", ".kt", ".kts", ".scala", ".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".cs", ".rb", ".swift", ".m", ".mm", ".lua", ".pl", ".pm", ".r", ".jl", ".dart", ".ex", ".exs", ".erl", ".hs", ".ml", ".mli", ".clj", ".vue", ".svelte", ".md", ".rst", ".adoc", ".html", ".htm", ".css", ".scss", ".ipynb", ".sql", ".tex"]
)  # fmt: skip


def content_reason(text: str, name: str = "") -> str | None:
    """Why ``text`` (the content of a file named ``name``) is a secret, or None."""
    suffix = PurePath(name).suffix.lower() if name else ""
    finding = first_finding(text, code=suffix in CODE_SUFFIXES)
    if finding is None:
        return None
    return f"it holds a credential ({finding.name})"


# (path, identity) -> reason ("" for none): what _classified answered, readable without
# calling it (lru_cache offers no lookup that does not compute).
_LAST: dict[tuple[str, tuple[int, int, int, int]], str] = {}
_LOCK = threading.Lock()


def _classified(path: str, identity: tuple[int, int, int, int]) -> str | None:
    found = _LAST.get((path, identity))
    if found is not None:
        return found or None
    reason = _classify(path)
    with _LOCK:
        if len(_LAST) >= MAX_CACHED:
            for key in list(_LAST)[: MAX_CACHED // 4]:  # oldest first (insertion order)
                _LAST.pop(key, None)
        _LAST[(path, identity)] = reason or ""
    return reason


def _classify(path: str) -> str | None:
    """The content reason of one file as it is now."""
    try:
        fd = os.open(
            path,
            os.O_RDONLY
            | os.O_NONBLOCK
            | getattr(os, "O_NOFOLLOW", 0)
            | getattr(os, "O_CLOEXEC", 0),
        )
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks: list[bytes] = []
        size = 0
        while size < MAX_BYTES:
            chunk = os.read(fd, min(1 << 16, MAX_BYTES - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError:
        return None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if b"\x00" in data[:SNIFF]:
        return None
    return content_reason(data.decode("utf-8", "replace"), path)


def content_secret(path: str | os.PathLike[str], info: os.stat_result | None = None) -> str | None:
    """Why the regular file at ``path`` is a secret by its content, or None (not a
    regular file, unreadable, binary, or nothing found). Symlinks are not followed:
    pass the resolved path. ``info``: its ``lstat``, when the caller has it."""
    text = os.fspath(path)
    try:
        info = info or os.lstat(text)
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode) or info.st_size == 0:
        return None
    return _classified(text, (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns))


def cached_content_secret(path: str) -> str | None:
    """What :func:`content_secret` would answer, when it is cached: the reason, "" for
    "not a secret", or None when the file was not classified in its current state."""
    try:
        info = os.lstat(path)
    except OSError:
        return ""
    if not stat.S_ISREG(info.st_mode) or info.st_size == 0:
        return ""
    key = (path, (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns))
    return _LAST.get(key)


def warm(root: str | os.PathLike[str], limit: int = 50_000) -> int:
    """Classify the files under ``root`` (not following symlinks, ``.git`` skipped) so a
    later proof finds them cached; returns how many were looked at. Meant for a
    background thread at session start."""
    count = 0
    stack = [os.fspath(root)]
    while stack and count < limit:
        try:
            entries = list(os.scandir(stack.pop()))
        except OSError:
            continue
        for entry in entries:
            if entry.name == ".git" or entry.is_symlink():
                continue
            if entry.is_dir(follow_symlinks=False):
                stack.append(entry.path)
            elif not looks_secret(Path(entry.path)):
                content_secret(entry.path)
                count += 1
    return count


def secret_reason(
    path: str | os.PathLike[str],
    *,
    content: bool = True,
    within: str | os.PathLike[str] | None = None,
) -> str | None:
    """Why ``path`` (already resolved) is a secret -- by its name or directory, or by
    its content -- or None. ``within``: read the content only of files inside this
    directory (the workspace); elsewhere a secret is known by its name (ketch does not
    open files outside the workspace just to classify them)."""
    if looks_secret(Path(path)):
        return "its name looks like a secret"
    if not content:
        return None
    if within is not None and not Path(path).is_relative_to(os.path.realpath(within)):
        return None
    return content_secret(path)


def is_secret(path: str | os.PathLike[str], within: str | os.PathLike[str] | None = None) -> bool:
    return secret_reason(path, within=within) is not None


def cache_clear() -> None:
    """Forget every classification (tests, benchmarks)."""
    _LAST.clear()


def without_url_credentials(path: str | os.PathLike[str]) -> bytes | None:
    """The file's content with every password and token in a URL's userinfo taken out
    (``https://user:TOKEN@host`` -> ``https://user@host``): what the sandbox shows in
    place of a git config whose remotes carry credentials, so git still works there.
    None when it cannot be read."""
    from ketch_secret_kit.content import findings

    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_BYTES)
    except OSError:
        return None
    text = data.decode("utf-8", "surrogateescape")
    spans = sorted(
        (f.start, f.end) for f in findings(text, assignments=False) if f.name.startswith("url-")
    )
    pieces: list[str] = []
    position = 0
    for start, end in spans:
        if start < position:
            continue
        # drop ":password" (or the token user name) and keep the rest of the URL
        cut = start - 1 if start > 0 and text[start - 1] == ":" else start
        pieces.append(text[position:cut])
        position = end + (1 if cut == start and text[end : end + 1] == "@" else 0)
    pieces.append(text[position:])
    return "".join(pieces).encode("utf-8", "surrogateescape")
