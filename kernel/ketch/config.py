"""Reading config layers as plain dicts (tomllib only: no pydantic on the startup path).

A layer that cannot be read or parsed is reported with its path and line and dropped:
startup falls back to the layers below it and says so.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ketch.paths import managed_file, user_config_file, workspace_config_file


@dataclass
class Layer:
    """One configuration source: its name, where it came from, and its data."""

    name: str  # "defaults", "user", "workspace", "env", "cli", "managed" (narrows, never merged)
    source: str  # a path, or a description
    data: dict[str, Any] = field(default_factory=dict)
    error: str | None = None  # why this layer was dropped
    ignored: list[str] = field(default_factory=list)  # keys dropped (e.g. untrusted)
    # The workspace layer's values held back until trusted: (path of table names, value).
    held: list[tuple[tuple[str, ...], Any]] = field(default_factory=list)


MAX_CONFIG_BYTES = 1024 * 1024  # a config file larger than this is refused, unread


def read_toml_layer(name: str, path: Path) -> Layer:
    """Read one TOML file. A missing file is an empty layer; a broken one says where.

    A file over 1 MiB, or one nested deeper than the parser's recursion allows, is
    refused with a notice: a repository's config must not stall or crash startup."""
    import tomllib

    layer = Layer(name=name, source=str(path))
    try:
        size = path.stat().st_size
        if size > MAX_CONFIG_BYTES:
            layer.error = f"{path}: {size:,} bytes, more than the {MAX_CONFIG_BYTES:,} a config file may have; ignoring this file"
            return layer
        raw = path.read_bytes()
    except FileNotFoundError:
        return layer
    except OSError as exc:
        layer.error = f"{path}: cannot read ({exc.strerror or exc}); using defaults for this file"
        return layer
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        layer.error = f"{path}:{line}: not valid UTF-8; ignoring this file, fix or remove it"
        return layer
    try:
        layer.data = tomllib.loads(text)
    except RecursionError:
        line = _deepest_line(text)
        layer.error = (
            f"{path}:{line}: nested too deeply to read; ignoring this file, fix it to use it"
        )
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        match = re.search(r"\(at line (\d+), column (\d+)\)", message)
        where = f"{path}:{match.group(1)}" if match else str(path)
        if "(at end of document)" in message:
            where = f"{path}:{text.count(chr(10)) + (0 if text.endswith(chr(10)) else 1)}"
        reason = (
            re.sub(r"\s*\(at (line \d+, column \d+|end of document)\)", "", message)
            or "invalid TOML"
        )
        if match:
            reason += f" (column {match.group(2)})"
        layer.error = f"{where}: invalid TOML: {reason}; ignoring this file, fix it to use it"
    return layer


def _deepest_line(text: str, limit: int = 100) -> int:
    """The line where arrays and inline tables first nest ``limit`` deep (strings are not
    told apart: this only points at the spot)."""
    depth = 0
    for index, char in enumerate(text):
        if char in "[{":
            depth += 1
            if depth >= limit:
                return text.count("\n", 0, index) + 1
        elif char in "]}":
            depth = max(0, depth - 1)
    return 1


def line_of_key(path: str, loc: tuple[Any, ...]) -> int | None:
    """Best-effort line number of a (nested) key in a TOML file, for error messages."""
    try:
        lines = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    keys = [str(k) for k in loc if not isinstance(k, int)]
    if not keys:
        return None
    last = re.escape(keys[-1])
    for number, line in enumerate(lines, 1):
        if re.match(rf"\s*(\"?){last}\1\s*=", line):
            return number
    for number, line in enumerate(lines, 1):
        if re.match(rf"\s*\[+[^\]]*\b{last}\b[^\]]*\]+", line):
            return number
    return None


def deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """Tables merge key by key; every other value (lists included) is replaced."""
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def split_names(value: str | None) -> list[str]:
    return [part.strip() for part in (value or "").split(",") if part.strip()]


ENV_KEYS = {
    "KETCH_PROVIDER": ("provider",),
    "KETCH_MODEL": ("model",),
    "KETCH_MODE": ("mode",),
    "KETCH_PROFILE": ("profile",),
    "KETCH_MAX_ITERATIONS": ("loop", "max_iterations"),
}


def env_layer(environ: dict[str, str] | None = None) -> Layer:
    environ = dict(os.environ if environ is None else environ)
    data: dict[str, Any] = {}
    for var, path in ENV_KEYS.items():
        if environ.get(var):
            target = data
            for key in path[:-1]:
                target = target.setdefault(key, {})
            target[path[-1]] = environ[var]
    disabled = split_names(environ.get("KETCH_DISABLE_PLUGINS"))
    if disabled:
        data.setdefault("plugins", {})["disable"] = disabled
    only = split_names(environ.get("KETCH_PLUGINS"))
    if only:
        data.setdefault("plugins", {})["only"] = only
    return Layer("env", "environment", data)


def read_layers(
    workspace: Path,
    *,
    cli: dict[str, Any] | None = None,
    environ: dict[str, str] | None = None,
    user_file: Path | None = None,
) -> list[Layer]:
    """The raw layers in precedence order, lowest first (no validation yet)."""
    user = read_toml_layer("user", user_file or user_config_file())
    ws = read_toml_layer("workspace", workspace_config_file(workspace))
    return [
        Layer("defaults", "built-in"),
        user,
        ws,
        env_layer(environ),
        Layer("cli", "command line", cli or {}),
        managed_layer(environ),
    ]


def managed_layer(environ: dict[str, str] | None = None) -> Layer:
    """The system-wide managed policy. Not one more layer on top: it can only narrow
    (:func:`ketch.settings.load_settings`). A managed file that exists but cannot be
    read fails closed (the kernel refuses to run), so it is never silently dropped."""
    env = os.environ if environ is None else environ
    override = env.get("KETCH_MANAGED_FILE")
    return read_toml_layer("managed", Path(override) if override else managed_file())
