"""Where the proxy's listener lives, by effects: real bwrap, real namespaces.

ketch makes each networked command's listening socket inside that command's own network
namespace (ketch_sandbox/netns.py), by whichever route this machine allows: a thread of
ketch (``setns``, where ketch has ``CAP_SYS_ADMIN``: root) or the per-session helper
process (which enters the sandbox's user namespace: every unprivileged user). Both routes
are exercised here whatever user runs the tests; the helper route needs no privilege.
"""

from __future__ import annotations

import fcntl
import os
import shlex
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import ketch_sandbox
from ketch.testing import Harness, call, text
from ketch_net_kit.rules import NetworkRules
from ketch_sandbox.bwrap import command_line, probe
from ketch_sandbox.egress import Egress
from ketch_sandbox.masks import MaskSet
from ketch_sandbox.netns import PORT, Helper

PROBE = probe()
pytestmark = pytest.mark.skipif(
    not PROBE.available, reason=f"no working sandbox here: {PROBE.reason}"
)
SIOCGSKNS = 0x894C  # a socket's network namespace, as a descriptor
SIOCGIFADDR = 0x8915


def namespace_of(sock_fd: int) -> int:
    """The inode of the network namespace ``sock_fd`` belongs to."""
    ns = fcntl.ioctl(sock_fd, SIOCGSKNS)
    try:
        return os.fstat(ns).st_ino
    finally:
        os.close(ns)


def listeners(proc_net_tcp: str) -> dict[int, str]:
    """Listening sockets in a ``/proc/net/tcp`` text: inode -> local address."""
    found = {}
    for line in proc_net_tcp.splitlines()[1:]:
        fields = line.split()
        if len(fields) > 9 and fields[3] == "0A":  # TCP_LISTEN
            found[int(fields[9])] = fields[1]
    return found


def host_ipv4_addresses() -> list[str]:
    """Every IPv4 address of this machine's interfaces (loopback included)."""
    found = []
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for _, name in socket.if_nameindex():
            try:
                got = fcntl.ioctl(s, SIOCGIFADDR, struct.pack("256s", name.encode()[:15]))
            except OSError:
                continue  # no IPv4 address on it
            found.append(socket.inet_ntoa(got[20:24]))
    return found


@pytest.fixture(params=["thread", "helper"])
def egress(request: pytest.FixtureRequest) -> Iterator[Egress]:
    found = Egress("netns-test", PROBE.path or "bwrap")
    found.start()
    try:
        if request.param == "helper":
            found.route, found.helper = "helper", Helper()
        elif found.route != "thread":
            pytest.skip(
                f"ketch may not enter network namespaces here ({found.fallback or 'unprivileged'})"
            )
        yield found
    finally:
        found.close()


@pytest.fixture
def sandbox_view(tmp_path: Path) -> Iterator[Any]:
    """The sandbox's view of ``tmp_path`` with its protected paths reserved, as the
    sandbox's own wrap does for a command (bwrap binds the placeholders)."""
    from ketch_sandbox.reserve import reserve

    view = ketch_sandbox.view_of(tmp_path)
    claim = reserve(view.reserve, view.reserve_files)
    try:
        yield view
    finally:
        claim.release()


