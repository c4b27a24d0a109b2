"""The sandbox's egress proxy, by effects: real bwrap, real commands (curl, python, pip),
real listeners that count the connections they get.

Host names: the tests name hosts under ``.test`` and resolve them (in the proxy, which
runs in this process) with a recording stand-in for DNS that maps them to a canary on
127.0.0.1; every connection is real. ``local = ["*"]`` lets the rules alone decide,
where a test is about the rules rather than about local addresses.
"""

from __future__ import annotations

import http.server
import ipaddress
import shutil
import socket
import socketserver
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import ketch_sandbox.egress
from ketch.policy import ApprovalAnswer, ApprovalRequest
from ketch.testing import Harness, call, text
from ketch_net_kit.resolve import Address
from ketch_policy_kit.approvals import session_approvals
from ketch_sandbox.bwrap import probe

PROBE = probe()
needs_bwrap = pytest.mark.skipif(
    not PROBE.available, reason=f"no working sandbox here: {PROBE.reason}"
)
needs_curl = pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
pytestmark = [needs_bwrap, needs_curl]


class Canary:
    """An HTTP listener that counts every connection it accepts (and the Host headers)."""

    def __init__(self, body: bytes = b"canary", redirect: str | None = None) -> None:
        self.connections = 0
        self.hosts: list[str] = []
        self.authorization: list[str] = []
        canary = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def setup(self) -> None:
                canary.connections += 1
                super().setup()

            def do_GET(self) -> None:  # noqa: N802
                canary.hosts.append(self.headers.get("Host", ""))
                canary.authorization.append(self.headers.get("Authorization", ""))
                if redirect:
                    self.send_response(302)
                    self.send_header("Location", redirect)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_POST = do_GET  # noqa: N815

            def log_message(self, *args: Any) -> None:
                pass

        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def canary() -> Iterator[Canary]:
    found = Canary()
    yield found
    found.close()


