"""The proxy's listening socket, made inside one command's network namespace from outside it.

A sandboxed command reaches ketch's egress proxy at ``127.0.0.1:PORT`` of its *own*
network namespace (only a loopback in it). No process inside listens there: ketch puts a
listening socket into that namespace before the command starts, and its proxy accepts on
it directly. A socket belongs to the network namespace of the thread that created it,
for its whole life, so "putting it there" means creating it from a thread that has
entered the namespace with ``setns(2)``, then handing it over. How, step by step:

1. The command is started under ``/bin/sh -c 'exec "$@" 3>INFO 4<BLOCK'``, with bwrap's
   ``--info-fd 3 --block-fd 4`` (:func:`launcher`, :func:`bwrap_args`): INFO and BLOCK
   are FIFOs in the session's private egress directory, so the tool that starts the
   command needs to know nothing (no descriptors to pass, no callback). The shell only
   opens the FIFOs and execs bwrap; it reads no startup file (a non-interactive ``sh``).
2. bwrap creates the namespaces and writes ``{"child-pid": PID, "net-namespace": INODE,
   ...}`` to INFO; its child sets the sandbox up (loopback included), then waits for a
   byte on BLOCK before it runs the command.
3. A *joiner* (:func:`join`) opens ``/proc/PID/ns/net``, checks it is the namespace
   bwrap named (the inode, so a reused PID cannot mislead it), enters it, creates and
   binds the socket (``IP_FREEBIND``: the loopback address may not be up yet), listens,
   sends the socket to ketch over a unix socket pair (``SCM_RIGHTS``), and only then
   writes the byte to BLOCK -- the command starts with the listener already in place,
   so its first connection waits in the backlog rather than failing.

The kernel's rules decide who can be the joiner. Entering a network namespace needs
``CAP_SYS_ADMIN`` in the user namespace that owns it *and* in the caller's own. The
sandbox's user namespace is created by this user, so this user has every capability in
it -- but an unprivileged process has none in its own, so ``setns`` from one of ketch's
threads works only where ketch has ``CAP_SYS_ADMIN`` (root, say): the ``thread`` route.
Otherwise the joiner must first enter the sandbox's *user* namespace (where it then has
every capability), and only a single-threaded process may do that: the ``helper`` route,
a small process per session (this file run by ketch's Python, ``-I -S``, standard library
only, no environment) that forks one joiner per command as soon as the command's hookup
exists, so the fork is not on the command's start. Where neither works -- a setuid-root
bwrap owns the namespaces as root -- the command starts under the forwarder instead
(:mod:`ketch_sandbox.network`).

The joiner is outside the sandbox, and what it enters is only a network (and user)
namespace: it keeps the host's mount and pid namespaces, so it never sees the sandbox's
files and the command (in a pid namespace of its own) cannot name it; it exits (or its
thread returns to ketch's namespace) as soon as the socket is handed over. The helper
and its joiners are not dumpable (``PR_SET_DUMPABLE`` 0), so even a process that could
name one -- it shares the user namespace, and the uid, with the sandbox -- could not
ptrace it or open its ``/proc`` files: that needs ``CAP_SYS_PTRACE`` in the user
namespace its memory was made in, the host's.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import functools
import json
import os
import select
import socket
import stat
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

PORT = 3128  # in the command's own namespace, where nothing else listens when it starts
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
NS_GET_USERNS = 0xB701  # _IO(0xb7, 0x1): the user namespace that owns a namespace
IP_FREEBIND = 15
PR_SET_DUMPABLE = 4
INFO_FD, BLOCK_FD = 3, 4
LAUNCH = 'i=$1 b=$2; shift 2; exec "$@" 3>"$i" 4<"$b"'
INFO_LIMIT = 1 << 16

Route = Literal["thread", "helper"]


class Cancelled(Exception):
    """ketch let go of the command before it started."""


class Gone(Exception):
    """The command's sandbox ended (or never began) before the listener was in it: no
    fault of the route's (the command was killed, or bwrap refused its arguments)."""


@functools.cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def setns(fd: int, kind: int) -> None:
    if _libc().setns(fd, kind) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"setns: {os.strerror(errno)}")


# --- the joiner -----------------------------------------------------------------------------


def _child_of(info_fd: int, link: socket.socket) -> dict[str, int]:
    """What bwrap wrote to INFO (when it has closed it); Cancelled when ketch closes its
    end of ``link`` first."""
    poller = select.poll()
    poller.register(info_fd, select.POLLIN)
    poller.register(link.fileno(), select.POLLIN)
    data = b""
    while True:
        for fd, _ in poller.poll():
            if fd == link.fileno():
                raise Cancelled
            try:
                chunk = os.read(info_fd, 4096)
            except BlockingIOError:
                continue
            if not chunk:  # bwrap closed it: all there
                if not data:
                    raise Gone  # bwrap ended before it made the sandbox
                found = json.loads(data.decode())
                if not isinstance(found.get("child-pid"), int):
                    raise OSError("bwrap did not say which process is the sandbox's")
                return found  # type: ignore[no-any-return]
            data += chunk
            if len(data) > INFO_LIMIT:
                raise OSError("bwrap's information is too long")