def test_the_listener_lives_in_the_commands_namespace_only(
    egress: Egress, sandbox_view: Any
) -> None:
    view = sandbox_view
    masks = MaskSet.create()
    host_before = listeners(Path("/proc/net/tcp").read_text())
    before = {i for i, a in host_before.items() if a.endswith(f":{PORT:04X}")}
    channel = egress.channel(NetworkRules(), None, None)
    # The command shows its namespace and its /proc/net/tcp, then waits for a line.
    script = "readlink /proc/self/ns/net; cat /proc/net/tcp; echo ---; read line; echo bye"
    argv = channel.launcher() + command_line(
        channel.prefix() + ["/bin/sh", "-c", script],
        view,
        masks,
        extra=channel.bwrap_args(),
        bwrap=PROBE.path or "bwrap",
    )
    process = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None and process.stdin is not None
        inside_ns = process.stdout.readline().strip()
        lines = []
        while (line := process.stdout.readline()) and line.strip() != "---":
            lines.append(line)
        inside_tcp = "".join(lines)
        deadline = time.monotonic() + 10
        while channel.server is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert channel.server is not None, "the proxy never got the listener"
        (listener,) = channel.server.sockets
        assert listener.getsockname() == ("127.0.0.1", PORT)
        listener_inode = os.fstat(listener.fileno()).st_ino
        # The socket's namespace is the command's, not this process's.
        own_ns = os.stat("/proc/self/ns/net").st_ino
        assert namespace_of(listener.fileno()) != own_ns
        assert inside_ns == f"net:[{namespace_of(listener.fileno())}]"
        # The command's /proc/net/tcp lists it, listening on its loopback at PORT ...
        assert listeners(inside_tcp).get(listener_inode) == f"0100007F:{PORT:04X}"
        # ... and the host's lists nothing of it: nothing new listens at PORT on the host.
        host = listeners(Path("/proc/net/tcp").read_text())
        assert listener_inode not in host
        assert {i for i, a in host.items() if a.endswith(f":{PORT:04X}")} == before
        if not before:
            with socket.socket() as probe_socket:
                assert probe_socket.connect_ex(("127.0.0.1", PORT)) != 0
        process.stdin.write("go\n")
        process.stdin.flush()
        out, err = process.communicate(timeout=20)
        assert "bye" in out, err
        assert channel.outcomes == []  # nothing reached the command's proxy
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        channel.report(True)
        masks.close()


