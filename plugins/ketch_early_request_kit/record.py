"""The record of a first request, and the key that says it still holds.

A run of ``ketch -p PROMPT`` whose first request was *verbatim* (see the
``early_request`` plugin) writes what it sent to ``KETCH_CACHE_DIR/early-request.json``:
the URL, the headers with the API key's place marked (never the key), and the body
split around the prompt (never the prompt). Beside it, everything the bytes were made
from that a start can check without loading ketch: a digest of the command line
without the prompt, the working directory, a digest of the environment (secret-looking variables
by presence only), the local date, stdin's kind, the installation's fingerprint, the
signature of every file and directory read or looked at before the request, and a
digest of each ``git status`` ketch ran. The next start with the same key sends the
same bytes, with its own prompt in its place, before the libraries load
(:mod:`ketch_early_request_kit.launch`).

The file holds what was already on disk in plain text (ketch's own instructions, the
tool schemas, the workspace's instruction files) and never what a person typed or a
tool returned; it is the user's own (mode 0600) and lives in the cache directory,
never in a workspace.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import sys
import time
from collections.abc import Iterable, Mapping
from typing import Any

from ketch_process_kit.variables import secret_variable

FORMAT = 1
FILE = "early-request.json"
KEY_MARK = "\x00key\x00"  # the API key's place in a header value

# Secret-looking variables (``ketch_process_kit.variables``, the classifier redaction and
# children's environments use) are never hashed into the key, only their presence: the
# API key is sent as it is now, and a secret's digest is no business of a cache file.
# Set by the shell per prompt or per start, never read by ketch.
_VOLATILE = frozenset({"_", "OLDPWD", "PWD", "SHLVL", "COLUMNS", "LINES"})
PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy", "no_proxy")


def environment_digest(environ: Mapping[str, str]) -> str:
    parts = []
    for name in sorted(environ):
        if name in _VOLATILE:
            continue
        value = "" if secret_variable(name, environ[name]) else environ[name]
        parts.append(f"{name}\0{value}")
    return hashlib.sha256("\n".join(parts).encode("utf-8", "surrogateescape")).hexdigest()


def signature(path: str, looked: bool = False) -> list[int] | None:
    """What changes when a file or a directory's entries change (None: it is missing).
    A path whose status only was asked (``looked``) is known by what ketch acts on
    in a status (whether it is there, a file or a directory, how big): its kind, and a
    file's size (a changed file ketch never read changes nothing it sends; if it
    does, the bytes differ and the request sent early is dropped)."""
    stat_of = getattr(os.stat, "__wrapped__", os.stat)  # not the tracker's: not tracked
    try:
        st = stat_of(path)
    except OSError:
        return None
    kind = stat.S_IFMT(st.st_mode)
    if looked and kind == stat.S_IFDIR:
        return [kind]
    if looked:
        return [kind, st.st_size]
    return [st.st_mtime_ns, st.st_size, st.st_ino, kind]


def signatures(read: Iterable[str], looked: Iterable[str]) -> list[list[Any]]:
    out = [[path, signature(path)] for path in sorted(set(read))]
    return out + [[path, signature(path, True), 1] for path in sorted(set(looked))]


def stdin_kind() -> str:
    try:
        return {stat.S_IFCHR: "chr", stat.S_IFIFO: "fifo", stat.S_IFREG: "file"}.get(
            stat.S_IFMT(os.fstat(0).st_mode), "other"
        )
    except OSError:
        return "none"


def today() -> str:
    return time.strftime("%Y-%m-%d")


def cache_file(environ: Mapping[str, str]) -> str:
    from ketch.api import cache_dir

    return os.path.join(cache_dir(environ), FILE)


def command_line(argv: list[str], slot: int) -> dict[str, Any]:
    """The command line but for the prompt at ``slot``, as a digest (what else a person
    typed there is never kept either)."""
    rest = [None if n == slot else a for n, a in enumerate(argv)]
    seen = json.dumps(rest).encode("utf-8", "surrogateescape")
    return {"slot": slot, "length": len(argv), "digest": hashlib.sha256(seen).hexdigest()}


def template_digest(record: Mapping[str, Any]) -> str:
    shape = [record.get("url"), record.get("headers"), record.get("body")]
    return hashlib.sha256(json.dumps(shape).encode("utf-8", "surrogateescape")).hexdigest()


def read(path: str) -> dict[str, Any] | None:
    """The record, when it is one ketch wrote: the user's own file, readable by nobody
    else (mode 0600, as :func:`write` makes it; a file a tool wrote has its default
    mode), outside the working directory (never a workspace's)."""
    here = os.path.join(os.getcwd(), "")
    if os.path.abspath(path).startswith(here):
        return None
    try:
        with open(path, "rb") as handle:
            st = os.fstat(handle.fileno())
            if st.st_mode & 0o077 or (hasattr(os, "getuid") and st.st_uid != os.getuid()):
                return None
            data = json.loads(handle.read())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("format") == FORMAT else None


def write(path: str, data: dict[str, Any]) -> None:
    """Atomically and the user's own, or not at all (a cache: never an error)."""
    tmp = f"{path}.{os.getpid()}.tmp"
    with contextlib.suppress(OSError):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump({"format": FORMAT, **data}, handle, separators=(",", ":"))
        os.replace(tmp, path)
    with contextlib.suppress(OSError):
        os.unlink(tmp)


def forget(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


def probe_digest(args: list[str], cwd: str) -> str:
    """What a ``git status`` says now, the way ketch runs git (:mod:`ketch_git_kit`:
    nothing a repository names runs), as a digest."""
    from pathlib import Path

    from ketch_git_kit import run_git

    done = run_git(list(args), Path(cwd), timeout=5.0)
    seen = repr((done.problem, done.code, done.stdout)).encode("utf-8", "surrogateescape")
    return hashlib.sha256(seen).hexdigest()


def code_paths() -> tuple[str, ...]:
    """Where code lives (the installation's fingerprint covers it): never keyed by file."""
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix}
    roots.update(p for p in sys.path if p and os.path.isabs(p) and p != os.getcwd())
    for module in list(sys.modules.values()):
        file = getattr(module, "__file__", None)
        name = getattr(module, "__name__", "")
        if isinstance(file, str) and name and "." not in name:  # a top-level module's home
            home = os.path.dirname(file)
            roots.add(os.path.dirname(home) if file.endswith("__init__.py") else home)
    roots.discard(os.getcwd())
    return tuple(os.path.join(r, "") for r in roots if r)
