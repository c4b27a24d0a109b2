"""What the installed plugins are, cached by what is installed (and the key for the tool cache).

Two things every start used to compute from scratch: the entry points of the ``ketch``
group (``importlib.metadata`` reads every distribution's metadata) and the tool schemas of
the first request (every tool module imported to build them). Both only change when
what is installed changes, so both are kept in ``KETCH_CACHE_DIR`` (``plugins.json``,
``tools.json``) under a key that says exactly that:

* the **installation's fingerprint**: every ``sys.path`` entry with the names of the
  ``*.dist-info``/``*.egg-info`` in it (a distribution installed, removed or upgraded
  there adds, removes or renames one: the version is in the name) and the mtime and
  size of each one's ``entry_points.txt`` (written anew by a re-install, rewritten in
  place by an editable one);
* for the tool schemas, also the size and mtime of every module file they were built
  from that does not live in an installed location (site-packages, the standard
  library): an editable install or a source tree on ``PYTHONPATH``, whose code changes
  without any install. A changed docstring there is a new key.

A key that does not match is a miss: the slow path runs and writes the cache again. A
cache that cannot be read or written is no cache (never an error). The cache lives in
the user's cache directory, never in a workspace, and decides nothing about authority:
which plugins load is still decided by name before anything is imported, and a
cached tool is still decided and run by the same loop (its plugin's registration runs,
and its module is imported, the first time anything but its schema is needed).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ketch.paths import cache_dir

FORMAT = 2  # 2: a cached tool keeps its capabilities
PLUGINS_FILE = "plugins.json"


# --- the installation's fingerprint ------------------------------------------------------


def fingerprint(path: Iterable[str] | None = None) -> str:
    """A digest of what ``importlib.metadata`` would find on ``path`` (``sys.path``):
    the paths themselves (a workspace, with ``python -m``) never reach the cache file."""
    parts: list[str] = [sys.version]
    for entry in list(sys.path if path is None else path):
        where = entry or "."
        try:
            st = os.stat(where)
        except OSError:
            parts.append(f"{entry}\0-")
            continue
        if not os.path.isdir(where):  # a zip file
            parts.append(f"{entry}\0{st.st_mtime_ns}\0{st.st_size}")
            continue
        parts.append(entry)
        try:
            with os.scandir(where) as it:
                names = sorted(e.name for e in it if e.name.endswith((".dist-info", ".egg-info")))
        except OSError:
            continue
        for name in names:
            try:
                ep = os.stat(os.path.join(where, name, "entry_points.txt"))
                marker = f"{ep.st_mtime_ns}\0{ep.st_size}"
            except OSError:
                marker = "-"
            parts.append(f"{name}\0{marker}")
    import hashlib

    return hashlib.sha256("\n".join(parts).encode("utf-8", "surrogateescape")).hexdigest()


def read(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("format") == FORMAT else None


def write(path: Path, data: dict[str, Any]) -> None:
    """Atomically (a reader sees the old file or the new one), or not at all."""
    data = {"format": FORMAT, **data}
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(data, separators=(",", ":")), encoding="utf-8")
        os.replace(tmp, path)
    with contextlib.suppress(OSError):
        tmp.unlink()


# --- entry points --------------------------------------------------------------------------

EntryPointRow = tuple[str, str, str, str]  # name, value, distribution, version


def entry_points(group: str, environ: Mapping[str, str]) -> tuple[list[EntryPointRow], str]:
    """The ``group`` entry points of every distribution on ``sys.path`` (in
    ``importlib.metadata``'s order), from the cache when nothing was installed, removed
    or upgraded since it was written; and the fingerprint they were found under."""
    key = fingerprint()
    path = cache_dir(environ) / PLUGINS_FILE
    cached = read(path)
    if cached is not None and cached.get("key") == key and cached.get("group") == group:
        rows = cached.get("entry_points")
        if isinstance(rows, list) and all(
            isinstance(r, list) and len(r) == 4 and all(isinstance(x, str) for x in r) for r in rows
        ):
            return [(r[0], r[1], r[2], r[3]) for r in rows], key
    found = _scan(group)
    write(path, {"key": key, "group": group, "entry_points": found})
    return found, key


def _scan(group: str) -> list[EntryPointRow]:
    from importlib.metadata import entry_points as scan

    rows: list[EntryPointRow] = []
    # Each read of ``dist.metadata`` parses METADATA again (an email parser): once per
    # distribution, not once per entry point.
    named: dict[int, tuple[str, str]] = {}
    for ep in scan(group=group):
        dist = getattr(ep, "dist", None)
        if dist is not None and id(dist) not in named:
            meta = dist.metadata
            named[id(dist)] = (meta["Name"] or "", meta["Version"] or "")
        name, version = named[id(dist)] if dist is not None else ("", "")
        rows.append((ep.name, ep.value, name, version))
    return rows


def load_entry_point(value: str) -> Any:
    """What ``EntryPoint(value=...).load()`` returns: ``module`` or ``module:attr.attr``
    (extras in brackets are ignored, as importlib.metadata does)."""
    import importlib

    target = value.split("[", 1)[0].strip()
    module_name, _, attrs = target.partition(":")
    obj = importlib.import_module(module_name.strip())
    for attr in filter(None, attrs.strip().split(".")):
        obj = getattr(obj, attr)
    return obj