class Counter:
    """A TCP listener on every address of this machine that counts what it accepts."""

    def __init__(self, family: socket.AddressFamily, address: str) -> None:
        self.accepted = 0
        self.sock = socket.socket(family, socket.SOCK_STREAM)
        if family == socket.AF_INET6:
            self.sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        self.sock.bind((address, 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            conn.close()

    def close(self) -> None:
        self.sock.close()


def test_a_command_with_the_network_reaches_no_address_of_the_host_but_its_proxy(
    tmp_path: Path,
) -> None:
    """Direct connections (no proxy) from a networked command to every address of this
    machine, at a port where a counter listens on all of them, all fail: the only thing
    its namespace leads to is the proxy, which answers (and refuses what no rule allows)."""
    v4 = Counter(socket.AF_INET, "0.0.0.0")  # noqa: S104 - the point: every address
    counters = [v4]
    targets = [(address, v4.port) for address in host_ipv4_addresses()]
    assert ("127.0.0.1", v4.port) in targets
    if socket.has_ipv6:
        try:
            v6 = Counter(socket.AF_INET6, "::")
        except OSError:
            pass  # no IPv6 here
        else:
            counters.append(v6)
            targets.append(("::1", v6.port))
    code = (
        "import socket\n"
        f"for host, port in {targets!r}:\n"
        "    s = socket.socket(socket.AF_INET6 if ':' in host else socket.AF_INET)\n"
        "    s.settimeout(2)\n"
        "    print(host, s.connect_ex((host, port)))\n"
        f"s = socket.create_connection(('127.0.0.1', {PORT}), timeout=10)\n"
        f"s.sendall(b'CONNECT 127.0.0.1:{v4.port} HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n')\n"
        "print('proxy:', s.recv(100).split(b'\\r\\n')[0].decode())\n"
    )
    command = f"{shlex.quote(sys.executable)} -I -S -c {shlex.quote(code)}"
    h = Harness.create(
        tmp_path,
        script=[call("shell", {"command": command, "network": True}), text("done")],
        bundled=["policy", "shell", "sandbox"],
        settings={"profile": "assisted"},
        config='[permissions]\nallow = ["shell"]\n[sandbox.network]\nallow = []\n',
    )
    try:
        h.run("go")
    finally:
        h.kernel.end(h.session, "exit")
        for counter in counters:
            counter.close()
    (result,) = [e.output for e in h.of_type("tool_result")]
    for host, _ in targets:
        line = next(x for x in result.splitlines() if x.startswith(f"{host} "))
        assert line != f"{host} 0", result  # not connected
    assert "proxy: HTTP/1.1 403" in result, result  # the proxy, and only it, answered
    assert all(counter.accepted == 0 for counter in counters), result
    events = h.of_type("egress")
    assert len(events) == 1 and not events[0].allowed and not events[0].address


ASK_PROXY = (  # the proxy its environment names (the forwarder's port is its own)
    "import os, socket\n"
    "try:\n"
    "    port = int(os.environ['HTTPS_PROXY'].rsplit(':', 1)[1])\n"
    "    s = socket.create_connection(('127.0.0.1', port), timeout=10)\n"
    "    s.sendall(b'CONNECT refused.invalid:443 HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n')\n"
    "    print('proxy:', s.recv(100).split(b'\\r\\n')[0].decode())\n"
    "except OSError as exc:\n"
    "    print('no proxy:', exc.errno)\n"
)


def test_where_the_kernel_refuses_setns_commands_fall_back_to_the_forwarder_said_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The route is tried for real and fails (``setns`` refused): that command runs
    without the network (nothing listens in its namespace) and says so; the session is
    told once, and the next commands reach the proxy through the forwarder."""
    import ketch_sandbox.netns

    def refused(*args: object, **kwargs: object) -> socket.socket:
        raise PermissionError(1, "setns: Operation not permitted")

    monkeypatch.setattr(ketch_sandbox.netns, "route", lambda bwrap: ("thread", ""))
    monkeypatch.setattr(ketch_sandbox.netns, "listen_inside", refused)
    command = f"{shlex.quote(sys.executable)} -I -S -c {shlex.quote(ASK_PROXY)}"
    h = Harness.create(
        tmp_path,
        script=[call("shell", {"command": f"{command} # {n}", "network": True}) for n in range(3)]
        + [text("done")],
        bundled=["policy", "shell", "sandbox"],
        settings={"profile": "assisted"},
        config='[permissions]\nallow = ["shell"]\n[sandbox.network]\nallow = []\n',
    )
    try:
        h.run("go")
    finally:
        h.kernel.end(h.session, "exit")
    first, second, third = [e.output for e in h.of_type("tool_result")]
    assert "no proxy:" in first and "proxy: HTTP" not in first, first
    assert "could not listen inside this command's sandbox (setns:" in first, first
    assert "proxy: HTTP/1.1 403" in second and "proxy: HTTP/1.1 403" in third, (second, third)
    said = [n.message for n in h.of_type("notice") if "forwarder" in n.message]
    assert len(said) == 1 and "setns" in said[0], said


def test_a_sandbox_that_never_starts_leaves_the_route_as_it_was(
    egress: Egress, sandbox_view: Any
) -> None:
    """bwrap refusing its arguments (or a command killed before its sandbox exists) is
    not the route's failure: the next command still gets its listener inside."""
    view = sandbox_view
    masks = MaskSet.create()
    route = egress.route
    try:
        for extra in (["--no-such-option"], []):
            channel = egress.channel(NetworkRules(), None, None)
            argv = channel.launcher() + command_line(
                channel.prefix() + [sys.executable, "-I", "-S", "-c", ASK_PROXY],
                view,
                masks,
                extra=channel.bwrap_args() + extra,
                bwrap=PROBE.path or "bwrap",
            )
            done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
            deadline = time.monotonic() + 5
            while channel.hookup and channel.hookup.link and time.monotonic() < deadline:
                if channel.server is not None or egress.route != route:
                    break
                time.sleep(0.01)
            channel.report(True)
            if extra:
                assert done.returncode != 0
                time.sleep(0.2)  # the joiner's word has arrived
            else:
                assert "proxy: HTTP/1.1 403" in done.stdout, done
            assert egress.route == route and not egress.fallback
    finally:
        masks.close()