@pytest.fixture
def dns(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Names the proxy looked up (``*.test`` -> 127.0.0.1; the rest as the system says)."""
    looked_up: list[str] = []
    real = ketch_sandbox.egress.resolve

    async def resolve(host: Any, port: int) -> list[Address]:
        if host.ip is None:
            looked_up.append(host.name)
        if host.ip is None and host.name.endswith(".test"):
            ip = ipaddress.ip_address("127.0.0.1")
            return [Address(ip, "loopback")]
        return await real(host, port)

    monkeypatch.setattr(ketch_sandbox.egress, "resolve", resolve)
    return looked_up


def harness(
    tmp_path: Path,
    commands: list[str],
    network: str,
    *,
    profile: str = "assisted",
    rules: str = "",
) -> Harness:
    script = [call("shell", {"command": c, "network": True}) for c in commands] + [text("done")]
    return Harness.create(
        tmp_path,
        script=script,
        bundled=["policy", "shell", "sandbox"],
        settings={"profile": profile},
        config=f'[permissions]\nallow = ["shell"{rules}]\n[sandbox.network]\n{network}\n',
    )


def outputs(h: Harness) -> list[str]:
    return [e.output for e in h.of_type("tool_result")]


def curl(url: str, *extra: str) -> str:
    return "curl -sS -m 10 " + " ".join(extra) + f" {url}; echo curl-exit=$?"


def run(h: Harness, approver: Any = None) -> list[str]:
    try:
        h.run("go", approver=approver)
        return outputs(h)
    finally:
        h.kernel.end(h.session, "exit")


# --- the rules, by effect -------------------------------------------------------------------


def test_an_allowed_host_is_reached_and_anything_else_is_not(
    tmp_path: Path, canary: Canary, dns: list[str]
) -> None:
    p = canary.port
    h = harness(
        tmp_path,
        [curl(f"http://trusted.test:{p}/"), curl(f"http://other.test:{p}/")],
        'allow = ["trusted.test"]\nlocal = ["*"]',
    )
    allowed, refused = run(h)
    assert "canary" in allowed and canary.connections == 1
    assert "canary" not in refused and "403" not in refused.split("ketch:")[0]
    assert "other.test" in refused and "not allowed" in refused  # the one-line reason
    assert 'allow = ["other.test"]' in refused  # and the rule that would allow it
    assert "other.test" not in dns  # a refused name is never looked up


def test_an_empty_allow_list_allows_nothing(tmp_path: Path, canary: Canary, dns: list[str]) -> None:
    h = harness(
        tmp_path, [curl(f"http://trusted.test:{canary.port}/")], "allow = []\nlocal = ['*']"
    )
    (result,) = run(h)
    assert canary.connections == 0 and "not allowed" in result and dns == []


def test_suffix_and_nul_tricks_reach_nothing(
    tmp_path: Path, canary: Canary, dns: list[str]
) -> None:
    p = canary.port
    socks = (
        "python3 -c \"import socket,sys; s=socket.create_connection(('127.0.0.1', int(__import__('os').environ['ALL_PROXY'].rsplit(':',1)[1]))); "
        "s.sendall(b'\\x05\\x01\\x00'); s.recv(2); name=b'trusted.test\\x00.evil.test'; "
        f"s.sendall(b'\\x05\\x01\\x00\\x03'+bytes([len(name)])+name+({p}).to_bytes(2,'big')); print('socks-reply', s.recv(10)[1])\""
    )
    connect_nul = (
        "python3 -c \"import os,socket; port=int(os.environ['HTTPS_PROXY'].rsplit(':',1)[1]); "
        f"s=socket.create_connection(('127.0.0.1', port)); s.sendall(b'CONNECT trusted.test%00.evil.test:{p} HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n'); print(s.recv(200))\""
    )
    h = harness(
        tmp_path,
        [
            curl(f"http://trusted.test.evil.test:{p}/"),
            curl(f"http://eviltrusted.test:{p}/"),
            curl(f"http://trusted.test.:{p}/"),  # the same host, spelled with a dot: allowed
            socks,
            connect_nul,
        ],
        'allow = ["trusted.test"]\nlocal = ["*"]',
    )
    suffix, glued, dotted, nul_socks, nul_connect = run(h)
    assert "canary" in dotted and canary.connections == 1  # only the control got through
    assert "canary" not in suffix + glued
    assert "socks-reply 2" in nul_socks  # "not allowed by ruleset"
    assert "400" in nul_connect or "403" in nul_connect
    assert all(name in ("trusted.test",) for name in dns), dns


def test_ip_literals_in_every_spelling_are_the_address(
    tmp_path: Path, canary: Canary, dns: list[str]
) -> None:
    p = canary.port
    spellings = [
        "127.0.0.1",
        "2130706433",
        "0x7f000001",
        "0x7f.1",
        "0177.0.0.1",
        "127.1",
        "[::ffff:127.0.0.1]",
        "[::ffff:7f00:1]",
        "127.0.0.1.",
    ]
    # Raw CONNECT lines, as a client could write them (curl would tidy the spelling first).
    raw = (
        "python3 -c \"import os,socket,sys; port=int(os.environ['HTTPS_PROXY'].rsplit(':',1)[1]); "
        "s=socket.create_connection(('127.0.0.1', port)); "
        f"s.sendall(('CONNECT '+sys.argv[1]+':{p} HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n').encode()); "
        'print(s.recv(300).decode().splitlines()[0])"'
    )
    h = harness(
        tmp_path,
        [f"{raw} '{s}'" for s in spellings] + [curl(f"http://{spellings[1]}:{p}/", "--noproxy ''")],
        'allow = ["*"]\ndeny = ["127.0.0.0/8"]\nlocal = ["*"]',
    )
    results = run(h)
    assert canary.connections == 0, results
    assert all("403" in r for r in results[:-1]), results
    assert all("deny '127.0.0.0/8'" in r for r in results), results


def test_redirects_are_checked_again(tmp_path: Path, canary: Canary, dns: list[str]) -> None:
    evil = canary
    bouncer = Canary(redirect=f"http://evil.test:{evil.port}/loot")
    try:
        h = harness(
            tmp_path,
            [curl(f"http://trusted.test:{bouncer.port}/", "-L")],
            'allow = ["trusted.test"]\nlocal = ["*"]',
        )
        (result,) = run(h)
    finally:
        bouncer.close()
    assert bouncer.connections == 1 and evil.connections == 0
    assert "evil.test" in result and "not allowed" in result


def test_read_only_hosts_get_get_and_head_only(
    tmp_path: Path, canary: Canary, dns: list[str]
) -> None:
    p = canary.port
    h = harness(
        tmp_path,
        [curl(f"http://docs.test:{p}/"), curl(f"http://docs.test:{p}/", "-d x=1")],
        'allow = ["docs.test"]\nread_only = ["docs.test"]\nlocal = ["*"]',
    )
    got, posted = run(h)
    assert "canary" in got and canary.connections == 1
    assert "GET and HEAD only" in posted


# --- local addresses, raw addresses, DNS ----------------------------------------------------


def test_loopback_private_and_raw_addresses_are_not_reached(
    tmp_path: Path, canary: Canary, dns: list[str]
) -> None:
    p = canary.port
    h = harness(
        tmp_path,
        [
            curl(f"http://trusted.test:{p}/"),  # allowed name, loopback address: no local rule
            curl(f"http://127.0.0.1:{p}/", "--noproxy ''"),
            curl(f"http://localhost:{p}/", "--noproxy ''"),
            curl("http://10.255.255.1:80/"),
            curl("http://169.254.169.254/latest/meta-data/"),
        ],
        'allow = ["trusted.test"]',
    )
    results = run(h)
    assert canary.connections == 0, results
    assert "this machine (loopback)" in results[0]
    assert all("not allowed" in r or "loopback" in r for r in results), results
    events = h.of_type("egress")
    assert len(events) == 5 and not any(e.allowed for e in events)
    assert not any(e.address for e in events)  # nothing was connected to


def test_a_local_rule_lets_the_named_host_reach_a_local_address(
    tmp_path: Path, canary: Canary, dns: list[str]
) -> None:
    h = harness(
        tmp_path,
        [curl(f"http://registry.test:{canary.port}/")],
        'allow = ["registry.test"]\nlocal = ["registry.test"]',
    )
    (result,) = run(h)
    assert "canary" in result and canary.connections == 1


def test_no_dns_inside_the_sandbox(tmp_path: Path) -> None:
    """No resolver answers inside; a UDP datagram to the host's resolver (or to a canary
    on the host) never arrives: the sandbox's network namespace has only its loopback."""
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    udp.settimeout(0.5)
    port = udp.getsockname()[1]
    probe_udp = (
        'python3 -c "import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); '
        f"s.sendto(b'leak.example.com', ('127.0.0.1', {port})); print('sent')\""
    )
    h = harness(
        tmp_path,
        [
            "getent hosts pypi.org; echo getent-exit=$?",
            "python3 -c \"import socket; socket.getaddrinfo('leak.example.com', 443)\"; echo py-exit=$?",
            probe_udp,
            "cat /etc/resolv.conf; ip route 2>/dev/null; cat /proc/net/route",
        ],
        "allow = []",
    )
    getent, lookup, sent, conf = run(h)
    udp_got = []
    try:
        udp_got.append(udp.recvfrom(100))
    except TimeoutError:
        pass
    finally:
        udp.close()
    assert "getent-exit=0" not in getent and "py-exit=0" not in lookup
    assert udp_got == [] and "sent" in sent  # it sent into its own loopback: nobody there
    assert "nameserver 127.0.0.1" in conf and "egress proxy" in conf
    assert "eth" not in conf.split("nameserver")[-1]  # no route but loopback


