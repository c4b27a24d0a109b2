"""A marketplace's catalog (``.claude-plugin/marketplace.json``) and where each of its
plugins comes from, read as Claude Code reads them.

A catalog has a ``name`` (what ``install NAME@MARKETPLACE`` names), an ``owner`` and
``plugins``: entries with a ``name`` and a ``source``. A source is a path inside the
marketplace (``"./plugins/x"``; a bare name under ``metadata.pluginRoot``), or an
object: ``{"source": "github", "repo": "owner/repo"}``, ``{"source": "url", "url":
"https://....git"}``, ``{"source": "git-subdir", "url": ..., "path": "sub/dir"}``, each
with an optional ``ref`` (branch or tag) and ``sha`` (the commit: it wins). ``npm``,
``pip``, ``archive`` and ``command`` sources are refused with the reason: the first two
and the last run programs to produce the plugin. An entry may carry any field of a
plugin manifest (``commands``, ``hooks``, ``mcpServers``...) and ``strict``.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ketch.api import KetchError
from ketch_claude_plugins.paths import valid_name

CATALOG = Path(".claude-plugin") / "marketplace.json"
MAX_CATALOG_BYTES = 4 * 1024 * 1024
_SHA = re.compile(r"[0-9a-fA-F]{40}")
_REPO = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")
_SCP = re.compile(r"[A-Za-z0-9_.-]+@[A-Za-z0-9_.-]+:[^\s]+")
SCHEMES = {"file": "file", "https": "https", "http": "http", "ssh": "ssh", "git": "git"}
REFUSED = {
    "npm": "npm sources are installed with `npm install`, which runs the package's own scripts",
    "pip": "pip sources are installed by running pip",
    "command": "a command source runs a program of the marketplace's to produce the plugin",
    "archive": "ketch does not download zip archives (use a git source)",
}


@dataclass
class Catalog:
    name: str
    root: Path  # the folder holding .claude-plugin/
    owner: str = ""
    description: str = ""
    plugins: dict[str, dict[str, Any]] = field(default_factory=dict)
    plugin_root: str = ""  # metadata.pluginRoot: where bare source names are
    problems: list[str] = field(default_factory=list)  # one line per entry not taken


@dataclass(frozen=True)
class Source:
    """Where a plugin's files are: a folder (``path``) or a git repository (``url``,
    ``ref``, ``sha``, and ``subdir`` inside it)."""

    path: Path | None = None
    url: str = ""
    ref: str = ""
    sha: str = ""
    subdir: str = ""

    def describe(self) -> str:
        if self.path is not None:
            return str(self.path)
        pin = f"@{self.sha[:12]}" if self.sha else (f"#{self.ref}" if self.ref else "")
        return f"{self.url}{pin}" + (f" ({self.subdir})" if self.subdir else "")


def read_catalog(root: Path) -> Catalog:
    """The catalog of the marketplace at ``root``; a clear error when there is none or
    it is not one. Entries that cannot be used are listed in ``problems``."""
    path = root / CATALOG
    try:
        if path.stat().st_size > MAX_CATALOG_BYTES:
            raise KetchError(f"{path}: over {MAX_CATALOG_BYTES // (1024 * 1024)} MiB; not read")
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise KetchError(
            f"{root} holds no {CATALOG.as_posix()}: not a Claude Code marketplace"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise KetchError(f"{path}: cannot read it ({exc})") from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise KetchError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise KetchError(f"{path}: not a marketplace (a JSON object is expected)")
    name = data.get("name")
    if not isinstance(name, str) or not valid_name(name) or "@" in name:
        raise KetchError(f'{path}: its "name" ({name!r}) is not a marketplace name (kebab-case)')
    entries = data.get("plugins")
    if not isinstance(entries, list):
        raise KetchError(f'{path}: no "plugins" list')
    metadata = _table(data.get("metadata"))
    owner = _table(data.get("owner"))
    catalog = Catalog(
        name=name,
        root=root,
        owner=str(owner.get("name") or ""),
        description=str(data.get("description") or metadata.get("description") or ""),
        plugin_root=str(metadata.get("pluginRoot") or ""),
    )
    for index, entry in enumerate(entries):
        where = f"{path}: plugins[{index}]"
        if not isinstance(entry, dict):
            catalog.problems.append(f"{where}: not an object; skipped")
            continue
        plugin = entry.get("name")
        if not isinstance(plugin, str) or not valid_name(plugin) or "@" in plugin:
            catalog.problems.append(f"{where}: name {plugin!r} is not a plugin name; skipped")
            continue
        if "source" not in entry:
            catalog.problems.append(f"{where} ({plugin}): no source; skipped")
            continue
        if plugin in catalog.plugins:
            catalog.problems.append(f"{where}: a second plugin named {plugin}; skipped")
            continue
        catalog.plugins[plugin] = entry
    return catalog


def _table(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def inside(path: Path, root: Path) -> bool:
    """Whether ``path`` (symlinks resolved) is ``root`` or below it."""
    real, base = os.path.realpath(path), os.path.realpath(root)
    return real == base or real.startswith(base.rstrip(os.sep) + os.sep)


def relative_path(root: Path, text: str, what: str) -> Path:
    """``./sub/dir`` (or ``.``) below ``root``: never outside it, a link included."""
    if not (text in (".", "./") or text.startswith("./")):
        raise KetchError(f"{what}: {text!r} must be a relative path starting with ./")
    parts = Path(text).parts
    if ".." in parts:
        raise KetchError(f"{what}: {text!r} reaches outside with ..")
    path = root.joinpath(*[p for p in parts if p != "."])
    if not inside(path, root):
        raise KetchError(f"{what}: {text!r} leads outside (through a link)")
    return path


def git_url(text: str, what: str) -> str:
    """A git URL ketch clones: ``https://``, ``http://``, ``ssh://``, ``git://``,
    ``file://``, ``user@host:path``, or GitHub's ``owner/repo``."""
    text = text.strip()
    if text.startswith("-") or "::" in text or any(c in text for c in "\n\r\0"):
        raise KetchError(f"{what}: {text!r} is not a git URL ketch clones")
    scheme = text.split("://", 1)[0].lower() if "://" in text else ""
    if scheme:
        if scheme not in SCHEMES:
            raise KetchError(f"{what}: {scheme}:// URLs are not cloned (https, ssh, git, file)")
        return text
    if _SCP.fullmatch(text):
        return text
    if _REPO.fullmatch(text):
        return f"https://github.com/{text.removesuffix('.git')}.git"
    raise KetchError(
        f"{what}: {text!r} is neither a URL (https://, ssh://, file://...) nor owner/repo"
    )


