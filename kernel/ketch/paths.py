"""Where ketch keeps things (platformdirs; XDG variables honoured on Linux).

Kept import-light: the plugin manager needs the config path before plugins load.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

APP = "ketch"


def config_dir() -> Path:
    """The user config dir (``$XDG_CONFIG_HOME/ketch``); ``KETCH_CONFIG_DIR`` overrides."""
    override = os.environ.get("KETCH_CONFIG_DIR")
    if override:
        return Path(override)
    from platformdirs import user_config_dir

    return Path(user_config_dir(APP, appauthor=False))


def state_dir() -> Path:
    """The user state dir (``$XDG_STATE_HOME/ketch``): sessions.db lives here."""
    override = os.environ.get("KETCH_STATE_DIR")
    if override:
        return Path(override)
    from platformdirs import user_state_dir

    return Path(user_state_dir(APP, appauthor=False))


def cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The user cache dir; ``KETCH_CACHE_DIR`` (in ``environ``, else the process's) overrides."""
    override = (environ or {}).get("KETCH_CACHE_DIR") or os.environ.get("KETCH_CACHE_DIR")
    if override:
        return Path(override)
    from platformdirs import user_cache_dir

    return Path(user_cache_dir(APP, appauthor=False))


def managed_file() -> Path:
    """The system-wide managed policy (``/etc/ketch/managed.toml``); ``KETCH_MANAGED_FILE``
    points elsewhere (tests, CI images). Users and workspaces cannot loosen it."""
    override = os.environ.get("KETCH_MANAGED_FILE")
    return Path(override) if override else Path("/etc/ketch/managed.toml")


def user_config_file() -> Path:
    return config_dir() / "config.toml"


def workspace_config_file(workspace: Path) -> Path:
    return workspace / ".ketch" / "config.toml"
