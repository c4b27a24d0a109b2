"""The command lines' contract: exit 0 verified, 1 a verification or policy failure (one
line per failure), 2 usage -- a one-line message for every bad input, never a
traceback; ``--turns`` narrows a receipt; a session that went on after its receipt
still verifies, and the receipt says so."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

import pytest

from ketch.testing.harness import isolated_env
from tests.attest.kit import env_for, ketch, make_workspace, needs_git, statement

pytestmark = [needs_git, pytest.mark.slow]


def _turn(n: int) -> list[dict[str, object]]:
    return [
        {
            "tool_calls": [
                {"name": "write_file", "input": {"path": f"t{n}.txt", "content": f"{n}\n"}}
            ]
        },
        {"text": f"turn {n} done"},
    ]


def _two_turns(root: Path, base: dict[str, str] | None = None) -> tuple[Path, dict[str, str]]:
    ws = make_workspace(root)
    env = env_for(root, _turn(1) + _turn(2) + _turn(3), base=base)
    for n, resume in ((1, ()), (2, ("--continue",))):
        done = ketch(
            "-p",
            f"turn {n}",
            "--provider",
            "scripted",
            "--profile",
            "assisted",
            *resume,
            cwd=ws,
            env=env,
        )
        assert done.returncode == 0, done.stderr
    assert ketch("attest", "--out", "receipt.json", cwd=ws, env=env).returncode == 0
    return ws, env


@pytest.fixture(scope="module")
def two_turns(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """One session of two turns and its receipt (receipt.json), shared: tests only read."""
    root = tmp_path_factory.mktemp("cli")
    base = {k: v for k, v in os.environ.items() if not k.startswith("KETCH_")}
    return _two_turns(root, {**base, **isolated_env(root / "home")})


def test_turns_narrow_the_receipt(two_turns: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    ws, env = two_turns
    second = tmp_path / "second.json"
    done = ketch("attest", "--turns", "2", "--out", str(second), cwd=ws, env=env)
    assert done.returncode == 0, done.stderr
    predicate = statement(second)["predicate"]
    assert [c["turn"] for c in predicate["calls"]] == [2]
    assert predicate["files"]["changed"] == ["t2.txt"]
    assert predicate["session"]["turns"] == {"first": 2, "last": 2}
    assert [r["resumed"] for r in predicate["session"]["runs"]] == [False, True]
    assert (
        predicate["calls"][0]["profile"] == "assisted"
        and predicate["calls"][0]["decidedBy"] == "profile"
    )
    whole = tmp_path / "whole.json"
    assert ketch("attest", "--turns", "1..", "--out", str(whole), cwd=ws, env=env).returncode == 0
    assert [c["turn"] for c in statement(whole)["predicate"]["calls"]] == [1, 2]


def test_a_session_that_went_on_still_verifies(tmp_path: Path) -> None:
    ws, env = _two_turns(tmp_path)
    receipt = tmp_path / "receipt.json"
    assert ketch("attest", "--turns", "1", "--out", str(receipt), cwd=ws, env=env).returncode == 0
    more = ketch(
        "-p",
        "turn 3",
        "--provider",
        "scripted",
        "--profile",
        "assisted",
        "--continue",
        cwd=ws,
        env=env,
    )
    assert more.returncode == 0, more.stderr
    done = ketch("verify", str(receipt), cwd=ws, env=env)
    assert done.returncode == 0, done.stdout
    assert "later entries: the session went on" in done.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["attest", "--turns", "7"], "has turns 1-2"),
        (["attest", "--turns", "2..1"], "turns are numbered from 1, first to last"),
        (["attest", "--turns", "x"], "expected A, A..B"),
        (["attest", "--trailer"], "give --out FILE too"),
        (["attest", "--amend", "--out", "r.json"], "give --trailer too"),
        (["attest", "--key", "pgp:abc"], "expected 'ketch', 'ssh:PATH' or 'git'"),
        (["verify", "missing.json"], "cannot read missing.json"),
        (["verify", "--no-store", "receipt.json"], "no key to verify with"),
        (
            ["verify", "receipt.json", "--policy", "bad-key.toml"],
            "bad-key.toml: sandbox: unknown key",
        ),
        (["verify", "receipt.json", "--policy", "not-toml.toml"], "not-toml.toml: not TOML"),
        (["verify", "receipt.json", "--policy", "future.toml"], "version 2 is not known"),
        (["verify", "receipt.json", "--key", "nowhere.pub"], "--key nowhere.pub: cannot read it"),
    ],
)
def test_usage_errors_exit_2_with_one_line(
    two_turns: tuple[Path, dict[str, str]], tmp_path: Path, args: list[str], message: str
) -> None:
    ws, env = two_turns
    (ws / "bad-key.toml").write_text("sandbox = true\n")
    (ws / "not-toml.toml").write_text("sandboxed = = true\n")
    (ws / "future.toml").write_text("version = 2\n")
    done = ketch(*args, cwd=ws, env=env)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], done.stderr


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"not json", "is not a DSSE envelope: not JSON"),
        (b"[]", "is not a DSSE envelope: not a JSON object"),
        (b'{"payloadType": "x", "payload": "%%%", "signatures": []}', "bad base64"),
        (
            json.dumps(
                {
                    "payloadType": "application/vnd.in-toto+json",
                    "payload": base64.b64encode(b'{"_type": "other"}').decode(),
                    "signatures": [],
                }
            ).encode(),
            "the receipt is not signed",
        ),
    ],
)
def test_a_broken_receipt_fails_with_a_line_saying_what(
    two_turns: tuple[Path, dict[str, str]], content: bytes, message: str
) -> None:
    ws, env = two_turns
    (ws / "broken.json").write_bytes(content)
    done = ketch("verify", "broken.json", cwd=ws, env=env)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert any(
        line.startswith("FAILED: ") and message in line for line in done.stdout.splitlines()
    ), done.stdout


def test_json_output_for_ci(two_turns: tuple[Path, dict[str, str]]) -> None:
    ws, env = two_turns
    done = ketch("verify", "receipt.json", "--json", cwd=ws, env=env)
    assert done.returncode == 0
    report = json.loads(done.stdout)
    assert report["verified"] is True and report["failed"] == [] and len(report["ok"]) >= 3


def test_no_session_to_attest(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    env = env_for(tmp_path)
    done = ketch("attest", cwd=ws, env=env)
    assert done.returncode == 1 and "no saved sessions in" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_subject_behind_a_link_out_of_the_checkout_is_not_read(
    two_turns: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    ws, env = two_turns
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "t1.txt").write_text("1\n")  # the very content the receipt names
    (ws / "via").symlink_to(outside)
    data = json.loads((ws / "receipt.json").read_text())
    stmt = json.loads(base64.b64decode(data["payload"]))
    stmt["subject"][0]["name"] = "via/t1.txt"
    data["payload"] = base64.b64encode(json.dumps(stmt).encode()).decode()
    (ws / "hostile.json").write_text(json.dumps(data))
    try:
        done = ketch("verify", "hostile.json", cwd=ws, env=env)
    finally:
        (ws / "via").unlink()
    assert done.returncode == 1
    assert "FAILED: subject via/t1.txt: the name leaves the repository; not checked" in done.stdout
