"""The pins: which items' digests the person trusted, per workspace.

One JSON file in the user config dir (``trust.json``, beside ``config.toml``, mode
0600): trust is the person's declaration, like their config. The hard guards treat
that directory as ketch's own, so no tool call can write it; only ``ketch trust`` and
``/trust`` do. Workspaces are keyed by their resolved path and compared exactly
(``/w/proj`` is neither ``/w/proj-evil`` nor ``/w/proj/sub``)::

    {"version": 1,
     "workspaces": {"/home/me/proj": {
        "pins": {"<digest>": {"key": ".ketch/config.toml: hook PreToolUse #1", "kind": "hook",
                              "pinned": "2025-01-01T00:00:00Z"}},
        "offered": {"<digest>": {...}},     # items seen at run time (an editor's MCP servers)
        "legacy": true}}}                   # trusted by path by an older ketch

Pins keep only digests and names. An offered item also keeps what it showed (its
owner leaves out environment values), so that ``ketch trust`` can show it again.
Writes are atomic (a temporary file, then a rename) under a lock file, so two ketch
processes pinning at once lose nothing.

An older ketch kept a path list (``trusted.toml``). Its entries become workspaces
with no pins and ``legacy`` set: their items must be shown and pinned like any
others, and the first session there says so once.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from ketch_trust_kit.items import TrustItem

FILE_NAME = "trust.json"
LEGACY_FILE = "trusted.toml"
VERSION = 1


class TrustStoreError(Exception):
    """The pin file cannot be read or written (one line; nothing is trusted meanwhile)."""


def workspace_key(workspace: Path | str) -> str:
    return os.path.realpath(os.path.abspath(os.fspath(workspace)))


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class PinStore:
    """The pin file. Every method reads it afresh (another process may have pinned)."""

    def __init__(self, path: Path | None = None) -> None:
        if path is None:
            from ketch.api import config_dir

            path = config_dir() / FILE_NAME
        self.path = path

    # --- reading ---------------------------------------------------------------------

    def _read(self) -> dict[str, Any]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return self._migrated()
        except (OSError, UnicodeDecodeError) as exc:
            raise TrustStoreError(
                f"{self.path}: cannot read it ({exc}); nothing is trusted until it is fixed"
            ) from None
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise TrustStoreError(
                f"{self.path}: not valid JSON ({exc}); nothing is trusted until it is fixed or removed"
            ) from None
        if not isinstance(data, dict) or not isinstance(data.get("workspaces", {}), dict):
            raise TrustStoreError(
                f"{self.path}: not a trust file; nothing is trusted until it is fixed or removed"
            )
        data.setdefault("workspaces", {})
        return data

    def _migrated(self) -> dict[str, Any]:
        """The pins an older ketch's path list stands for: none (see the module)."""
        data: dict[str, Any] = {"version": VERSION, "workspaces": {}}
        legacy = self.path.parent / LEGACY_FILE
        try:
            import tomllib

            entries = tomllib.loads(legacy.read_text(encoding="utf-8")).get("workspaces", [])
        except (OSError, ValueError, UnicodeDecodeError):
            return data
        if isinstance(entries, list):
            for entry in entries:
                if isinstance(entry, str):
                    data["workspaces"][workspace_key(entry)] = {"pins": {}, "legacy": True}
        return data

    def _entry(self, data: dict[str, Any], workspace: Path | str) -> dict[str, Any]:
        entry = data["workspaces"].get(workspace_key(workspace))
        return entry if isinstance(entry, dict) else {}

    def pins(self, workspace: Path | str, *, inherit: bool = True) -> dict[str, dict[str, Any]]:
        """``{digest: {"key", "kind", "pinned"}}`` of one workspace; in a linked git
        worktree, the main work tree's too (``inherit``; pins are by content, so only
        identical items match: see :mod:`ketch_trust_kit.lineage`)."""
        from ketch_trust_kit.lineage import trust_parent

        data = self._read()
        own = self._pins_of(data, workspace)
        parent = trust_parent(workspace) if inherit else None
        return {**self._pins_of(data, parent), **own} if parent is not None else own

    def _pins_of(self, data: dict[str, Any], workspace: Path | str) -> dict[str, dict[str, Any]]:
        pins = self._entry(data, workspace).get("pins")
        return (
            {d: v for d, v in pins.items() if isinstance(v, dict)} if isinstance(pins, dict) else {}
        )

    def is_pinned(self, workspace: Path | str, item: TrustItem) -> bool:
        try:
            return item.digest in self.pins(workspace)
        except TrustStoreError:
            return False

    def changed(self, workspace: Path | str, item: TrustItem) -> bool:
        """Whether an item of the same key was pinned with other content (it changed
        since the person trusted it, rather than being new)."""
        try:
            pins = self.pins(workspace)
        except TrustStoreError:
            return False
        return item.digest not in pins and any(p.get("key") == item.key for p in pins.values())

    def workspaces(self) -> dict[str, int]:
        """Every workspace with pins (or a legacy entry), and how many pins it has."""
        found = {}
        for path, entry in self._read()["workspaces"].items():
            if isinstance(entry, dict):
                pins = entry.get("pins")
                found[path] = len(pins) if isinstance(pins, dict) else 0
        return found

    def offered(self, workspace: Path | str) -> dict[str, dict[str, Any]]:
        offered = self._entry(self._read(), workspace).get("offered")
        return dict(offered) if isinstance(offered, dict) else {}

    # --- writing -----------------------------------------------------------------------

    @contextlib.contextmanager
    def _editing(self) -> Iterator[dict[str, Any]]:
        """Read, let the caller change, write atomically; under a lock file."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        lock_path = self.path.with_name(self.path.name + ".lock")
        with open(lock_path, "a") as lock:
            with contextlib.suppress(ImportError, OSError):
                import fcntl

                fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
            data = self._read()
            data["version"] = VERSION
            yield data
            self._write(data)

    def _write(self, data: dict[str, Any]) -> None:
        handle, temp = tempfile.mkstemp(prefix=".trust-", suffix=".json", dir=self.path.parent)
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                json.dump(data, out, indent=1, sort_keys=True, ensure_ascii=False)
                out.write("\n")
            os.chmod(temp, 0o600)
            os.replace(temp, self.path)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise

    def pin(self, workspace: Path | str, items: Iterable[TrustItem]) -> int:
        """Pin the items' digests (a changed item's old pin goes); how many are new."""
        items = list(items)
        with self._editing() as data:
            entry = data["workspaces"].setdefault(workspace_key(workspace), {})
            pins = entry.setdefault("pins", {})
            offered = entry.get("offered") if isinstance(entry.get("offered"), dict) else {}
            keys = {item.key for item in items}
            digests = {item.digest for item in items}
            for digest in [d for d, v in pins.items() if v.get("key") in keys and d not in digests]:
                del pins[digest]
            added = 0
            for item in items:
                if item.digest not in pins:
                    added += 1
                pins[item.digest] = {"key": item.key, "kind": item.kind, "pinned": _now()}
                offered.pop(item.digest, None)
            entry.pop("legacy", None)
        return added

    def unpin(self, workspace: Path | str, digests: Iterable[str] | None = None) -> int:
        """Withdraw pins (all of the workspace's when ``digests`` is None); how many."""
        with self._editing() as data:
            key = workspace_key(workspace)
            entry = data["workspaces"].get(key)
            if not isinstance(entry, dict):
                return 0
            found = entry.get("pins")
            pins: dict[str, Any] = found if isinstance(found, dict) else {}
            if digests is None:
                count = len(pins)
                del data["workspaces"][key]
                return count
            wanted = set(digests)
            gone = [d for d in pins if d in wanted]
            for digest in gone:
                del pins[digest]
            return len(gone)

    def offer(self, workspace: Path | str, items: Iterable[TrustItem]) -> None:
        """Remember items met at run time (not in any workspace file, e.g. an editor's
        MCP servers) so that ``ketch trust`` can show them; names only, no content."""
        items = [i for i in items]
        if not items:
            return
        with self._editing() as data:
            entry = data["workspaces"].setdefault(workspace_key(workspace), {})
            offered = entry.setdefault("offered", {})
            for item in items:
                offered[item.digest] = {
                    "key": item.key,
                    "kind": item.kind,
                    "name": item.name,
                    "source": item.source,
                    "shows": item.shows,
                    "note": item.note,
                    "seen": _now(),
                }

    def take_legacy(self, workspace: Path | str) -> bool:
        """True once for a workspace an older ketch trusted by path (then forgotten)."""
        try:
            if not self._entry(self._read(), workspace).get("legacy"):
                return False
            with self._editing() as data:
                entry = data["workspaces"].get(workspace_key(workspace))
                if isinstance(entry, dict):
                    entry.pop("legacy", None)
            return True
        except (TrustStoreError, OSError):
            return False
