"""Instruction files: AGENTS.md, KETCH.md, CLAUDE.md from the user config dir and the
workspace root, plus the files they point to, followed once.

Pointers:

* ``@path`` (as Claude Code's imports): any text file;
* a Markdown link to a local document, ``[style](docs/style.md)``: only .md, .markdown,
  .mdx, .rst and .txt files (links to source files are references, not includes).

Pointers in code spans and code blocks are ignored (parsed with markdown-it). Paths are
relative to the file that points; a workspace file may only point inside the workspace,
a user file inside the user config dir or the workspace. Links are followed once: a
pointed-to file's own pointers are not. Secret-looking files (``.env``, keys) are never
read. Every file is capped, the whole set too; each is cleaned of invisible Unicode.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote

from ketch_context.config import ContextSettings
from ketch_context.files import Read, display, looks_secret, read_text, resolve, within
from ketch_text_kit.unicode import strip_invisible

DOC_SUFFIXES = {".md", ".markdown", ".mdx", ".rst", ".txt"}
_AT_POINTER = re.compile(r"(?:^|(?<=[\s(\[]))@((?:~/|\.{1,2}/|/)?\.?\w[\w.\-/]*)")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")


@dataclass
class Instruction:
    path: Path
    name: str  # for people: relative to the workspace, or ~/...
    scope: str  # "user" or "workspace"
    text: str
    size: int
    truncated: bool
    removed: dict[str, int]  # invisible characters stripped, by kind
    included_from: str | None = None


@dataclass
class Instructions:
    files: list[Instruction] = field(default_factory=list)
    excluded: list[str] = field(default_factory=list)  # what was left out, and why
    stamp: tuple[tuple[str, float, int], ...] = ()  # (path, mtime, size) of every file read


def pointers(text: str) -> list[tuple[str, str]]:
    """(kind, target) for every ``@path`` and local Markdown link outside code."""
    from markdown_it import MarkdownIt

    found: list[tuple[str, str]] = []
    for token in MarkdownIt("commonmark").parse(text):
        for child in token.children or []:
            if child.type == "link_open":
                href = str(child.attrGet("href") or "")
                if href and not href.startswith("#") and not _SCHEME.match(href):
                    found.append(("link", unquote(href.split("#", 1)[0].split("?", 1)[0])))
            elif child.type == "text":
                found += [("@", m.rstrip(".,;:)")) for m in _AT_POINTER.findall(child.content)]
    return list(dict.fromkeys((k, t) for k, t in found if t))


def _stat(path: Path) -> tuple[str, float, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (str(path), st.st_mtime, st.st_size)


def stamp_of(
    workspace: Path, config_dir: Path, settings: ContextSettings, loaded: Instructions | None
) -> tuple[tuple[str, float, int], ...]:
    """What the instructions depend on: the candidate files and every file read last time."""
    paths = [root / name for root in (config_dir, workspace) for name in settings.instruction_files]
    if loaded is not None:
        paths += [f.path for f in loaded.files]
    stamps = []
    for path in dict.fromkeys(paths):
        stat = _stat(path)
        stamps.append(stat if stat else (str(path), 0.0, -1))
    return tuple(stamps)


def load(workspace: Path, config_dir: Path, settings: ContextSettings) -> Instructions:
    workspace = resolve(workspace)
    config_root = resolve(config_dir)
    result = Instructions()
    seen: set[Path] = set()
    budget = settings.instructions_max_total_bytes
    roots = [("user", config_root, [config_root, workspace]), ("workspace", workspace, [workspace])]
    for scope, root, allowed in roots:
        for name in settings.instruction_files:
            candidate = root / name
            if not candidate.is_file():
                continue
            path = resolve(candidate)
            if path in seen:
                continue
            if not any(within(path, r) for r in allowed):
                result.excluded.append(
                    f"{display(candidate, workspace)}: a link to outside the {scope} folder, not read"
                )
                continue
            seen.add(path)
            item = _read(
                path,
                display(path, workspace),
                scope,
                min(settings.instruction_max_bytes, budget),
                result,
            )
            if item is None:
                continue
            budget -= len(item.text.encode("utf-8"))
            result.files.append(item)
            if settings.follow_pointers and settings.max_pointers_per_file:
                budget = _follow(item, allowed, workspace, settings, seen, budget, result)
    result.stamp = stamp_of(workspace, config_dir, settings, result)
    return result


def _read(
    path: Path, name: str, scope: str, limit: int, result: Instructions, parent: str | None = None
) -> Instruction | None:
    if limit <= 0:
        result.excluded.append(f"{name}: left out, the instruction files together passed their cap")
        return None
    read = read_text(path, limit)
    if not isinstance(read, Read):
        result.excluded.append(f"{name}: {read}")
        return None
    text, removed = strip_invisible(read.text)
    if read.truncated:
        result.excluded.append(f"{name}: cut at {limit:,} of {read.size:,} bytes")
    return Instruction(path, name, scope, text, read.size, read.truncated, removed, parent)


def _follow(
    item: Instruction,
    allowed: list[Path],
    workspace: Path,
    settings: ContextSettings,
    seen: set[Path],
    budget: int,
    result: Instructions,
) -> int:
    followed = 0
    for kind, target in pointers(item.text):
        raw = (
            Path(target).expanduser()
            if item.scope == "user" and target.startswith("~/")
            else Path(target)
        )
        candidate = raw if raw.is_absolute() else item.path.parent / raw
        path = resolve(candidate)
        label = f"{target} (from {item.name})"
        if not path.is_file():
            continue  # not a file here: an @mention or a link to something else
        if kind == "link" and path.suffix.lower() not in DOC_SUFFIXES:
            continue
        if path in seen:
            continue
        if not any(within(path, root) for root in allowed):
            result.excluded.append(
                f"{label}: outside the {'workspace' if item.scope == 'workspace' else 'config dir and workspace'}, not followed"
            )
            continue
        if looks_secret(path):
            result.excluded.append(f"{label}: looks like a secret, not read")
            continue
        if followed >= settings.max_pointers_per_file:
            result.excluded.append(
                f"{label}: more than {settings.max_pointers_per_file} pointers in {item.name}, not followed"
            )
            continue
        seen.add(path)
        pointed = _read(
            path,
            display(path, workspace),
            item.scope,
            min(settings.pointer_max_bytes, budget),
            result,
            parent=item.name,
        )
        if pointed is None:
            continue
        followed += 1
        budget -= len(pointed.text.encode("utf-8"))
        result.files.append(pointed)
    return budget
