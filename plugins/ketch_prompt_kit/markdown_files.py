"""Markdown files with YAML front matter (Claude Code's command and skill files), and
the folders they are read from.

Project folders (``.ketch/NAME/``, ``.claude/NAME/`` in the workspace) come first, then
the user's own (the user config dir's ``NAME/``, ``~/.claude/NAME/``): a project's file
shadows a user's of the same name. A folder knows whether it is the user's own: only
those, and the folders of a trusted workspace, may run ``!`` lines.

An installed Claude Code plugin's folders come from elsewhere (the plugin that installs
them, through each reader's own hook): such a folder has a ``namespace`` (its files are
``plugin-name:file``), the plugin's root for ``${CLAUDE_PLUGIN_ROOT}``, and the
``trust`` scope its items are pinned in (a ``ketch_trust_kit.TrustScope``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MAX_FILE_BYTES = 256 * 1024


@dataclass(frozen=True)
class Folder:
    path: Path
    label: str  # how the user sees where a file came from: "project .claude/commands"
    users_own: bool  # the user's config dir (not a repository's)
    namespace: str = ""  # a Claude Code plugin's name: its files are "namespace:name"
    files: tuple[Path, ...] = ()  # only these files (a plugin manifest may list single files)
    plugin_root: Path | None = None  # ${CLAUDE_PLUGIN_ROOT} of its files
    plugin_data: Path | None = None  # ${CLAUDE_PLUGIN_DATA} of its files
    trust: Any = None  # a ketch_trust_kit.TrustScope: where its items are pinned (None: workspace)

    def paths(self, pattern: str, *, recursive: bool = True) -> list[Path]:
        """The files to read: those listed, else every match of ``pattern`` below the
        folder (``recursive``) or in it."""
        if self.files:
            return sorted(p for p in self.files if p.is_file())
        if not self.path.is_dir():
            return []
        return sorted(self.path.rglob(pattern) if recursive else self.path.glob(pattern))

    def root(self, workspace: Path) -> Path:
        """What its items' files are named relative to: the plugin's folder, or the workspace."""
        return Path(self.trust.root) if self.trust is not None else workspace

    def variables(self) -> dict[str, str]:
        """Claude Code's plugin variables for its files (none outside a plugin)."""
        found = {}
        if self.plugin_root is not None:
            found["CLAUDE_PLUGIN_ROOT"] = str(self.plugin_root)
        if self.plugin_data is not None:
            found["CLAUDE_PLUGIN_DATA"] = str(self.plugin_data)
        return found

    def named(self, name: str) -> str:
        """A file's name as the person and the model use it (``plugin:name`` in a plugin)."""
        return f"{self.namespace}:{name}" if self.namespace else name


@dataclass
class MarkdownFile:
    path: Path
    meta: dict[str, Any]
    body: str
    folder: Folder
    problem: str = ""  # "line N: what" the front matter had wrong (the file is still used)
    extra: dict[str, Any] = field(default_factory=dict)
    raw: dict[str, str] = field(default_factory=dict)  # top-level values as written

    def text(self, key: str) -> str:
        """A value meant as text: a YAML list or mapping (``argument-hint: [message]``)
        is taken as written."""
        value = self.meta.get(key)
        if isinstance(value, list | dict) and key in self.raw:
            value = self.raw[key]
        return " ".join(str(value).split()) if value is not None else ""

    def report(self) -> str:
        """The front matter's problem as one line naming the file, or ""."""
        return f"{self.path}: {self.problem}" if self.problem else ""


def folders(workspace: Path, name: str) -> list[Folder]:
    """Where files of kind ``name`` (``commands``, ``skills``) are looked for, in precedence order."""
    from ketch.api import config_dir

    home = Path(os.path.expanduser("~"))
    return [
        Folder(workspace / ".ketch" / name, f"project .ketch/{name}", users_own=False),
        Folder(workspace / ".claude" / name, f"project .claude/{name}", users_own=False),
        Folder(config_dir() / name, f"user {name}", users_own=True),
        Folder(home / ".claude" / name, f"user ~/.claude/{name}", users_own=True),
    ]


def hooked_folders(kernel: Any, hook: str) -> tuple[Folder, ...]:
    """The folders other plugins add through a reader's own hook (``commands_folders``,
    ``skills_folders``, ``agents_folders``: an installed Claude Code plugin's)."""
    found: list[Folder] = []
    for _, more in kernel.hooks.call(hook, kernel=kernel):
        found.extend(f for f in more if isinstance(f, Folder))
    return tuple(found)


# Claude Code's front matter parser (src/utils/frontmatterParser.ts, 2.1.2xx): a simple
# ``key: value`` line whose value holds one of these is quoted and the YAML parsed again
# when the first parse fails (``description: Use when: ...``,
# ``argument-hint: [pr-number] [priority]``); ``: `` but not ``12:34`` or ``https://``.
_SPECIAL = re.compile(r"[{}\[\]*&#!|>%@`]|: ")
_SIMPLE = re.compile(r"^([A-Za-z_-]+):\s+(.+)$")
_KEY_LINE = re.compile(r"^([A-Za-z_][\w-]*):(?:\s+(.*))?$")


