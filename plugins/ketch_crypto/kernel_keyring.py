"""The Linux kernel keyring, through the ``add_key``/``keyctl`` system calls (ctypes).

ketch caches the passphrase-derived key here so the next run in the same login session
does not ask again: a ``user`` key in the session keyring, with a timeout, readable only
by processes that *possess* it (permissions: possessor view/read/write/search/setattr,
nothing for the user, group or others). No binding is needed (the well-known ones are
unmaintained or shell out to ``keyctl``), and ``libkeyutils`` may not be installed:
these are plain system calls through libc.

Children of ketch must not possess that key (a shell command could read it), so after
using the cache ketch moves itself to a fresh session keyring that links everything the
login session keyring held except ketch's own keys (:func:`detach`): programs ketch
starts keep e.g. Kerberos tickets kept there, and never see ketch's key.

A login without a session keyring of its own (Debian and Ubuntu do not set one up by
default: every process then falls back to the per-user "user session" keyring, which any
of the user's processes can reach) gets one: ketch creates a session keyring, puts the
key there and hands it to the process that started it (``KEYCTL_SESSION_TO_PARENT``,
as ``keyctl new_session`` does), so the shell and what it starts next share it. The
per-user keyring is never used: every program of the user could read it.

Where the calls are missing or refused (not Linux, containers whose seccomp profile
blocks them, an unknown architecture), :func:`available` is False and ketch asks for
the passphrase each time.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import struct
import sys

# (add_key, request_key, keyctl) per architecture.
_SYSCALLS = {
    "x86_64": (248, 249, 250),
    "amd64": (248, 249, 250),
    "aarch64": (217, 218, 219),
    "arm64": (217, 218, 219),
    "riscv64": (217, 218, 219),
    "loongarch64": (217, 218, 219),
    "i386": (286, 287, 288),
    "i686": (286, 287, 288),
    "armv7l": (309, 310, 311),
    "armv6l": (309, 310, 311),
    "ppc64le": (269, 270, 271),
    "ppc64": (269, 270, 271),
    "s390x": (278, 279, 280),
}

KEY_SPEC_SESSION_KEYRING = -3
KEY_SPEC_USER_SESSION_KEYRING = -5
KEYCTL_GET_KEYRING_ID = 0
KEYCTL_JOIN_SESSION_KEYRING = 1
KEYCTL_REVOKE = 3
KEYCTL_SETPERM = 5
KEYCTL_DESCRIBE = 6
KEYCTL_LINK = 8
KEYCTL_SEARCH = 10
KEYCTL_READ = 11
KEYCTL_SET_TIMEOUT = 15
KEYCTL_SESSION_TO_PARENT = 18

# Possessor: view, read, write, search, setattr. User, group, other: nothing.
POSSESSOR_ONLY = 0x01000000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x20000000

PREFIX = "ketch:"


class KeyringUnavailable(OSError):
    pass


_libc: ctypes.CDLL | None = None
_numbers: tuple[int, int, int] | None = None
_probed: bool | None = None


def _calls() -> tuple[ctypes.CDLL, tuple[int, int, int]]:
    global _libc, _numbers
    if _libc is None or _numbers is None:
        numbers = _SYSCALLS.get(platform.machine().lower())
        if not sys.platform.startswith("linux") or numbers is None:
            raise KeyringUnavailable(errno.ENOSYS, "no kernel keyring on this system")
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        _libc, _numbers = libc, numbers
    return _libc, _numbers


def _check(result: int) -> int:
    if result < 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
    return int(result)


def _keyctl(op: int, *args: object) -> int:
    libc, (_, _, keyctl) = _calls()
    converted = [
        a if isinstance(a, (bytes, ctypes.Array)) or a is None else ctypes.c_long(int(a))  # type: ignore[call-overload]
        for a in args
    ]
    return _check(libc.syscall(ctypes.c_long(keyctl), ctypes.c_long(op), *converted))


def available() -> bool:
    """Whether the session keyring can be used here (probed once per process)."""
    global _probed
    if _probed is None:
        try:
            _keyctl(
                KEYCTL_DESCRIBE, KEY_SPEC_SESSION_KEYRING, ctypes.create_string_buffer(256), 256
            )
            _probed = True
        except OSError:
            _probed = False
    return _probed


def _search(description: str) -> int | None:
    try:
        return _keyctl(KEYCTL_SEARCH, KEY_SPEC_SESSION_KEYRING, b"user", description.encode(), 0)
    except OSError as exc:
        if exc.errno in (
            errno.ENOKEY,
            errno.EKEYEXPIRED,
            errno.EKEYREVOKED,
            errno.EACCES,
            errno.ENOENT,
        ):
            return None
        raise


def read(description: str) -> bytes | None:
    """The payload of the key ``description`` in this process's keyrings, or None."""
    if not available():
        return None
    try:
        serial = _search(description)
        if serial is None:
            return None
        buffer = ctypes.create_string_buffer(256)
        size = _keyctl(KEYCTL_READ, serial, buffer, 256)
        return buffer.raw[: min(size, 256)]
    except OSError:
        return None  # expired or revoked between the search and the read: not cached


