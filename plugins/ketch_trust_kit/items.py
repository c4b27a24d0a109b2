"""The item: one thing a workspace holds that can make something run or widen
authority, and its digest.

An item's digest is SHA-256 over a canonical form (JSON, keys sorted, no blanks) of
exactly what would run or be granted — its kind, where it is defined, its content as
the owner reads it (a hook's event, matcher and command; an MCP server's whole command
line, environment and URL; a rule's text) — and of every workspace file it runs, by
content. A hook whose command is unchanged but whose ``scripts/verify.py`` was
rewritten has a new digest; so has one whose script did not exist when it was pinned.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

VERSION = 1
MAX_FILES = 64  # files one item can name: a command line is not a file list
# Programs that run a file of the workspace without naming it: the file they read.
PROGRAM_FILES = {
    "make": ("Makefile", "makefile", "GNUmakefile"),
    "gmake": ("Makefile", "makefile", "GNUmakefile"),
    "npm": ("package.json",),
    "npx": ("package.json",),
    "yarn": ("package.json", ".yarnrc.yml", ".yarnrc"),
    "pnpm": ("package.json",),
    "bun": ("package.json",),
    "just": ("justfile", "Justfile", ".justfile"),
    "tox": ("tox.ini",),
    "nox": ("noxfile.py",),
    "task": ("Taskfile.yml", "Taskfile.yaml"),
    "rake": ("Rakefile",),
}
SCRIPT_SUFFIXES = (
    ".py",
    ".sh",
    ".bash",
    ".zsh",
    ".js",
    ".mjs",
    ".cjs",
    ".ts",
    ".rb",
    ".pl",
    ".php",
    ".lua",
    ".ps1",
)
# Words that stand for the folder an item's files are relative to: the workspace, or an
# installed Claude Code plugin's own folder (its items are pinned by that folder).
PLACEHOLDERS = ("CLAUDE_PROJECT_DIR", "KETCH_WORKSPACE", "PWD", "CLAUDE_PLUGIN_ROOT")


def canonical(value: Any) -> str:
    """The canonical text of a JSON-able value (keys sorted, no blanks, UTF-8 kept)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def file_digest(path: Path) -> str:
    """``sha256:HEX`` of a file's bytes, ``link:TARGET`` for a symlink, ``missing``,
    ``dir`` or ``unreadable``."""
    try:
        if path.is_symlink():
            return "link:" + os.readlink(path)
        if path.is_dir():
            return "dir"
        digest = hashlib.sha256()
        with open(path, "rb") as handle:
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
        return "sha256:" + digest.hexdigest()
    except FileNotFoundError:
        return "missing"
    except OSError:
        return "unreadable"


@dataclass(frozen=True)
class TrustItem:
    """One item. ``kind`` and ``name`` say what it is in words ("hook",
    "PreToolUse #1"); ``source`` where it is defined (workspace-relative); ``shows``
    exactly what runs or is granted, as the person reviews it; ``files`` the workspace
    files it runs, each with its digest; ``setting`` its place in the workspace's
    ``.ketch/config.toml`` when it is a config value (the trust plugin applies only the
    pinned parts of such a value); ``note`` anything the person should know beside it
    (e.g. that ketch itself does not run it)."""

    kind: str
    name: str
    source: str
    shows: str
    digest: str
    files: tuple[tuple[str, str], ...] = ()
    setting: tuple[str | int, ...] | None = None
    note: str = ""
    content: Any = field(default=None, compare=False, repr=False)

    @property
    def key(self) -> str:
        """Which item this is, stable while its content changes (how a changed item is
        told from a new one)."""
        return f"{self.source}: {self.kind} {self.name}"

    @property
    def label(self) -> str:
        """One line: kind, name and where."""
        return f"{self.kind} {self.name} ({self.source})"


def _relative(path: Path, workspace: Path) -> str | None:
    """``path`` relative to the workspace when it is lexically inside it, else None."""
    root = Path(os.path.abspath(workspace))
    absolute = Path(os.path.normpath(os.path.abspath(path)))
    try:
        return absolute.relative_to(root).as_posix()
    except ValueError:
        return None


def _split(text: str) -> list[str]:
    try:
        return shlex.split(text, comments=False, posix=True)
    except ValueError:
        return text.split()


def _expand(word: str, workspace: Path) -> str:
    for name in PLACEHOLDERS:
        for spelled in (f"${{{name}}}", f"${name}"):
            word = word.replace(spelled, str(workspace))
    return word


def _looks_like_path(word: str) -> bool:
    if "://" in word:
        return False
    return "/" in word or word.endswith(SCRIPT_SUFFIXES) or word.startswith(".")


def command_files(
    command: str | Sequence[str], workspace: Path, cwd: Path | None = None
) -> list[Path]:
    """The workspace files a command line runs or reads to run, as far as its words
    show: every word (or ``--opt=VALUE`` value) that names a path inside the workspace
    — existing or not yet (a script the model may create later changes the digest) —,
    the words of a ``sh -c '...'`` string, and the file a task runner reads (``make``:
    the Makefile, ``npm``: package.json...). Paths outside the workspace are the
    person's own and are not listed."""
    cwd = cwd or workspace
    words = list(command) if not isinstance(command, str) else _split(command)
    found: list[Path] = []
    seen: set[str] = set()

    def add(path: Path) -> None:
        relative = _relative(path, workspace)
        if relative is None or relative in seen or relative == ".":
            return
        seen.add(relative)
        found.append(Path(workspace) / relative)

    def scan(items: list[str], depth: int) -> None:
        for index, raw in enumerate(items):
            word = _expand(raw, workspace)
            if depth < 2 and any(c.isspace() for c in word):
                scan(_split(word), depth + 1)  # sh -c 'python scripts/x.py'
                continue
            previous = items[index - 1] if index else ";"
            if previous in ("&&", "||", "|", "&", ";") or previous.endswith(";"):
                for name in PROGRAM_FILES.get(os.path.basename(word), ()):
                    if os.path.lexists(cwd / name):
                        add(cwd / name)
            if word.startswith("-"):
                word = word.split("=", 1)[1] if "=" in word else ""
            if word and not word.startswith("~") and _looks_like_path(word):
                path = Path(word)
                add(path if path.is_absolute() else cwd / path)

    scan(words, 0)
    return found[:MAX_FILES]


def make_item(
    kind: str,
    name: str,
    source: str,
    content: Any,
    shows: str,
    *,
    workspace: Path,
    command: str | Sequence[str] | None = None,
    files: Iterable[Path] = (),
    setting: tuple[str | int, ...] | None = None,
    note: str = "",
) -> TrustItem:
    """An item with its digest. ``content`` is what the owner would run or grant, as
    JSON-able data; ``command`` is scanned for the workspace files it runs
    (:func:`command_files`); ``files`` adds files named another way."""
    paths = list(files)
    if command is not None:
        paths += command_files(command, workspace)
    digests: dict[str, str] = {}
    for path in paths[:MAX_FILES]:
        relative = _relative(path, workspace)
        if relative is not None:
            digests[relative] = file_digest(Path(workspace) / relative)
    body = {"v": VERSION, "kind": kind, "source": source, "content": content, "files": digests}
    return TrustItem(
        kind=kind,
        name=name,
        source=source,
        shows=shows,
        digest=sha256_text(canonical(body)),
        files=tuple(sorted(digests.items())),
        setting=setting,
        note=note,
        content=content,
    )
