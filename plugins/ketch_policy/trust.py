"""Workspace trust: the user's own list of workspaces whose ``.ketch/config.toml``
ketch applies in full (rules, profile, hooks, MCP servers, base URLs).

It lives in the user config dir (``trusted.toml``), beside ``config.toml``: trust is
the user's declaration, like their config, not state ketch accumulates. The hard
guards treat that directory as ketch's own config, so no tool call can add to it.
Paths are stored resolved and compared exactly: trusting ``/w/proj`` trusts neither
``/w/proj-evil`` nor ``/w/proj/sub``.
"""

from __future__ import annotations

import json
import os
import tempfile
import tomllib
from pathlib import Path

from ketch.paths import config_dir

FILE_NAME = "trusted.toml"
HEADER = (
    "# Workspaces whose .ketch/config.toml ketch applies in full (allow rules, profile,\n"
    "# hooks, MCP servers, provider base URLs). Managed by `ketch trust` and /trust;\n"
    "# editing by hand is fine. One resolved absolute path per entry.\n"
)


class TrustFileError(Exception):
    pass


def trust_file() -> Path:
    return config_dir() / FILE_NAME


def _key(workspace: Path | str) -> str:
    return os.path.realpath(os.path.abspath(os.fspath(workspace)))


def trusted_workspaces() -> list[str]:
    """The trusted paths. Raises TrustFileError (one line) when the file is broken."""
    path = trust_file()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise TrustFileError(
            f"{path}: cannot read it ({exc}); no workspace is trusted until it is fixed"
        ) from None
    entries = data.get("workspaces", [])
    if not isinstance(entries, list) or not all(isinstance(e, str) for e in entries):
        raise TrustFileError(
            f"{path}: 'workspaces' must be a list of paths; no workspace is trusted until it is fixed"
        )
    return list(entries)


def is_trusted(workspace: Path | str) -> bool:
    try:
        return _key(workspace) in trusted_workspaces()
    except TrustFileError:
        return False


def _write(entries: list[str]) -> None:
    path = trust_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    body = (
        HEADER
        + "workspaces = [\n"
        + "".join(f"    {json.dumps(e, ensure_ascii=False)},\n" for e in entries)
        + "]\n"
    )
    handle, temp = tempfile.mkstemp(prefix=".trusted-", suffix=".toml", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(body)
        os.chmod(temp, 0o600)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def trust(workspace: Path | str) -> bool:
    """Record trust; False when it was already trusted."""
    key = _key(workspace)
    entries = trusted_workspaces()
    if key in entries:
        return False
    _write([*entries, key])
    return True


def untrust(workspace: Path | str) -> bool:
    """Withdraw trust; False when it was not trusted."""
    key = _key(workspace)
    entries = trusted_workspaces()
    if key not in entries:
        return False
    _write([e for e in entries if e != key])
    return True