def test_unlisted_hosts_ask_in_every_profile_and_answers_hold_for_the_session(
    tmp_path: Path, canary: Canary, dns: list[str]
) -> None:
    asked: list[ApprovalRequest] = []

    async def approve_for_session(request: ApprovalRequest) -> ApprovalAnswer:
        asked.append(request)
        return ApprovalAnswer(approved=True, remember="session")

    p = canary.port
    h = harness(
        tmp_path,
        [curl(f"http://new.test:{p}/"), curl(f"http://new.test:{p}/")],
        'allow = []\nlocal = ["*"]',
        profile="full-access",
    )
    first, second = run(h, approve_for_session)
    assert "canary" in first and "canary" in second and canary.connections == 2
    assert len(asked) == 1  # the second command was covered by "for this session"
    assert "new.test" in asked[0].reason and asked[0].scope == f"web(new.test:{p})"
    assert f"web(new.test:{p})" in session_approvals(h.session)


def test_an_always_answer_holds_in_the_next_session_of_the_workspace(
    tmp_path: Path, canary: Canary, dns: list[str]
) -> None:
    asked: list[ApprovalRequest] = []

    async def approve_always(request: ApprovalRequest) -> ApprovalAnswer:
        asked.append(request)
        return ApprovalAnswer(approved=True, remember="always")

    async def refuse(request: ApprovalRequest) -> ApprovalAnswer:
        asked.append(request)
        return ApprovalAnswer(approved=False)

    def with_store(commands: list[str]) -> Harness:
        # The saved answer lives in the session store (unencrypted here: no keyring).
        return Harness.create(
            tmp_path,
            script=[call("shell", {"command": c, "network": True}) for c in commands]
            + [text("done")],
            bundled=["policy", "shell", "sandbox", "store"],
            config='[permissions]\nallow = ["shell"]\n[sandbox.network]\nallow = []\n'
            'local = ["*"]\n[storage]\nencryption = "off"\n',
        )

    p = canary.port
    (first,) = run(with_store([curl(f"http://new.test:{p}/")]), approve_always)
    assert "canary" in first and len(asked) == 1
    # A new kernel and session over the same workspace and store: nobody is asked, the
    # saved answer covers the host; another host still asks (and is refused).
    later = with_store([curl(f"http://new.test:{p}/"), curl(f"http://other.test:{p}/")])
    second, third = run(later, refuse)
    assert "canary" in second and canary.connections == 2
    assert len(asked) == 2 and "other.test" in asked[1].reason
    assert "canary" not in third


