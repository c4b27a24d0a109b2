"""The storage question, asked once by the interactive shell on a machine without an OS
keyring (after the model is set up), and remembered in the user's config.toml.

Two ways to keep the key, each with what it protects against, plainly:

* a passphrase, asked once per login session (the derived key waits in the kernel's
  session keyring): recommended where that keyring works;
* a key file only you can read (:mod:`ketch_crypto.key_file`): recommended where it
  does not (the passphrase would then be asked at every start).

Headless commands never ask: under ``auto`` with nothing chosen they run unsaved and
say in one line how to choose (``ketch_crypto.manager.NO_WAY``).
"""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path
from typing import Any

from ketch.api import KetchError

PASSPHRASE_PROTECTS = (
    "without it your saved sessions cannot be read: a stolen disk, a backup or another user "
    "gets nothing; while you are logged in, programs you run could reach the unlocked key"
)


def question(kernel: Any) -> dict[str, Any] | None:
    from ketch.api import state_dir
    from ketch_crypto import kernel_keyring, keys, passphrases
    from ketch_crypto.key_file import PROTECTS, default_path
    from ketch_crypto.manager import key_file
    from ketch_crypto.settings import key_settings

    settings = kernel.settings
    if settings.section("storage").get("encryption", "on") == "off":
        return None
    if getattr(kernel.args, "no_save", False) or key_settings(settings).provider != "auto":
        return None
    database = state_dir() / "sessions.db"
    if database.exists() or key_file(database).exists() or default_path().exists():
        return None  # a store, or a key, exists: nothing to choose
    if passphrases.take() is not None or keys.usable() is None:
        return None  # a passphrase was given, or the OS keyring will keep the key
    cached = kernel_keyring.available() and key_settings(settings).cache_seconds > 0
    passphrase: dict[str, Any] = {
        "id": "passphrase",
        "label": "A passphrase, asked once per login session"
        if cached
        else "A passphrase, asked every time ketch starts (nothing here can remember it)",
        "protects": PASSPHRASE_PROTECTS,
        "recommended": cached,
    }
    keyfile: dict[str, Any] = {
        "id": "file",
        "label": f"A key file only you can read ({_short(default_path())})",
        "protects": PROTECTS,
        "recommended": not cached,
    }
    choices = [passphrase, keyfile] if cached else [keyfile, passphrase]
    choices[0]["label"] += " (recommended)"
    return {
        "title": (
            "Where should ketch keep the key to your saved sessions? They are encrypted, and "
            "there is no OS keyring (Secret Service) here to keep it."
        ),
        "choices": choices,
        "passphrase_min_length": passphrases.MIN_LENGTH,
    }


def _short(path: Path) -> str:
    home = str(Path.home())
    text = str(path)
    return "~" + text[len(home) :] if text.startswith(home + os.sep) else text


def set_up(kernel: Any, choice: str, passphrase: str | None) -> str:
    try:
        return _set_up(kernel, choice, passphrase)
    except OSError as exc:
        raise KetchError(f"could not keep the session key: {exc.strerror or exc}") from None


def _set_up(kernel: Any, choice: str, passphrase: str | None) -> str:
    from ketch.api import state_dir, user_config_file
    from ketch_crypto import passphrases
    from ketch_crypto.key_file import KeyFileProvider
    from ketch_crypto.manager import KeyManager, key_file
    from ketch_crypto.settings import key_settings

    database = state_dir() / "sessions.db"
    if choice == "file":
        provider = KeyFileProvider()
        provider.load(create=True)
        where = f"the sessions' key is in {provider.path} (only you can read it)"
    elif choice == "passphrase":
        problem = passphrases.too_short(passphrase or "")
        if problem:
            raise KetchError(problem)
        manager = KeyManager(key_settings(kernel.settings), database)
        manager.passphrase.write_new(os.urandom(32), str(passphrase))
        where = f"the sessions' key is wrapped under your passphrase in {key_file(database)}"
    else:
        raise KetchError(f"unknown storage choice {choice!r}")
    path = remember(user_config_file(), choice)
    kernel.reload_settings()
    return f'{where}; [storage] key = "{choice}" is in {path}'


def remember(path: Path, choice: str) -> Path:
    """Set ``[storage] key`` in the user's config.toml, keeping everything else as it is."""
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    line = f'key = "{choice}"'
    table = re.search(r"(?m)^\[storage\][ \t]*$", old)
    if table is None:
        text = old.rstrip("\n") + ("\n\n" if old.strip() else "") + f"[storage]\n{line}\n"
    else:
        start = table.end()
        following = re.search(r"(?m)^\[", old[start:])
        end = start + following.start() if following else len(old)
        body = old[start:end]
        if re.search(r"(?m)^key[ \t]*=", body):
            body = re.sub(r"(?m)^key[ \t]*=.*$", line, body, count=1)
        else:
            body = "\n" + line + body
        text = old[:start] + body + old[end:]
    parsed = tomllib.loads(text)
    if (parsed.get("storage") or {}).get("key") != choice:
        raise KetchError(f"could not record the choice in {path} safely; nothing was changed")
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.ketch-storage.tmp")
    temp.write_text(text, encoding="utf-8")
    os.replace(temp, path)
    return path
