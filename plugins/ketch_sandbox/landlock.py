"""Abstract unix sockets stay out of reach when a command is given the network.

A command approved for network shares the host's network namespace, and with it the
host's *abstract* unix sockets (``@/tmp/.X11-unix/X0``, some D-Bus buses): no file
system view can hide those. Landlock's scoping (Linux 6.12+, ABI 6) can: a process
restricted with ``LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET`` cannot connect to an abstract
socket created outside its domain. So such a command starts under a few lines of
Python (the interpreter is visible in the sandbox; no site packages, a few
milliseconds) that restrict themselves and exec the command. Signals to processes
outside are scoped too, for good measure (the PID namespace already hides them).

Where the kernel has no Landlock scoping, the command runs without it; docs/sandbox.md
says what that leaves open.
"""

from __future__ import annotations

import sys

SYS_CREATE_RULESET, SYS_RESTRICT_SELF = 444, 446  # the same on every Linux architecture
CREATE_RULESET_VERSION = 1
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1, 2
SCOPED_ABI = 6

# Run as ``python -I -S -c LAUNCHER ARGV...``: restrict, then become ARGV.
LAUNCHER = """
import ctypes, os, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
attr = struct.pack("QQQ", 0, 0, 3)
fd = libc.syscall(444, attr, len(attr), 0)
if fd < 0 or libc.prctl(38, 1, 0, 0, 0) != 0 or libc.syscall(446, fd, 0) != 0:
    sys.stderr.write("ketch sandbox: could not scope abstract unix sockets (errno %d); not run\\n" % ctypes.get_errno())
    sys.exit(126)
os.close(fd)
try:
    os.execvp(sys.argv[1], sys.argv[1:])
except OSError as exc:
    sys.stderr.write("%s: %s\\n" % (sys.argv[1], exc.strerror))
    sys.exit(127)
"""

_STATE: dict[str, int] = {}


def abi() -> int:
    """The kernel's Landlock ABI version (0: none)."""
    if "abi" not in _STATE:
        _STATE["abi"] = _probe()
    return _STATE["abi"]


def _probe() -> int:
    if not sys.platform.startswith("linux"):
        return 0
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        version = int(libc.syscall(SYS_CREATE_RULESET, None, 0, CREATE_RULESET_VERSION))
    except (OSError, AttributeError):
        return 0
    return max(version, 0)


def scoped(argv: list[str]) -> list[str]:
    """``argv`` under the launcher, where the kernel can scope abstract sockets."""
    if abi() < SCOPED_ABI:
        return list(argv)
    return [sys.executable, "-I", "-S", "-c", LAUNCHER, *argv]
