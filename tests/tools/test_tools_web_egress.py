"""web_fetch under the network's rules, by effect: listeners count the connections they get.

Issue 23 item 6: a fetch that would reach this machine or its networks (loopback,
private, link-local, metadata) asks in every profile -- full-access included -- after
resolution, on every connection and every redirect, and connects only to the address
that was checked. Headless runs have no one to ask, so "asks" shows as "not fetched".
"""

from __future__ import annotations

import ipaddress
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

import ketch_net_kit.pinned
from ketch.policy import ApprovalAnswer, ApprovalRequest
from ketch.testing import Harness, call, text
from ketch_net_kit.resolve import Address


class Listener:
    def __init__(self, location: str | None = None) -> None:
        self.connections = 0
        listener = self

        class Handler(BaseHTTPRequestHandler):
            def setup(self) -> None:
                listener.connections += 1
                super().setup()

            def do_GET(self) -> None:  # noqa: N802
                if location:
                    self.send_response(302)
                    self.send_header("Location", location)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                body = b"admin secrets"
                self.send_response(200)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_port
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def admin() -> Iterator[Listener]:
    found = Listener()
    yield found
    found.close()


@pytest.fixture
def dns(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """``*.test`` resolves to 127.0.0.1 (as a rebinding name would, the second time)."""
    looked_up: list[str] = []
    real = ketch_net_kit.pinned.resolve

    async def resolve(host: Any, port: int) -> list[Address]:
        looked_up.append(host.name)
        if host.ip is None and host.name.endswith(".test"):
            return [Address(ipaddress.ip_address("127.0.0.1"), "loopback")]
        return await real(host, port)

    monkeypatch.setattr(ketch_net_kit.pinned, "resolve", resolve)
    return looked_up


def fetches(
    tmp_path: Any, urls: list[str], *, profile: str, network: str = "", approver: Any = None
) -> list[Any]:
    h = Harness.create(
        tmp_path,
        script=[call("web_fetch", {"url": u}) for u in urls] + [text("done")],
        bundled=["policy", "web"],
        settings={"profile": profile},
        config=f"[sandbox.network]\n{network}\n",
    )
    h.run("go", approver=approver)
    return list(h.of_type("tool_result"))


@pytest.mark.parametrize("profile", ["manual", "assisted", "full-access"])
def test_loopback_in_any_spelling_asks_in_every_profile(
    tmp_path: Any, admin: Listener, profile: str
) -> None:
    p = admin.port
    urls = [
        f"http://{h}:{p}/admin"
        for h in (
            "127.0.0.1",
            "2130706433",
            "0x7f.1",
            "0177.0.0.1",
            "[::ffff:127.0.0.1]",
            "localhost",
        )
    ]
    results = fetches(tmp_path, urls, profile=profile)
    assert admin.connections == 0, [r.output for r in results]
    assert all(not r.ok and "admin secrets" not in r.output for r in results)


def test_approved_it_connects_to_the_checked_address(
    tmp_path: Any, admin: Listener, dns: list[str]
) -> None:
    asked: list[ApprovalRequest] = []

    async def yes(request: ApprovalRequest) -> ApprovalAnswer:
        asked.append(request)
        return ApprovalAnswer(approved=True)

    results = fetches(
        tmp_path, [f"http://intranet.test:{admin.port}/"], profile="full-access", approver=yes
    )
    assert results[0].ok and "admin secrets" in results[0].output and admin.connections == 1
    assert len(asked) == 1 and "this machine (loopback)" in asked[0].reason
    assert dns.count("intranet.test") == 1  # one lookup: the address checked is the one used


def test_a_name_that_resolves_to_loopback_is_caught_at_connect(
    tmp_path: Any, admin: Listener, dns: list[str]
) -> None:
    (result,) = fetches(tmp_path, [f"http://rebind.test:{admin.port}/"], profile="full-access")
    assert admin.connections == 0 and not result.ok and "loopback" in result.output


def test_a_redirect_to_a_local_address_is_checked_again(tmp_path: Any, admin: Listener) -> None:
    bouncer = Listener(location=f"http://127.0.0.1:{admin.port}/admin")
    try:
        (result,) = fetches(
            tmp_path,
            [f"http://127.0.0.1:{bouncer.port}/"],
            profile="full-access",
            network=f'local = ["127.0.0.1:{bouncer.port}"]',
        )
    finally:
        bouncer.close()
    assert bouncer.connections == 1 and admin.connections == 0
    assert not result.ok and "admin secrets" not in result.output


def test_a_local_rule_lets_it_through_and_a_deny_rule_does_not(
    tmp_path: Any, admin: Listener, dns: list[str]
) -> None:
    (allowed,) = fetches(
        tmp_path / "a",
        [f"http://docs.test:{admin.port}/"],
        profile="manual",  # the allow entry answers for the host: nothing asks
        network='allow = ["docs.test"]\nlocal = ["docs.test"]',
    )
    assert allowed.ok and admin.connections == 1
    (denied,) = fetches(
        tmp_path / "b",
        [f"http://docs.test:{admin.port}/"],
        profile="full-access",
        network='allow = ["*"]\ndeny = ["*.test"]\nlocal = ["*"]',
    )
    assert not denied.ok and admin.connections == 1
    assert "denied" in denied.output.lower()


def test_metadata_and_private_addresses_are_never_fetched_unasked(tmp_path: Any) -> None:
    results = fetches(
        tmp_path,
        [
            "http://169.254.169.254/latest/meta-data/",
            "http://[fd00:ec2::254]/",
            "http://10.255.255.1/",
        ],
        profile="full-access",
    )
    assert all(not r.ok for r in results)
    assert all("timed out" not in r.output and "could not fetch" not in r.output for r in results)