def _quoted(value: str) -> bool:
    return len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'"


def _requote(lines: list[str], wanted: Callable[[str], bool]) -> list[str]:
    """Each simple ``key: value`` line whose unquoted value ``wanted`` says to quote,
    double-quoted (backslashes and quotes escaped), as Claude Code does."""
    out = []
    for line in lines:
        match = _SIMPLE.match(line)
        if match and not _quoted(match.group(2).rstrip()) and wanted(match.group(2)):
            value = match.group(2).replace("\\", "\\\\").replace('"', '\\"')
            line = f'{match.group(1)}: "{value}"'
        out.append(line)
    return out


def _comment_hash(value: str) -> bool:
    """A ``#`` YAML would read as a comment (silently cutting the value): Claude Code
    quotes such values before the first parse (2.1.214)."""
    return value.startswith("#") or re.search(r"\s#", value) is not None


def _load(lines: list[str]) -> tuple[Any, str, int | None]:
    """(data, error, 0-based line of the error) of YAML text."""
    import yaml

    try:
        return yaml.safe_load("\n".join(lines)), "", None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0] or type(exc).__name__
        return None, str(problem), (mark.line if mark is not None else None)


def _line_by_line(lines: list[str]) -> dict[str, Any]:
    """The last resort: every top-level ``key: value`` line as text (never the whole
    front matter lost); indented lines continue the value before them."""
    found: dict[str, Any] = {}
    key: str | None = None
    for line in lines:
        match = _KEY_LINE.match(line)
        if match:
            key = match.group(1)
            value = (match.group(2) or "").strip()
            found[key] = value[1:-1] if _quoted(value) else value
        elif key is not None and line[:1].isspace() and line.strip():
            found[key] = f"{found[key]} {line.strip()}".strip()
    return found


def parse(text: str) -> tuple[dict[str, Any], str, str]:
    """(front matter, body, problem), read as Claude Code reads it: YAML; on a parse
    error, again with its problematic simple values quoted; and where even that fails,
    each ``key: value`` line as text, with the line and the reason in ``problem``.
    No front matter: ({}, text, "")."""
    if not text.startswith("---"):
        return {}, text, ""
    lines = text.split("\n")
    if lines[0].strip() != "---":
        return {}, text, ""
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() in ("---", "..."))
    except StopIteration:
        return {}, text, "line 1: the front matter has no closing ---; read as plain text"
    body = "\n".join(lines[end + 1 :])
    block = lines[1:end]
    data, error, where = _load(_requote(block, _comment_hash))
    problem = ""
    if error:
        data, retry_error, _ = _load(_requote(block, lambda v: _SPECIAL.search(v) is not None))
        if retry_error:
            data = _line_by_line(block)
            line = f"line {where + 2}" if where is not None else "line 2"
            problem = f"{line}: the front matter is not valid YAML ({error}); its key: value lines were read as text"
    if data is None:
        data = {}
    if not isinstance(data, dict):
        return {}, body, "line 2: the front matter is not a mapping of keys; ignored"
    return {str(k): v for k, v in data.items()}, body, problem


def raw_values(text: str) -> dict[str, str]:
    """Each top-level ``key: value`` of the front matter as written (for a key whose
    YAML value is a list where text is meant: ``argument-hint: [message]``)."""
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        return {}
    block: list[str] = []
    for line in lines[1:]:
        if line.strip() in ("---", "..."):
            return {k: str(v) for k, v in _line_by_line(block).items()}
        block.append(line)
    return {}


def read(path: Path, folder: Folder) -> MarkdownFile | None:
    """The file, or None when it cannot be read as text (too big, not UTF-8, gone):
    :func:`unreadable` says why."""
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            return None
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError):
        return None
    text = text.replace("\r\n", "\n")
    meta, body, problem = parse(text)
    return MarkdownFile(path, meta, body.strip("\n"), folder, problem, raw=raw_values(text))


def unreadable(path: Path) -> str:
    """Why :func:`read` gave nothing for ``path``, in one line naming it."""
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            return f"{path}: {size:,} bytes, over the {MAX_FILE_BYTES // 1024} KiB limit; skipped"
        path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        return f"{path}: not UTF-8 text (byte {exc.start}); skipped"
    except OSError as exc:
        return f"{path}: cannot be read ({exc.strerror or exc}); skipped"
    return f"{path}: cannot be read; skipped"


def first_line(body: str) -> str:
    """The first non-empty line of a body, without Markdown heading marks (a default description)."""
    for line in body.splitlines():
        stripped = line.strip().lstrip("#").strip()
        if stripped:
            return stripped[:200]
    return ""
