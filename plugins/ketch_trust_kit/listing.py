"""How items are shown to the person before they trust them: each with its state
(``trusted``, ``new``, or ``changed`` since it was trusted), then exactly what it runs
or grants, the files it runs, and any note. ``ketch trust`` and ``ketch plugin`` show
items the same way."""

from __future__ import annotations

from typing import Any

from ketch_trust_kit.items import TrustItem


def state(item: TrustItem, pins: dict[str, Any]) -> str:
    if item.digest in pins:
        return "trusted"
    if any(p.get("key") == item.key for p in pins.values()):
        return "changed"
    return "new"


def lines(items: list[TrustItem], pins: dict[str, Any], numbered: list[TrustItem]) -> list[str]:
    """The listing: each item with its state, then exactly what it runs or grants."""
    out = []
    for item in items:
        mark = f"[{numbered.index(item) + 1}]" if item in numbered else "   "
        out.append(f"  {mark} {state(item, pins):<8} {item.label}")
        for text in item.shows.splitlines() or [""]:
            out.append(f"               {text}")
        if item.files:
            runs = ", ".join(
                f"{path}{'' if digest.startswith('sha256:') else f' ({digest})'}"
                for path, digest in item.files
            )
            out.append(f"               files: {runs}")
        if item.note:
            out.append(f"               note: {item.note}")
    return out
