"""The state on disk: which marketplaces were added (``marketplaces.json``) and, per
installed plugin, ``install.json``. JSON, written atomically (a temporary file, then a
rename) under a lock file, so two ketch processes lose nothing and a crash never
leaves half a file. A file that cannot be read is a clear error, never a traceback."""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ketch.api import KetchError
from ketch_claude_plugins import paths


def now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def read_json(path: Path, default: Any) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return default
    except (OSError, UnicodeDecodeError) as exc:
        raise KetchError(f"{path}: cannot read it ({exc}); fix or remove it") from None
    try:
        return json.loads(text)
    except ValueError as exc:
        raise KetchError(f"{path}: not valid JSON ({exc}); fix or remove it") from None


def write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(data, out, indent=1, sort_keys=True, ensure_ascii=False)
            out.write("\n")
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temp, 0o600)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def locked() -> Iterator[None]:
    """One ketch at a time changes what is installed."""
    home = paths.home()
    home.mkdir(parents=True, exist_ok=True)
    with open(home / ".lock", "a") as lock:
        with contextlib.suppress(ImportError, OSError):
            import fcntl

            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        yield


# --- marketplaces ---------------------------------------------------------------------


@dataclass
class MarketplaceRecord:
    """One added marketplace: ``kind`` is ``directory`` (read in place at ``location``)
    or ``git`` (cloned from ``location`` at ``ref`` into the data dir)."""

    name: str
    kind: str
    location: str
    ref: str = ""
    commit: str = ""
    added: str = ""
    updated: str = ""

    @property
    def root(self) -> Path:
        """The folder holding ``.claude-plugin/marketplace.json``."""
        return (
            Path(self.location) if self.kind == "directory" else paths.marketplace_clone(self.name)
        )

    @property
    def source(self) -> str:
        """Where it comes from, as the person gave it."""
        return self.location + (f"#{self.ref}" if self.ref else "")


def marketplaces() -> dict[str, MarketplaceRecord]:
    data = read_json(paths.marketplaces_file(), {})
    if not isinstance(data, dict):
        raise KetchError(f"{paths.marketplaces_file()}: not a marketplace list; fix or remove it")
    found = {}
    for name, entry in data.items():
        if isinstance(entry, dict) and isinstance(entry.get("kind"), str):
            fields = {
                k: str(v) for k, v in entry.items() if k in MarketplaceRecord.__dataclass_fields__
            }
            found[name] = MarketplaceRecord(**{**fields, "name": name})
    return found


def save_marketplaces(found: dict[str, MarketplaceRecord]) -> None:
    write_json(
        paths.marketplaces_file(),
        {name: {k: v for k, v in asdict(r).items() if k != "name"} for name, r in found.items()},
    )


# --- installed plugins ----------------------------------------------------------------


@dataclass
class Installed:
    """One installed plugin (``name@marketplace``)."""

    name: str
    marketplace: str
    version: str = ""
    source: str = ""  # where its files came from, in words
    commit: str = ""  # the git commit its files came from ("" when none)
    digest: str = ""  # of its files as installed: an update that changes nothing says so
    enabled: bool = True  # at user scope (a workspace may enable or disable it for itself)
    installed: str = ""
    updated: str = ""
    entry: dict[str, Any] = field(default_factory=dict)  # its marketplace entry, as installed

    @property
    def id(self) -> str:
        return f"{self.name}@{self.marketplace}"

    @property
    def home(self) -> Path:
        return paths.plugin_home(self.id)

    @property
    def root(self) -> Path:
        """Its files: ``${CLAUDE_PLUGIN_ROOT}``."""
        return self.home / self.name

    @property
    def data(self) -> Path:
        """``${CLAUDE_PLUGIN_DATA}``."""
        return self.home / "data"

    @property
    def pins(self) -> Path:
        return self.home / "pins.json"

    def save(self) -> None:
        write_json(self.home / "install.json", asdict(self))


def installed() -> dict[str, Installed]:
    """Every installed plugin by id; a plugin folder whose install.json is unreadable
    is skipped (``problems`` says which)."""
    return _installed()[0]


def problems() -> list[str]:
    return _installed()[1]


def _installed() -> tuple[dict[str, Installed], list[str]]:
    found: dict[str, Installed] = {}
    said: list[str] = []
    base = paths.home() / "plugins"
    if not base.is_dir():
        return found, said
    for home in sorted(base.iterdir()):
        if home.name.startswith(".") or not home.is_dir():
            continue
        try:
            data = read_json(home / "install.json", None)
        except KetchError as exc:
            said.append(exc.message)
            continue
        if not isinstance(data, dict):
            said.append(
                f"{home}: no install.json; not a plugin ketch installed (remove the folder)"
            )
            continue
        known = {k: v for k, v in data.items() if k in Installed.__dataclass_fields__}
        try:
            record = Installed(**known)
        except TypeError:
            said.append(f"{home / 'install.json'}: not an install record; fix or remove the folder")
            continue
        if record.id != home.name:
            said.append(f"{home}: its install.json names {record.id}; skipped")
            continue
        found[record.id] = record
    return found, said


def remove_tree(path: Path) -> None:
    """Remove a folder of ours completely (a read-only file in it included)."""

    def retry(function: Any, name: str, _exc: Any) -> None:
        with contextlib.suppress(OSError):
            os.chmod(name, 0o700)
            function(name)

    if path.is_symlink() or path.is_file():
        path.unlink(missing_ok=True)
    elif path.exists():
        if sys.version_info >= (3, 12):
            shutil.rmtree(path, onexc=retry)
        else:  # pragma: no cover - 3.11
            shutil.rmtree(path, onerror=retry)
