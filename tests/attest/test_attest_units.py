"""The receipt's pieces on their own: the journal digest, a journal read back into calls
(origins, outcomes, what each call changed), costs, the policy checks, and SSH
signatures made by the real ``ssh-keygen``."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from ketch.errors import KetchError
from ketch_attest import journal, policy, sshsig
from ketch_attest.statement import Builder, Options
from tests.attest.kit import needs_ssh_keygen


def _entry(seq: int, kind: str, data: dict[str, Any]) -> tuple[int, str, float, bytes]:
    return seq, kind, 1000.0 + seq, json.dumps(data).encode()


def _journal() -> list[tuple[int, str, float, bytes]]:
    user = {"role": "user", "parts": [{"type": "text", "text": "go"}]}
    calls = {
        "role": "assistant",
        "parts": [
            {"type": "tool_call", "id": "c1", "name": "shell", "input": {"command": "make"}},
            {
                "type": "tool_call",
                "id": "c2",
                "name": "web_fetch",
                "input": {"url": "https://evil.example/x"},
            },
        ],
    }
    rows = [
        ("session", {"model": "m-1", "provider": "p", "mode": "build", "profile": "assisted"}),
        ("message", user),
        ("message", calls),
        (
            "permission",
            {
                "tool_call_id": "c1",
                "decision": "allow",
                "origin": "sandbox",
                "effects": ["execute"],
            },
        ),
        ("tool_started", {"tool_call_id": "c1", "name": "shell", "input": {"command": "make"}}),
        ("sandbox", {"tool_call_id": "c1", "sandboxed": True, "network": "proxy"}),
        (
            "egress",
            {
                "tool_call_id": "c1",
                "host": "pypi.org",
                "port": 443,
                "allowed": True,
                "rule": "allow 'pypi.org'",
            },
        ),
        (
            "egress",
            {"tool_call_id": "c1", "host": "gist.github.com", "port": 443, "allowed": False},
        ),
        ("changes", {"paths": ["out.bin"]}),
        ("tool_result", {"tool_call_id": "c1", "ok": True, "outcome": "succeeded"}),
        (
            "permission",
            {
                "tool_call_id": "c2",
                "decision": "ask",
                "approved": True,
                "origin": "person",
                "effects": ["network"],
            },
        ),
        (
            "tool_started",
            {"tool_call_id": "c2", "name": "web_fetch", "input": {"url": "https://evil.example/x"}},
        ),
        ("tool_result", {"tool_call_id": "c2", "ok": True, "outcome": "succeeded"}),
        (
            "usage",
            {
                "input_tokens": 10,
                "output_tokens": 2,
                "cost_usd": 0.5,
                "model": "m-1",
                "provider": "p",
            },
        ),
        (
            "usage",
            {
                "input_tokens": 5,
                "output_tokens": 1,
                "cost_usd": None,
                "model": "m-2",
                "provider": "p",
            },
        ),
        ("turn_end", {"stop_reason": "end_turn"}),
    ]
    return [_entry(n, kind, data) for n, (kind, data) in enumerate(rows, 1)]


def test_the_journal_digest_covers_entries_one_to_n_only() -> None:
    entries = _journal()
    digest = journal.journal_digest(entries)
    assert journal.journal_digest(list(entries)) == digest
    assert journal.journal_digest([*entries, _entry(99, "state", {})][: len(entries)]) == digest
    for index, change in ((4, "payload"), (5, "kind"), (0, "ts")):
        seq, kind, ts, payload = entries[index]
        altered = {
            "payload": (seq, kind, ts, payload.replace(b"make", b"mak3")),
            "kind": (seq, kind + "x", ts, payload),
            "ts": (seq, kind, ts + 1e-6, payload),
        }[change]
        assert journal.journal_digest([*entries[:index], altered, *entries[index + 1 :]]) != digest


def _predicate(tmp_path: Path) -> dict[str, Any]:
    facts = journal.read("ses_x", _journal())
    body = Builder(facts, tmp_path, Options()).statement(0.0)
    return dict(body["predicate"])


def test_a_journal_reads_back_into_calls(tmp_path: Path) -> None:
    predicate = _predicate(tmp_path)
    make, fetch = predicate["calls"]
    assert (make["decidedBy"], make["sandboxed"], make["changed"], make["outcome"]) == (
        "sandbox",
        True,
        ["out.bin"],
        "succeeded",
    )
    assert [c["host"] for c in make["network"]] == ["pypi.org", "gist.github.com"]
    assert (fetch["decision"], fetch["approved"], fetch["decidedBy"]) == ("ask", True, "person")
    assert fetch["sandboxed"] is None  # it ran no program
    assert predicate["usage"] == {
        "responses": 2,
        "inputTokens": 15,
        "outputTokens": 3,
        "cachedTokens": 0,
        "costUsd": None,  # one response had no price: the total is not known
        "unpricedResponses": 1,
    }
    assert {m["model"]: m["costUsd"] for m in predicate["models"]} == {"m-1": 0.5, "m-2": None}


def test_policy_checks_name_each_breach(tmp_path: Path) -> None:
    predicate = _predicate(tmp_path)
    rules = policy.Policy(
        network=["pypi.org"],
        models=["m-1"],
        write_origins=["person"],
        deny_origins=["sandbox"],
        max_cost_usd=1.0,
        journal=True,
    )
    failures = policy.check(rules, predicate, journal_checked=False)
    assert failures == [
        "policy write_origins: call c1 (shell, turn 1) may have written and was decided by sandbox, not person",
        "policy deny_origins: call c1 (shell, turn 1) was allowed by sandbox",
        "policy network: call c2 (web_fetch, turn 1) connected to evil.example, not in the list",
        "policy models: p/m-2 answered, not in the list",
        "policy max_cost_usd: the cost is not known (a model had no price)",
        "policy journal: the journal was not checked against the store",
    ]
    # The refused connection to gist.github.com is not a breach: it never happened.
    assert policy.check(policy.Policy(network=["pypi.org", "evil.example"]), predicate, True) == []


def test_a_policy_file_is_checked_strictly(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text('sandboxed = "yes please"\n')
    with pytest.raises(KetchError) as caught:
        policy.load(path)
    assert caught.value.exit_code == 2 and "sandboxed" in caught.value.message


@needs_ssh_keygen
def test_ssh_keygen_signatures_verify_and_a_changed_message_does_not(tmp_path: Path) -> None:
    for kind in ("ed25519", "ecdsa", "rsa"):
        key = tmp_path / f"id_{kind}"
        subprocess.run(["ssh-keygen", "-q", "-t", kind, "-N", "", "-f", str(key)], check=True)
        signed = subprocess.run(
            ["ssh-keygen", "-Y", "sign", "-n", sshsig.NAMESPACE, "-f", str(key)],
            input=b"the message",
            capture_output=True,
            check=True,
        )
        sig = sshsig.parse(sshsig.unarmor(signed.stdout.decode()))
        assert sshsig.verify(sig, b"the message") is None, kind
        assert "does not match" in str(sshsig.verify(sig, b"the messagE"))
        assert "namespace" in str(sshsig.verify(sig, b"the message", namespace="git"))
    with pytest.raises(KetchError):
        sshsig.parse(b"SSHSIG\x00\x00\x00\x01\x00\x00")
