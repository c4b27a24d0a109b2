"""Pinned tool definitions: a tool whose description or schema changed is held back.

The first time a tool is seen in a workspace, the hash of its description and input
schema is pinned; later, a different hash means the server changed what the model
would read (a "rug pull"), so the tool is not offered until the user approves the
new definition (``/mcp approve TOOL``). Pins live in the user state directory,
under a name for the workspace that is an HMAC of its path under a key derived from
the session store's data key (``Store.keyed_digest``): without the key, the file does
not even confirm a guessed path. When no store is open (``--no-save``, no key), the
older unkeyed name is used, so pins keep protecting; entries under it move to the keyed
name the next time the store is open.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

PINS_FILE = "mcp-pins.json"


def definition_hash(description: str | None, schema: dict[str, Any]) -> str:
    """Over the raw text the server sent, invisible characters included."""
    body = json.dumps(
        {"description": description or "", "input_schema": schema},
        sort_keys=True,
        ensure_ascii=False,
    )
    return hashlib.sha256(body.encode("utf-8")).hexdigest()


PURPOSE = "mcp-pins/workspace"


def workspace_key(workspace: Path) -> str:
    """The unkeyed name (when no store key is at hand, and how older ketch named it)."""
    return hashlib.sha256(
        b"ketch-mcp-pins\x00" + str(workspace).encode("utf-8", "surrogateescape")
    ).hexdigest()


def keyed_name(kernel: Any) -> Callable[[str], str] | None:
    """The store's keyed digest for pin names, or None when no store is open."""
    try:
        store = kernel.store
    except Exception:  # noqa: BLE001 - a store that cannot open: the unkeyed name
        return None
    digest = getattr(store, "keyed_digest", None)
    if not callable(digest):
        return None
    return lambda value: "k1-" + str(digest(PURPOSE, value))


class PinStore:
    """``{workspace name: {tool: {"hash": pinned, "pending": changed-to}}}`` in one JSON file."""

    def __init__(
        self, path: Path, workspace: Path, keyed: Callable[[str], str] | None = None
    ) -> None:
        self.path = path
        self.legacy = workspace_key(workspace)
        self.key = keyed(str(workspace)) if keyed is not None else self.legacy

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        if not isinstance(data, dict):
            return {}
        if self.key != self.legacy and isinstance(data.get(self.legacy), dict):
            # Pins made under the unkeyed name move to the keyed one; a keyed pin wins.
            moved = data.pop(self.legacy)
            entries = data.setdefault(self.key, {})
            for tool, entry in moved.items():
                entries.setdefault(tool, entry)
            self._write(data)
        return data

    def _write(self, data: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".mcp-pins.")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(data, handle, indent=1, sort_keys=True)
            os.chmod(tmp, 0o600)
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    def entries(self) -> dict[str, dict[str, str]]:
        found = self._read().get(self.key)
        return found if isinstance(found, dict) else {}

    def check(self, tool: str, digest: str) -> str:
        """``new`` (now pinned), ``same``, or ``changed`` (held; the new hash is remembered)."""
        data = self._read()
        entries = data.setdefault(self.key, {})
        entry = entries.get(tool)
        if not isinstance(entry, dict) or "hash" not in entry:
            entries[tool] = {"hash": digest}
            self._write(data)
            return "new"
        if entry["hash"] == digest:
            if entry.pop("pending", None) is not None:
                self._write(data)  # changed back: nothing left to approve
            return "same"
        if entry.get("pending") != digest:
            entry["pending"] = digest
            self._write(data)
        return "changed"

    def approve(self, tool: str, digest: str | None = None) -> bool:
        """Pin ``digest`` (or the pending change); False when there is nothing to approve."""
        data = self._read()
        entry = data.setdefault(self.key, {}).get(tool)
        digest = digest or (entry.get("pending") if isinstance(entry, dict) else None)
        if not digest:
            return False
        data[self.key][tool] = {"hash": digest}
        self._write(data)
        return True

    def forget(self, prefixes: tuple[str, ...]) -> int:
        """Drop every pin whose tool name starts with one of ``prefixes``, in every
        workspace (a server that is gone for good); how many."""
        data = self._read()
        gone = 0
        for entries in data.values():
            if not isinstance(entries, dict):
                continue
            for tool in [t for t in entries if t.startswith(prefixes)]:
                del entries[tool]
                gone += 1
        if gone:
            self._write(data)
        return gone