def test_the_egress_log_and_the_result_count_every_attempt(
    tmp_path: Path, canary: Canary, dns: list[str]
) -> None:
    p = canary.port
    h = harness(
        tmp_path,
        [
            f"{curl(f'http://trusted.test:{p}/')}; {curl(f'http://trusted.test:{p}/')}; {curl(f'http://denied.test:{p}/')}"
        ],
        'allow = ["trusted.test"]\ndeny = ["denied.test"]\nlocal = ["*"]',
    )
    (result,) = run(h)
    assert "[sandbox] network: 3 connections (trusted.test:" in result and " x2" in result
    assert "denied by [sandbox.network] deny 'denied.test'" in result
    events = h.of_type("egress")
    assert [(e.host, e.allowed) for e in events] == [
        ("trusted.test", True),
        ("trusted.test", True),
        ("denied.test", False),
    ]
    assert all(e.bytes_down > 0 for e in events[:2]) and events[0].rule == "allow 'trusted.test'"
    assert events[2].rule == "deny 'denied.test'" and events[2].bytes_up == 0
    assert all(e.tool_call_id == h.of_type("tool_result")[0].tool_call_id for e in events)


def test_without_network_nothing_leaves_and_the_socket_is_per_command(
    tmp_path: Path, canary: Canary, dns: list[str]
) -> None:
    h = Harness.create(
        tmp_path,
        script=[
            call("shell", {"command": curl(f"http://trusted.test:{canary.port}/")}),
            call("shell", {"command": "ls /run/ketch 2>&1; env | grep -i _proxy; echo done"}),
            text("done"),
        ],
        bundled=["policy", "shell", "sandbox"],
        settings={"profile": "assisted"},
        config='[permissions]\nallow = ["shell"]\n[sandbox.network]\nallow = ["trusted.test"]\nlocal = ["*"]\n',
    )
    offline, looked = run(h)
    assert canary.connections == 0 and "curl-exit=0" not in offline  # no proxy at all
    assert "egress.sock" not in looked and "_proxy" not in looked.lower().replace("no such", "")


def test_a_placeholder_becomes_the_secret_only_for_its_host_over_plain_http(
    tmp_path: Path, canary: Canary, dns: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KETCH_TEST_REAL_TOKEN", "real-secret-value")
    p = canary.port
    header = "-H 'Authorization: Bearer KETCH_PLACEHOLDER_TOKEN'"
    h = harness(
        tmp_path,
        [
            curl(f"http://api.test:{p}/", header),
            curl(f"http://other.test:{p}/", header),
            "echo token=$KETCH_TEST_REAL_TOKEN",
        ],
        'allow = ["api.test", "other.test"]\nlocal = ["*"]\n'
        '[sandbox.network.inject."api.test"]\nplaceholder = "KETCH_PLACEHOLDER_TOKEN"\n'
        'env = "KETCH_TEST_REAL_TOKEN"\n',
    )
    *_, inside = run(h)
    assert canary.authorization == ["Bearer real-secret-value", "Bearer KETCH_PLACEHOLDER_TOKEN"]
    assert "real-secret-value" not in inside  # the sandbox never had it