def _listen(port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_IP, IP_FREEBIND, 1)
        sock.bind(("127.0.0.1", port))
        sock.listen(128)
    except BaseException:
        sock.close()
        raise
    return sock


def listen_inside(child: dict[str, int], port: int, *, enter_user: bool) -> socket.socket:
    """A socket listening on ``127.0.0.1:port`` of the sandbox's network namespace
    (``child``: what bwrap said). With ``enter_user``, this process enters the sandbox's
    user namespace first and never comes back (a helper's child); without, this thread
    enters the network namespace and returns to its own."""
    try:
        net = os.open(f"/proc/{child['child-pid']}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    except (FileNotFoundError, ProcessLookupError):
        raise Gone from None
    try:
        expected = child.get("net-namespace")
        if expected and os.fstat(net).st_ino != expected:
            raise Gone  # its pid is another process's now
        if enter_user:
            user = fcntl.ioctl(net, NS_GET_USERNS)
            try:
                setns(user, CLONE_NEWUSER)
            finally:
                os.close(user)
            setns(net, CLONE_NEWNET)
            return _listen(port)
        own = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
        try:
            setns(net, CLONE_NEWNET)
            try:
                return _listen(port)
            finally:
                setns(own, CLONE_NEWNET)  # cannot fail where the way in did not
        finally:
            os.close(own)
    finally:
        os.close(net)


def join(info_fd: int, block_fd: int, link: socket.socket, port: int, *, enter_user: bool) -> None:
    """The joiner's whole job (see the module docstring); it owns the three descriptors.
    On failure it says why over ``link`` and leaves the command blocked: ketch starts it
    (without the network) once it has read the reason."""
    try:
        try:
            sock = listen_inside(_child_of(info_fd, link), port, enter_user=enter_user)
        except Cancelled:
            return
        except Gone:
            with contextlib.suppress(OSError):
                link.send(b"gone")
            return
        except (OSError, ValueError) as exc:
            why = (exc.strerror if isinstance(exc, OSError) else None) or str(exc)
            with contextlib.suppress(OSError):
                link.send(f"error: {why}".encode()[:1000])
            return
        try:
            socket.send_fds(link, [b"ok"], [sock.fileno()])
            # Only now may the command start: the listener is in place (its first
            # connection waits in the backlog), and the joiner's work is done.
            os.write(block_fd, b"\n")
        except OSError:
            pass  # ketch let go: the command, if it still starts, has no listener
        finally:
            sock.close()
    finally:
        os.close(info_fd)
        os.close(block_fd)
        link.close()


# --- the helper (a process per session, for the helper route) ------------------------------


def serve(control_fd: int) -> None:
    """The helper's loop: one message per command (the port; INFO, BLOCK and the link as
    descriptors), one forked joiner each. Ends when ketch closes the control socket."""
    import signal

    if _libc().prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:  # inherited by every joiner
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE)")
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # joiners are reaped by the kernel
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    control = socket.socket(fileno=control_fd)
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(control, 64, 3)
        except OSError:
            return
        if not message:
            return
        if len(fds) == 3 and message.isdigit() and os.fork() == 0:
            code = 0
            try:
                control.close()
                link = socket.socket(fileno=fds[2])
                join(fds[0], fds[1], link, int(message), enter_user=True)
            except BaseException:  # noqa: BLE001 - a joiner never returns into the loop
                code = 1
            os._exit(code)
        for fd in fds:
            os.close(fd)


