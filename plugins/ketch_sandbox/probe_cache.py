"""The bwrap probe's "it works here", kept while what decides it is unchanged.

Whether bwrap can create its namespaces depends on the bwrap binary, the kernel and its
settings for unprivileged user namespaces, and the user and user namespace ketch runs
as: the key is all of those (the binary by its real path, inode, size and mtime; the
kernel by ``uname``; the sysctls' contents; the euid; ``/proc/self/ns/user``'s inode).
Only a success is kept (a failure is tried again next time: it is the case a person
fixes), in ``bwrap-probe.json`` in ketch's cache directory. It decides no authority:
a session still runs bwrap once with its workspace's full view before it counts as
sandboxed (``works_in``), and every command runs under bwrap, which fails closed.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path
from typing import Any

FILE = "bwrap-probe.json"
_SYSCTLS = (
    "/proc/sys/kernel/unprivileged_userns_clone",
    "/proc/sys/user/max_user_namespaces",
    "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
)


def key(binary: str) -> str | None:
    """What decides the probe, as a digest; None when the binary cannot be stat'ed."""
    try:
        real = os.path.realpath(binary)
        st = os.stat(real)
    except OSError:
        return None
    parts: list[Any] = [real, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, *os.uname()]
    parts.append(os.geteuid())
    for path in _SYSCTLS:
        try:
            parts.append(Path(path).read_text().strip())
        except OSError:
            parts.append("-")
    try:
        parts.append(os.stat("/proc/self/ns/user").st_ino)
    except OSError:
        parts.append("-")
    return hashlib.sha256("\0".join(map(str, parts)).encode("utf-8", "surrogateescape")).hexdigest()


def _file() -> Path:
    from ketch.api import cache_dir

    return cache_dir() / FILE


def known_to_work(binary: str) -> bool:
    """Whether a probe of ``binary`` succeeded under the same key before."""
    digest = key(binary)
    if digest is None:
        return False
    try:
        return bool(json.loads(_file().read_text(encoding="utf-8")).get("key") == digest)
    except (OSError, ValueError, AttributeError):
        return False


def remember(binary: str) -> None:
    """Keep a success (atomically, or not at all)."""
    digest = key(binary)
    if digest is None:
        return
    file = _file()
    tmp = file.with_name(f".{FILE}.{os.getpid()}.tmp")
    with contextlib.suppress(OSError):
        file.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps({"key": digest}), encoding="utf-8")
        os.replace(tmp, file)
    with contextlib.suppress(OSError):
        tmp.unlink()