def has_own_session() -> bool:
    """Whether this process has a session keyring (not just the per-user fallback)."""
    try:
        return _keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0) != _keyctl(
            KEYCTL_GET_KEYRING_ID, KEY_SPEC_USER_SESSION_KEYRING, 0
        )
    except OSError:
        return False


def store(description: str, payload: bytes, timeout: int) -> bool:
    """Put ``payload`` in the session keyring for ``timeout`` seconds; False if it cannot."""
    if not available() or timeout <= 0:
        return False
    libc, (add_key, _, _) = _calls()
    hand_up = not has_own_session()
    try:
        if hand_up:
            _keyctl(KEYCTL_JOIN_SESSION_KEYRING, None)
        serial = _check(
            libc.syscall(
                ctypes.c_long(add_key),
                b"user",
                description.encode(),
                payload,
                ctypes.c_size_t(len(payload)),
                ctypes.c_long(KEY_SPEC_SESSION_KEYRING),
            )
        )
        _keyctl(KEYCTL_SETPERM, serial, POSSESSOR_ONLY)
        _keyctl(KEYCTL_SET_TIMEOUT, serial, int(timeout))
        if hand_up:
            _keyctl(KEYCTL_SESSION_TO_PARENT)
    except OSError:
        return False
    return True


def revoke(description: str) -> None:
    """Revoke every copy of ``description`` this process can find (a retired key)."""
    if not available():
        return
    for _ in range(8):  # the same description may sit in more than one keyring
        serial = _search(description)
        if serial is None:
            return
        try:
            _keyctl(KEYCTL_REVOKE, serial)
        except OSError:
            return


def _members(keyring: int) -> list[int]:
    buffer = ctypes.create_string_buffer(4 * 512)
    size = _keyctl(KEYCTL_READ, keyring, buffer, len(buffer))
    count = min(size, len(buffer)) // 4
    return list(struct.unpack(f"{count}i", buffer.raw[: count * 4]))


def _description(serial: int) -> str:
    buffer = ctypes.create_string_buffer(4096)
    size = _keyctl(KEYCTL_DESCRIBE, serial, buffer, len(buffer))
    # "type;uid;gid;perm;description"
    return buffer.raw[: max(size - 1, 0)].decode("utf-8", "replace").split(";", 4)[-1]


def detach() -> bool:
    """Move this process to a new session keyring without ketch's keys (see the module doc).

    Everything else the old session keyring held is linked into the new one, so child
    processes keep it. Returns False when nothing could be done (no kernel keyring).
    """
    if not available():
        return False
    try:
        keep = [
            s
            for s in _members(KEY_SPEC_SESSION_KEYRING)
            if not _safe_description(s).startswith(PREFIX)
        ]
    except OSError:
        keep = []
    try:
        _keyctl(KEYCTL_JOIN_SESSION_KEYRING, None)
    except OSError:
        return False
    for serial in keep:
        try:
            _keyctl(KEYCTL_LINK, serial, KEY_SPEC_SESSION_KEYRING)
        except OSError:
            continue  # not linkable by us: the child would not have had it either way
    return True


def _safe_description(serial: int) -> str:
    try:
        return _description(serial)
    except OSError:
        return ""


def join_new_session(name: str | None = None) -> bool:
    """Give this process (and its future children) a fresh, empty session keyring."""
    if not available():
        return False
    try:
        _keyctl(KEYCTL_JOIN_SESSION_KEYRING, name.encode() if name else None)
    except OSError:
        return False
    return True
