"""Where installed Claude Code plugins and added marketplaces live: the user data dir
(platformdirs; ``KETCH_DATA_DIR`` overrides), never a workspace::

    claude-plugins/
      marketplaces.json          the marketplaces added: name -> where from
      marketplaces/NAME/         a git marketplace's clone (a directory one is read in place)
      plugins/NAME@MARKETPLACE/  one folder per installed plugin:
        install.json             where it came from, its version, scope, enabled
        pins.json                the digests of its items pinned at install (trust kit format)
        NAME/                    its files (${CLAUDE_PLUGIN_ROOT})
        data/                    ${CLAUDE_PLUGIN_DATA}

Uninstalling removes the plugin's folder, and with it everything of the plugin."""

from __future__ import annotations

import os
import re
from pathlib import Path

APP = "ketch"
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


def data_dir() -> Path:
    override = os.environ.get("KETCH_DATA_DIR")
    if override:
        return Path(override)
    from platformdirs import user_data_dir

    return Path(user_data_dir(APP, appauthor=False))


def home() -> Path:
    return data_dir() / "claude-plugins"


def marketplaces_file() -> Path:
    return home() / "marketplaces.json"


def marketplace_clone(name: str) -> Path:
    return home() / "marketplaces" / name


def plugin_home(plugin_id: str) -> Path:
    return home() / "plugins" / plugin_id


def valid_name(name: str) -> bool:
    """A name that can be a folder name here (no separators, no dot first)."""
    return bool(NAME.fullmatch(name)) and name not in (".", "..")


def anything_installed() -> bool:
    """Whether a plugin folder exists (one directory listing)."""
    try:
        with os.scandir(home() / "plugins") as entries:
            return any(not e.name.startswith(".") for e in entries)
    except OSError:
        return False
