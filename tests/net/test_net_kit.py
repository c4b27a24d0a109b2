"""ketch_net_kit: one canonical host, local addresses, domain rules and their layers."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Any

import pytest

from ketch_net_kit.addresses import local_kind
from ketch_net_kit.config import compose
from ketch_net_kit.hosts import BadHost, canonical_host, split_authority
from ketch_net_kit.rules import BadPattern, parse_pattern

LOOPBACK_SPELLINGS = [
    "127.0.0.1",
    "2130706433",  # decimal
    "0x7f000001",  # hex
    "0x7f.1",
    "0177.0.0.1",  # octal
    "0177.0.0.01",
    "127.1",
    "127.0.1",
    "0x7F.0.0.0x1",
    "127.0.0.1.",  # trailing dot
    "[::ffff:127.0.0.1]",  # IPv4-mapped
    "[::ffff:7f00:1]",
    "[0:0:0:0:0:ffff:127.0.0.1]",
    "::ffff:127.0.0.1",
    "１２７.０.０.１",  # full-width digits (UTS #46 maps them)
    "127。0。0。1",  # ideographic full stops
]


@pytest.mark.parametrize("spelling", LOOPBACK_SPELLINGS)
def test_every_spelling_of_an_ipv4_address_is_that_address(spelling: str) -> None:
    host = canonical_host(spelling)
    assert host.ip is not None
    assert local_kind(host.ip) == "loopback"
    if host.ip.version == 4:
        assert host.name == "127.0.0.1"


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("Example.COM", "example.com"),
        ("example.com.", "example.com"),
        ("bücher.example", "xn--bcher-kva.example"),
        ("BÜCHER.example", "xn--bcher-kva.example"),
        ("ｅｘａｍｐｌｅ.com", "example.com"),  # full-width letters
        ("xn--bcher-kva.example", "xn--bcher-kva.example"),
        ("a-b.c_d.example", "a-b.c_d.example"),
        ("1.2.3.example", "1.2.3.example"),  # ends in a name: a name
    ],
)
def test_names_are_canonical(text: str, name: str) -> None:
    assert canonical_host(text).name == name and canonical_host(text).ip is None


@pytest.mark.parametrize(
    "text",
    [
        "trusted.example.com\x00.evil.net",  # NUL between the checked and the resolved name
        "trusted.example.com\x00",
        "trusted.example.com\t",
        "trusted.example.com\r\n",
        "trusted example.com",
        "evil.net\\@trusted.example.com",
        "evil.net@trusted.example.com",
        "trusted.example.com%2eevil.net",
        "%31%32%37.0.0.1",
        "example..com",
        ".example.com",
        "",
        "-example.com",
        "256.0.0.1",  # ends in a number, not an address: refused, never a name
        "1.2.3.4.5",
        "0x1g.0.0.1",
        "example.08",
        "[::1%25eth0]",
        "[fe80::1%eth0]",
        "xn--zz.example",  # invalid punycode
        "a" * 64 + ".example.com",
        "exa\u0085mple.com",
    ],
)
def test_hostile_hosts_are_refused(text: str) -> None:
    with pytest.raises(BadHost):
        canonical_host(text)


def test_authority_with_a_port() -> None:
    host, port = split_authority("[::1]:8080")
    assert (host.name, port) == ("::1", 8080)
    assert split_authority("Example.com", 80)[0].name == "example.com"
    for bad in ("example.com:", "example.com:0", "example.com:99999", "::1:80", "x:y"):
        with pytest.raises(BadHost):
            split_authority(bad, 80)


@pytest.mark.parametrize(
    ("address", "kind"),
    [
        ("127.0.0.1", "loopback"),
        ("::1", "loopback"),
        ("10.1.2.3", "private"),
        ("172.16.0.1", "private"),
        ("192.168.1.1", "private"),
        ("100.64.0.1", "private"),
        ("169.254.169.254", "metadata"),
        ("fd00:ec2::254", "metadata"),
        ("100.100.100.200", "metadata"),
        ("169.254.1.1", "link-local"),
        ("fe80::1", "link-local"),
        ("fd12::1", "private"),
        ("0.0.0.0", "unspecified"),
        ("::", "unspecified"),
        ("::ffff:10.0.0.1", "private"),
        ("64:ff9b::a9fe:a9fe", "metadata"),  # NAT64 of 169.254.169.254
        ("2002:7f00:1::", "loopback"),  # 6to4 of 127.0.0.1
        ("::127.0.0.1", "loopback"),  # IPv4-compatible
        ("224.0.0.1", "multicast"),
        ("255.255.255.255", "reserved"),
        ("8.8.8.8", None),
        ("2606:4700::1", None),
        ("203.0.113.80", None),  # documentation ranges are not local (a transparent proxy's)
    ],
)
def test_local_kinds(address: str, kind: str | None) -> None:
    assert local_kind(ipaddress.ip_address(address)) == kind


def test_patterns_match_on_label_boundaries() -> None:
    exact, under = parse_pattern("trusted.example.com"), parse_pattern("*.example.com")
    for name, exact_hit, under_hit in [
        ("trusted.example.com", True, True),
        ("TRUSTED.example.com.", True, True),
        ("trusted.example.com.evil.net", False, False),
        ("eviltrusted.example.com", False, True),
        ("example.com", False, False),  # *.x is below x only
        ("notexample.com", False, False),
        ("a.b.example.com", False, True),
    ]:
        host = canonical_host(name)
        assert exact.matches(host, 443) is exact_hit, name
        assert under.matches(host, 443) is under_hit, name
    assert parse_pattern("example.com:8443").matches(canonical_host("example.com"), 8443)
    assert not parse_pattern("example.com:8443").matches(canonical_host("example.com"), 443)


def test_address_patterns_match_every_spelling() -> None:
    deny = parse_pattern("127.0.0.0/8")
    for spelling in LOOPBACK_SPELLINGS:
        assert deny.matches(canonical_host(spelling), 80), spelling
    assert parse_pattern("10.1.2.3").matches(canonical_host("0x0a.1.2.3"))
    assert not parse_pattern("10.1.2.3").matches(canonical_host("10.1.2.4"))
    assert not parse_pattern("*.example.com").matches(canonical_host("127.0.0.1"))


@pytest.mark.parametrize(
    "text",
    [
        "",
        "https://example.com",
        "ex*ample.com",
        "*.127.0.0.1",
        "exa mple.com",
        "a:b:c",
        "x:99999",
        7,
    ],
)
def test_bad_patterns_say_why(text: Any) -> None:
    with pytest.raises(BadPattern):
        parse_pattern(text)


@dataclass
class L:
    name: str
    data: dict[str, Any] = field(default_factory=dict)
    source: str = "test"
    error: str | None = None


def net(**lists: Any) -> dict[str, Any]:
    return {"sandbox": {"network": lists}}


def test_an_empty_allow_list_allows_nothing() -> None:
    rules = compose([L("user", net(allow=[]))], "assisted")
    assert rules.decide(canonical_host("example.com"), 443).verdict == "ask"
    everything = compose([L("user", net(allow=["*"]))], "assisted")
    assert everything.decide(canonical_host("example.com"), 443).verdict == "allow"


def test_deny_beats_allow_and_read_only_limits_methods() -> None:
    rules = compose(
        [
            L(
                "user",
                net(
                    allow=["*.example.com"], deny=["gist.example.com"], read_only=["ro.example.com"]
                ),
            )
        ],
        "manual",
    )
    host = canonical_host
    assert rules.decide(host("pypi.example.com"), 443).verdict == "allow"
    assert rules.decide(host("gist.example.com"), 443).verdict == "deny"
    assert rules.decide(host("ro.example.com"), 443).verdict == "deny"  # a tunnel: unreadable
    assert rules.decide(host("ro.example.com"), 80, method="GET", tunnel=False).verdict == "allow"
    post = rules.decide(host("ro.example.com"), 80, method="POST", tunnel=False)
    assert post.verdict == "deny" and "GET and HEAD only" in post.reason


def test_profiles_add_their_own_lists() -> None:
    layers = [
        L("user", net(allow=["a.example"], profiles={"full-access": {"allow": ["b.example"]}}))
    ]
    assert compose(layers, "assisted").decide(canonical_host("b.example"), 443).verdict == "ask"
    assert (
        compose(layers, "full-access").decide(canonical_host("b.example"), 443).verdict == "allow"
    )


def test_a_workspace_narrows_and_never_widens() -> None:
    user = L("user", net(allow=["*.example.com", "pypi.org"]))
    narrowing = L("workspace", net(allow=["docs.example.com", "evil.net", "*"], deny=["pypi.org"]))
    rules = compose([user, narrowing], "assisted")
    host = canonical_host
    assert rules.decide(host("docs.example.com"), 443).verdict == "allow"
    assert rules.decide(host("api.example.com"), 443).verdict == "ask"  # narrowed away
    assert rules.decide(host("evil.net"), 443).verdict == "ask"  # would widen: ignored
    assert rules.decide(host("pypi.org"), 443).verdict == "deny"
    assert any("evil.net" in n and "'*'" in n for n in rules.notices)
    # local entries narrow the same way, and a workspace never hands out secrets
    local = compose(
        [
            L("user", net(local=["registry.corp"])),
            L("workspace", net(local=["127.0.0.1"], inject={"x": {}})),
        ],
        "assisted",
    )
    assert local.local == ()
    assert any("inject" in n for n in local.notices)


def test_a_broken_deny_entry_fails_closed() -> None:
    rules = compose([L("user", net(allow=["example.com"], deny=["https://bad"]))], "assisted")
    assert rules.errors and rules.decide(canonical_host("example.com"), 443).verdict == "ask"
    broken_allow = compose([L("user", net(allow=["example.com", "ex*mple"]))], "assisted")
    assert broken_allow.decide(canonical_host("example.com"), 443).verdict == "allow"
    assert broken_allow.errors
