"""Where the passphrase-wrapped keys live, without importing what unwraps them."""

from __future__ import annotations

from pathlib import Path

IDENTITY_FILE = "identity.key"  # a team member's private key, wrapped under a passphrase


def key_file(database: Path) -> Path:
    """The data key wrapped under a passphrase, kept beside its database."""
    return database.with_name(database.stem + ".key")


def passphrase_files(state: Path) -> tuple[Path, ...]:
    """The files whose key a passphrase unwraps, in the state directory."""
    return (key_file(state / "sessions.db"), state / IDENTITY_FILE)
