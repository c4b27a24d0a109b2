"""Looking a model up: ``[models."NAME"]`` from config first, then the shipped data.

A model id is tried as given, then without a ``models/`` or ``vendor/`` prefix
(OpenRouter's ``openai/gpt-4o``), then without a date suffix (``-2024-08-06``,
``-20250929``) or a ``:tag`` (Ollama's ``qwen3:8b`` keeps its tag first). A config entry
is merged over the shipped one, so ``[models."gpt-4o"] input_price = 2.0`` changes one
price and keeps the rest. A model of kind ``ollama`` runs locally: it costs 0 unless
config says otherwise. Nothing is ever fetched.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any

from ketch_catalog.pricing import PricedModel, PriceTier

DATA = Path(__file__).with_name("models.json")
_DATED = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{8}|\d{4})$")


@cache
def shipped() -> dict[str, Any]:
    """The shipped catalog (read once per process)."""
    data = json.loads(DATA.read_text(encoding="utf-8"))
    return data if isinstance(data, dict) else {}


def candidates(model: str) -> list[str]:
    """The names to try for ``model``, most specific first."""
    names = [model]
    bare = model.removeprefix("models/")
    if "/" in bare:
        bare = bare.rsplit("/", 1)[1]
    names.append(bare)
    undated = _DATED.sub("", bare)
    names.append(undated)
    if ":" in undated:
        names.append(undated.split(":", 1)[0])
    seen: list[str] = []
    for name in names:
        if name and name not in seen:
            seen.append(name)
    return seen


def _tiers(raw: Any) -> tuple[PriceTier, ...]:
    tiers = []
    for tier in raw if isinstance(raw, list) else []:
        if isinstance(tier, dict) and isinstance(tier.get("above_tokens"), int):
            tiers.append(
                PriceTier(
                    above_tokens=tier["above_tokens"],
                    input_price=_price(tier.get("input")),
                    output_price=_price(tier.get("output")),
                    cached_input_price=_price(tier.get("cached_input")),
                )
            )
    return tuple(sorted(tiers, key=lambda t: t.above_tokens))


def _price(value: Any) -> float | None:
    return (
        float(value)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0
        else None
    )


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _bool(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def from_entry(name: str, raw: dict[str, Any]) -> PricedModel:
    """A shipped entry (keys as refresh.py writes them) as a PricedModel."""
    date = f", {raw['date']}" if raw.get("date") else ""
    return PricedModel(
        id=name,
        context_window=_int(raw.get("context_window")),
        owned_by=raw.get("provider") if isinstance(raw.get("provider"), str) else None,
        max_output_tokens=_int(raw.get("max_output_tokens")),
        tools=_bool(raw.get("tools")),
        images=_bool(raw.get("images")),
        input_price=_price(raw.get("input")),
        output_price=_price(raw.get("output")),
        cached_input_price=_price(raw.get("cached_input")),
        cache_write_price=_price(raw.get("cache_write")),
        tiers=_tiers(raw.get("tiers")),
        source=f"{raw.get('source') or 'catalog'}{date}",
    )


# [models."NAME"] keys -> PricedModel fields
CONFIG_KEYS = {
    "context_window": ("context_window", _int),
    "max_output_tokens": ("max_output_tokens", _int),
    "tools": ("tools", _bool),
    "images": ("images", _bool),
    "input_price": ("input_price", _price),
    "output_price": ("output_price", _price),
    "cached_input_price": ("cached_input_price", _price),
    "cache_write_price": ("cache_write_price", _price),
}


def apply_config(info: PricedModel, table: dict[str, Any]) -> PricedModel:
    changes: dict[str, Any] = {}
    for key, (field, read) in CONFIG_KEYS.items():
        if key in table and read(table[key]) is not None:
            changes[field] = read(table[key])
    if not changes:
        return info
    source = "config" if info.source is None else f"config over {info.source}"
    if {"input_price", "output_price", "cached_input_price", "cache_write_price"} & set(changes):
        changes["tiers"] = ()  # a configured price is the whole price
    return replace(info, source=source, **changes)


def lookup(
    provider_kind: str, model: str, configured: dict[str, Any], *, local: bool = False
) -> PricedModel | None:
    """What is known about ``model``: config over shipped data; the models of a
    ``local`` kind (one a provider plugin names in ``catalog_local_kinds``) cost 0."""
    models = shipped().get("models") or {}
    info: PricedModel | None = None
    table: dict[str, Any] | None = None
    for name in candidates(model):
        if table is None and isinstance(configured.get(name), dict):
            table = configured[name]
        if info is None and isinstance(models.get(name), dict):
            info = from_entry(name, models[name])
    if local:  # runs on this machine: whatever a vendor charges for it
        free: dict[str, Any] = {
            "input_price": 0.0,
            "output_price": 0.0,
            "cached_input_price": 0.0,
            "cache_write_price": 0.0,
            "tiers": (),
        }
        note = "local model (runs on this machine): no charge"
        info = (
            replace(info, **free, source=f"{note}; facts from {info.source}")
            if info
            else PricedModel(id=model, **free, source=note)
        )
    if table is not None:
        info = apply_config(info or PricedModel(id=model), table)
    return info
