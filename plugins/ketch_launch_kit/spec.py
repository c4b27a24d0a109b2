"""Parsed options as JSON, for a ketch process started anew (the background worker).

Only plain values travel (strings, numbers, booleans, None, lists and tables of them);
an option a plugin stored as anything else cannot, and says so rather than being
dropped: a run must not start with less than the person asked for.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

_PLAIN = (str, int, float, bool, type(None))


class SpecError(Exception):
    """An option that cannot be handed to another process (one line)."""


def _plain(value: Any, where: str) -> Any:
    if isinstance(value, _PLAIN):
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(v, where) for v in value]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {k: _plain(v, f"{where}.{k}") for k, v in value.items()}
    raise SpecError(
        f"the option {where} ({type(value).__name__}) cannot be passed to a new process"
    )


def to_spec(args: argparse.Namespace) -> dict[str, Any]:
    """The options as plain (JSON-able) data."""
    return {k: _plain(v, k) for k, v in sorted(vars(args).items())}


def from_spec(data: Any) -> argparse.Namespace:
    """The options back from :func:`to_spec`'s data (or its JSON text)."""
    if isinstance(data, str | bytes):
        data = json.loads(data)
    if not isinstance(data, dict):
        raise SpecError("the options are not a JSON object")
    return argparse.Namespace(**data)
