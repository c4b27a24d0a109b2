"""Text hygiene: redaction, one-line messages, and defensive accessors for JSON bodies."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

# --- text hygiene -----------------------------------------------------------------------


def redact(text: str, secrets: tuple[str | None, ...] = ()) -> str:
    """``text`` with every secret replaced by ``***`` (whole and each line of it)."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    return text


def one_line(text: str, limit: int = 300) -> str:
    """Whitespace collapsed to single spaces, cut to ``limit`` characters."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def origin(url: str) -> str:
    """``scheme://host:port`` of a URL: no path, and never any user:password part."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}" if parts.scheme else url


def as_dict(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else ``{}`` (wire data is never trusted to have a shape)."""
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    """``value`` when it is a JSON array, else ``[]``."""
    return value if isinstance(value, list) else []


def as_int(value: Any) -> int:
    """``value`` when it is a JSON integer (not a bool), else 0: token counts."""
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def config_extra(config: Any, name: str, default: Any = None) -> Any:
    """A key of a ``[providers.NAME]`` table beyond the kernel's (``temperature = 0.2``):
    a field the kind's config model declares, else the table's raw value."""
    if name in type(config).model_fields:
        value = getattr(config, name)
        return default if value is None else value
    return (getattr(config, "model_extra", None) or {}).get(name, default)