def transport(url: str) -> str:
    """The protocol a URL needs git to open."""
    if "://" in url:
        return SCHEMES[url.split("://", 1)[0].lower()]
    return "ssh"  # user@host:path


def source_of(catalog: Catalog, entry: dict[str, Any]) -> Source:
    """Where an entry's files are; a clear error when ketch cannot fetch them."""
    name = entry.get("name")
    what = f"{catalog.name}: plugin {name}: source"
    source = entry.get("source")
    if isinstance(source, str):
        if "/" not in source and source not in (".", "") and catalog.plugin_root:
            base = relative_path(
                catalog.root, catalog.plugin_root, f"{catalog.name}: metadata.pluginRoot"
            )
            return Source(path=relative_path(base, f"./{source}", what))
        return Source(path=relative_path(catalog.root, source, what))
    if not isinstance(source, dict):
        raise KetchError(f"{what}: neither a path nor an object")
    kind = str(source.get("source") or "")
    if kind in REFUSED:
        raise KetchError(f"{what}: {kind} is not supported: {REFUSED[kind]}")
    ref = source.get("ref") or ""
    sha = source.get("sha") or ""
    if not isinstance(ref, str) or ref.startswith("-") or any(c.isspace() for c in ref):
        raise KetchError(f"{what}: ref {ref!r} is not a branch or tag name")
    if sha and not (isinstance(sha, str) and _SHA.fullmatch(sha)):
        raise KetchError(f"{what}: sha {sha!r} is not a 40-character commit id")
    if kind == "github":
        repo = source.get("repo")
        if not isinstance(repo, str) or not _REPO.fullmatch(repo):
            raise KetchError(f"{what}: repo {repo!r} is not owner/repo")
        return Source(url=git_url(repo, what), ref=ref, sha=sha)
    if kind in ("url", "git", "git-subdir"):
        url = source.get("url")
        if not isinstance(url, str):
            raise KetchError(f"{what}: no url")
        subdir = ""
        # git-subdir needs a path; a url source may carry one too (Anthropic's own
        # catalog has such entries, the plugin in that folder of the repository)
        if kind == "git-subdir" or (kind == "url" and source.get("path") is not None):
            sub = source.get("path")
            if not isinstance(sub, str) or not sub.strip("/"):
                raise KetchError(f"{what}: {kind} needs a path (a folder of the repository)")
            if ".." in Path(sub).parts or sub.startswith("/"):
                raise KetchError(f"{what}: path {sub!r} reaches outside the repository")
            subdir = sub.strip("/")
        return Source(url=git_url(url, what), ref=ref, sha=sha, subdir=subdir)
    raise KetchError(f"{what}: unknown kind {kind!r} (a path, github, url or git-subdir)")
