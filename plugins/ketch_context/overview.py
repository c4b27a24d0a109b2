"""A short repository overview: package metadata, the README's head, the top-level tree.

Taken once per session and capped (``[context] overview_max_bytes``). It is
repository content: cleaned of invisible Unicode like the instruction files.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

from ketch_context.files import Read, looks_secret, read_text
from ketch_text_kit.names import shown_name
from ketch_text_kit.unicode import strip_invisible

SKIP_DIRS = {"node_modules", "__pycache__", "venv", "dist", "build", "target", "site-packages"}
README_NAMES = ("README.md", "README.rst", "README.txt", "README", "readme.md")
README_LINES = 30
TREE_ENTRIES = 60


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _toml(path: Path) -> dict[str, Any]:
    read = read_text(path, 256_000)
    if not isinstance(read, Read) or read.truncated:
        return {}
    try:
        return tomllib.loads(read.text)
    except tomllib.TOMLDecodeError:
        return {}


def package_lines(workspace: Path) -> list[str]:
    lines: list[str] = []
    pyproject = workspace / "pyproject.toml"
    if pyproject.is_file():
        data = _toml(pyproject)
        project = data.get("project") or data.get("tool", {}).get("poetry") or {}
        if isinstance(project, dict) and project.get("name"):
            line = f"Python package {project.get('name')} {project.get('version', '')}".rstrip()
            if project.get("description"):
                line += f": {_clip(str(project['description']), 160)}"
            lines.append(line)
            if project.get("requires-python"):
                lines.append(f"  requires Python {project['requires-python']}")
            deps = project.get("dependencies")
            if isinstance(deps, list) and deps:
                names = [re.split(r"[\s<>=!~;\[]", str(d), maxsplit=1)[0] for d in deps]
                lines.append(
                    "  dependencies: " + ", ".join(names[:15]) + (" …" if len(names) > 15 else "")
                )
            scripts = project.get("scripts")
            if isinstance(scripts, dict) and scripts:
                lines.append("  scripts: " + ", ".join(list(scripts)[:10]))
    package_json = workspace / "package.json"
    if package_json.is_file():
        read = read_text(package_json, 256_000)
        try:
            data = json.loads(read.text) if isinstance(read, Read) and not read.truncated else {}
        except ValueError:
            data = {}
        if isinstance(data, dict) and data.get("name"):
            line = f"npm package {data.get('name')} {data.get('version', '')}".rstrip()
            if data.get("description"):
                line += f": {_clip(str(data['description']), 160)}"
            lines.append(line)
            if isinstance(data.get("scripts"), dict) and data["scripts"]:
                lines.append("  npm scripts: " + ", ".join(list(data["scripts"])[:12]))
    cargo = workspace / "Cargo.toml"
    if cargo.is_file():
        package = _toml(cargo).get("package") or {}
        if isinstance(package, dict) and package.get("name"):
            line = f"Rust crate {package.get('name')} {package.get('version', '')}".rstrip()
            if package.get("description"):
                line += f": {_clip(str(package['description']), 160)}"
            lines.append(line)
    gomod = workspace / "go.mod"
    if gomod.is_file():
        read = read_text(gomod, 16_000)
        if isinstance(read, Read):
            module = re.search(r"^module\s+(\S+)", read.text, re.MULTILINE)
            version = re.search(r"^go\s+(\S+)", read.text, re.MULTILINE)
            if module:
                lines.append(
                    f"Go module {module.group(1)}"
                    + (f" (go {version.group(1)})" if version else "")
                )
    return [line if len(line) <= 300 else line[:299] + "…" for line in lines]


def readme_head(workspace: Path) -> tuple[str, str, dict[str, int]]:
    """(file name, its first lines without badges, invisible characters removed)."""
    for name in README_NAMES:
        path = workspace / name
        if not path.is_file() or looks_secret(path):
            continue
        read = read_text(path, 8_192)
        if not isinstance(read, Read):
            continue
        text, removed = strip_invisible(read.text)
        kept = [
            line.rstrip()
            for line in text.splitlines()
            if not line.lstrip().startswith(("[![", "![", "<img", "<p align", "<!--"))
        ]
        while kept and not kept[0].strip():
            kept.pop(0)
        head = "\n".join(kept[:README_LINES]).strip()
        return name, head, removed
    return "", "", {}


def tree(workspace: Path) -> str:
    try:
        entries = sorted(workspace.iterdir(), key=lambda p: (not p.is_dir(), p.name.lower()))
    except OSError:
        return ""
    shown = []
    for entry in entries:
        if (
            entry.name.startswith(".")
            or entry.name in SKIP_DIRS
            or entry.name.endswith(".egg-info")
        ):
            continue
        if entry.is_dir():
            try:
                count = sum(1 for _ in entry.iterdir())
            except OSError:
                count = 0
            shown.append(f"{shown_name(entry.name)}/ ({count})")
        else:
            shown.append(shown_name(entry.name))
    more = len(shown) - TREE_ENTRIES
    return "  ".join(shown[:TREE_ENTRIES]) + (f"  … and {more} more" if more > 0 else "")


def overview_text(workspace: Path, max_bytes: int) -> tuple[str, dict[str, int]]:
    sections = []
    packages = package_lines(workspace)
    if packages:
        sections.append("\n".join(packages))
    listing = tree(workspace)
    if listing:
        sections.append("Top level: " + listing)
    name, head, removed = readme_head(workspace)
    if head:
        sections.append(f"{name} (first lines):\n{head}")
    text = "\n\n".join(sections)
    encoded = text.encode("utf-8")
    if len(encoded) > max_bytes:
        text = encoded[:max_bytes].decode("utf-8", "ignore").rstrip() + "\n…"
    return text, removed