class Helper:
    """ketch's side of the helper process."""

    def __init__(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self.process = subprocess.Popen(  # noqa: S603 - ketch's own Python and file
                [sys.executable, "-I", "-S", __file__, str(theirs.fileno())],
                pass_fds=[theirs.fileno()],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env={},
                start_new_session=True,  # the terminal's ^C is not for it
            )
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        self.control = ours
        self.lock = threading.Lock()

    def submit(self, info_fd: int, block_fd: int, link: socket.socket, port: int) -> None:
        with self.lock:
            socket.send_fds(self.control, [str(port).encode()], [info_fd, block_fd, link.fileno()])

    def close(self) -> None:
        self.control.close()  # it sees the end and exits; joiners still waiting see theirs
        try:
            self.process.wait(2)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


# --- ketch's side of one command ------------------------------------------------------------


@dataclass(eq=False)
class Hookup:
    """One command's way to the listener: the FIFOs, ketch's ends of them, and the link
    on which the joiner sends the socket (or why not)."""

    info: Path
    block: Path
    port: int = PORT
    info_fd: int = -1  # ketch's read end: the shell's open for writing never waits
    block_fd: int = -1  # ketch's write end: to start the command when the joiner cannot
    link: socket.socket | None = None
    joiner_link: socket.socket | None = field(default=None, repr=False)

    @classmethod
    def create(cls, directory: Path, name: str, port: int = PORT) -> Hookup:
        hookup = cls(directory / f"{name}.info", directory / f"{name}.block", port)
        try:
            os.mkfifo(hookup.info, 0o600)
            os.mkfifo(hookup.block, 0o600)
            hookup.info_fd = os.open(hookup.info, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
            hookup.block_fd = os.open(hookup.block, os.O_RDWR | os.O_CLOEXEC)
            hookup.link, hookup.joiner_link = socket.socketpair(
                socket.AF_UNIX, socket.SOCK_SEQPACKET
            )
        except BaseException:
            hookup.close()
            raise
        return hookup

    def launcher(self) -> list[str]:
        """The argv prefix that starts bwrap with INFO and BLOCK as its descriptors."""
        return ["/bin/sh", "-c", LAUNCH, "ketch-sandbox", str(self.info), str(self.block)]

    def start(self, route: Route, helper: Helper | None = None) -> None:
        """Hand the joiner its ends: a thread of this process, or a child of ``helper``."""
        theirs, self.joiner_link = self.joiner_link, None
        assert theirs is not None
        if route == "helper":
            assert helper is not None
            try:
                helper.submit(self.info_fd, self.block_fd, theirs, self.port)
            finally:
                theirs.close()
            return
        info, block = os.dup(self.info_fd), os.dup(self.block_fd)
        threading.Thread(
            target=join,
            args=(info, block, theirs, self.port),
            kwargs={"enter_user": False},
            name="ketch-egress-join",
            daemon=True,
        ).start()

    def receive(self) -> socket.socket | str | None:
        """What the joiner sent: the listening socket, why not, "" (the sandbox ended
        before it was in place), or None (nothing yet)."""
        assert self.link is not None
        try:
            message, fds, _, _ = socket.recv_fds(self.link, 1024, 1)
        except BlockingIOError:
            return None
        except OSError as exc:
            return f"the joiner failed ({exc.strerror or exc})"
        if fds:
            return socket.socket(fileno=fds[0])
        if message == b"gone":
            return ""
        text = message.decode("utf-8", "replace").removeprefix("error: ")
        return text or "the joiner ended without a socket"

    def release(self) -> None:
        """Start the command (without a listener: it then has no network)."""
        with contextlib.suppress(OSError):
            os.write(self.block_fd, b"\n")

    def close(self) -> None:
        for sock in (self.link, self.joiner_link):
            if sock is not None:
                sock.close()  # a joiner still waiting sees this and ends
        self.link = self.joiner_link = None
        for fd in (self.info_fd, self.block_fd):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.info_fd = self.block_fd = -1
        for path in (self.info, self.block):
            with contextlib.suppress(OSError):
                path.unlink()


def bwrap_args(port: int = PORT) -> list[str]:
    """bwrap's side of the hookup: the descriptors, and the proxy in the environment."""
    args = ["--info-fd", str(INFO_FD), "--block-fd", str(BLOCK_FD)]
    for name, value in proxy_environment(port).items():
        args += ["--setenv", name, value]
    return args


def proxy_environment(port: int) -> dict[str, str]:
    """HTTP (CONNECT for TLS) and SOCKS5 (the proxy resolves names) at ``port`` of the
    command's loopback; its own loopback stays direct."""
    http = f"http://127.0.0.1:{port}"
    found = {name: http for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY")}
    found.update({name: f"socks5h://127.0.0.1:{port}" for name in ("all_proxy", "ALL_PROXY")})
    found.update({name: "localhost,127.0.0.1,::1" for name in ("no_proxy", "NO_PROXY")})
    return found


# --- which route works here -----------------------------------------------------------------


def _thread_may_enter() -> bool:
    """Whether a thread of this process may enter network namespaces: it tries its own
    (the kernel checks the same capability in the caller's user namespace)."""
    result: list[bool] = []

    def attempt() -> None:
        try:
            own = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            result.append(False)
            return
        try:
            setns(own, CLONE_NEWNET)
            result.append(True)
        except OSError:
            result.append(False)
        finally:
            os.close(own)

    thread = threading.Thread(target=attempt, name="ketch-egress-probe", daemon=True)
    thread.start()
    thread.join(5)
    return bool(result and result[0])


def route(bwrap: str) -> tuple[Route | None, str]:
    """The route this process can use with ``bwrap``, or None and why not."""
    if not sys.platform.startswith("linux"):
        return None, f"no network namespaces on {sys.platform}"
    if _thread_may_enter():
        return "thread", ""
    try:
        found = os.stat(bwrap)
    except OSError as exc:
        return None, f"bwrap is not there ({exc.strerror})"
    if found.st_mode & stat.S_ISUID and found.st_uid != os.geteuid():
        return None, "bwrap is setuid root, so the sandbox's namespaces belong to root"
    return "helper", ""


if __name__ == "__main__":
    serve(int(sys.argv[1]))
