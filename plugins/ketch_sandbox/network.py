"""A sandboxed command's network: its own namespace, and one way out through ketch's proxy.

A command given the network does not share the host's. bwrap gives it a new network
namespace (only its own loopback), and the one thing in it that leads anywhere is a
socket listening on ``127.0.0.1:PORT`` whose other end is this session's egress proxy
(:mod:`ketch_sandbox.egress`) outside the sandbox. ``HTTP_PROXY``/``HTTPS_PROXY``
(HTTP, CONNECT for TLS) and ``ALL_PROXY`` (``socks5h://``: the proxy resolves names)
name it; ``NO_PROXY`` keeps the sandbox's own loopback (a test server the command
starts) direct.

Normally ketch itself creates that socket inside the command's namespace before the
command starts, and the proxy accepts on it directly: no process in the sandbox, nothing
on the host's loopback (:mod:`ketch_sandbox.netns`, which also says when the kernel
allows it). Where it cannot -- a setuid-root bwrap -- the command starts under a small
forwarder (:data:`FORWARDER`): ketch's own Python, already visible read-only in the
sandbox, run with ``-I -S`` and only built-in modules (``_socket``, ``_thread``),
listening on the loopback before the command starts and relaying each connection to a
unix socket bind-mounted at :data:`SOCKET_INSIDE`. It costs a Python start per command.

There is no resolver: ``/etc/resolv.conf`` reads ``nameserver 127.0.0.1``, where
nothing answers (the namespace is the command's own), so a lookup fails at once and no
query leaves -- names are resolved by the proxy, and only names the rules admit.
The host's abstract unix sockets stay out of reach too: they belong to the host's
network namespace.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

SOCKET_INSIDE = "/run/ketch/egress.sock"
RESOLV_CONF = (
    "# ketch sandbox: no resolver here. Programs reach the network through ketch's\n"
    "# egress proxy (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY), which resolves names itself.\n"
    "nameserver 127.0.0.1\n"
    "options timeout:1 attempts:1\n"
)

# Run as ``python -I -S -c FORWARDER SOCKET ARGV...``.
FORWARDER = """
import os, sys, _socket, _thread
path, argv = sys.argv[1], sys.argv[2:]
srv = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
srv.bind(("127.0.0.1", 0))
srv.listen(128)
port = srv.getsockname()[1]
http = "http://127.0.0.1:%d" % port
for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY"):
    os.environ[name] = http
for name in ("all_proxy", "ALL_PROXY"):
    os.environ[name] = "socks5h://127.0.0.1:%d" % port
for name in ("no_proxy", "NO_PROXY"):
    os.environ[name] = "localhost,127.0.0.1,::1"
pid = os.fork()
if pid == 0:
    srv.close()
    import _signal
    _signal.signal(_signal.SIGPIPE, _signal.SIG_DFL)
    _signal.signal(_signal.SIGXFSZ, _signal.SIG_DFL)
    try:
        os.execvp(argv[0], argv)
    except OSError as exc:
        os.write(2, ("%s: %s\\n" % (argv[0], exc.strerror)).encode())
    os._exit(127)

def pump(a, b):
    try:
        while True:
            data = a.recv(65536)
            if not data:
                break
            b.sendall(data)
    except OSError:
        pass
    try:
        b.shutdown(_socket.SHUT_WR)
    except OSError:
        pass

def serve(c):
    u = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        u.connect(path)
    except OSError:
        c.close()
        u.close()
        return
    done = _thread.allocate_lock()
    done.acquire()
    def back():
        pump(u, c)
        done.release()
    _thread.start_new_thread(back, ())
    pump(c, u)
    done.acquire()
    c.close()
    u.close()

def accept():
    while True:
        try:
            fd, _ = srv._accept()
        except OSError:
            continue
        _thread.start_new_thread(serve, (_socket.socket(_socket.AF_INET, _socket.SOCK_STREAM, 0, fd),))

_thread.start_new_thread(accept, ())
_, status = os.waitpid(pid, 0)
os._exit(128 + os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status))
"""


def forwarded(argv: list[str]) -> list[str]:
    """``argv`` started under the forwarder, inside the sandbox."""
    return [sys.executable, "-I", "-S", "-c", FORWARDER, SOCKET_INSIDE, *argv]


def resolv_target() -> str:
    """Where the sandbox's resolv.conf is mounted: the file the system's link leads to,
    when the view shows it at its own path."""
    path = "/etc/resolv.conf"
    if os.path.islink(path):
        return os.path.realpath(path)
    return path


def resolv_args(resolv: Path) -> list[str]:
    """The resolver's mount of a networked sandbox (after the view's own mounts)."""
    return ["--ro-bind", str(resolv), resolv_target()]


def bwrap_args(socket_path: Path, resolv: Path) -> list[str]:
    """The mounts of a sandbox whose command starts under the forwarder."""
    return ["--ro-bind", str(socket_path), SOCKET_INSIDE, *resolv_args(resolv)]
