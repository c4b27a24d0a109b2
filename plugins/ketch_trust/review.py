"""What ``ketch trust`` and ``/trust`` show: every item, what it runs or grants, and
whether it is trusted, new, or changed since it was trusted."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ketch_trust_kit import PinStore, TrustItem
from ketch_trust_kit.listing import lines, state

__all__ = ["lines", "offered_items", "state", "summary", "workspace_items"]

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Kernel


def offered_items(store: PinStore, workspace: Path) -> list[TrustItem]:
    """Items met at run time (an editor's MCP servers), as remembered."""
    items = []
    for digest, entry in store.offered(workspace).items():
        if not isinstance(entry, dict):
            continue
        items.append(
            TrustItem(
                kind=str(entry.get("kind", "item")),
                name=str(entry.get("name", "")),
                source=str(entry.get("source", "")),
                shows=str(entry.get("shows", "")),
                digest=str(digest),
                note=str(entry.get("note", "")),
            )
        )
    return items


def workspace_items(kernel: Kernel, store: PinStore) -> list[TrustItem]:
    from ketch_trust.collect import all_items

    items = all_items(kernel)
    seen = {i.digest for i in items}
    return items + [i for i in offered_items(store, kernel.workspace) if i.digest not in seen]


def summary(workspace: Path, items: list[TrustItem], pending: list[TrustItem]) -> str:
    if not items:
        return (
            f"{workspace}: nothing here can run code or widen ketch's authority; nothing to trust"
        )
    if not pending:
        return f"{workspace}: all {len(items)} item(s) are trusted"
    return (
        f"{workspace} holds {len(items)} item(s) that can run something or widen ketch's authority; "
        f"{len(pending)} not trusted (they stay off until you trust them):"
    )
