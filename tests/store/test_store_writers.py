"""One writer per session: concurrent ``--continue`` runs wait their turn (or, past
``[storage] writer_wait``, fork), and never interleave one transcript."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from ketch.testing import call, text
from tests.store.conftest import cli_env, run_ketch


def start(
    tmp_path: Path, workspace: Path, n: int, *args: str, delay: float = 0.4
) -> subprocess.Popen[str]:
    """A ``ketch -p --continue`` whose turn takes a while (a tool call, then a slow answer)."""
    scratch = tmp_path / f"run{n}"
    scratch.mkdir()
    env = cli_env(
        scratch,
        [call("note", {"text": f"work {n}"}, id=f"call_{n}"), text(f"answer {n}", delay=delay)],
    )
    env["KETCH_TEST_KEYRING_FILE"] = str(tmp_path / "keyring.json")
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ketch",
            "-p",
            f"prompt {n}",
            "--provider",
            "scripted",
            "--continue",
            "--output-format",
            "stream-json",
            *args,
        ],
        cwd=workspace,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def holding(holder: subprocess.Popen[str], session_id: str) -> None:
    """Wait until ``holder`` has taken the session's writer lock (the file names its pid)."""
    lock = Path(os.environ["KETCH_STATE_DIR"]) / "writers" / f"{session_id}.lock"
    deadline = time.monotonic() + 30
    while not (lock.exists() and lock.read_text().strip() == str(holder.pid)):
        assert time.monotonic() < deadline and holder.poll() is None, (
            "the first writer never took the session"
        )
        time.sleep(0.05)


def events(out: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def session_of(out: str) -> str:
    return str(next(e["session_id"] for e in events(out) if e["type"] == "session"))


def notices(out: str) -> str:
    return "\n".join(str(e["message"]) for e in events(out) if e["type"] == "notice")


def transcript(tmp_path: Path, workspace: Path, session_id: str) -> list[tuple[str, str]]:
    shown = run_ketch(
        "sessions", "show", session_id, "--json", cwd=workspace, env=cli_env(tmp_path)
    )
    assert shown.returncode == 0, shown.stderr
    out = []
    for message in json.loads(shown.stdout)["transcript"]:
        for part in message["parts"]:
            value = (
                part.get("text") or part.get("input", {}).get("text") or part.get("output") or ""
            )
            out.append((message["role"], value))
    return out


def turns(rows: list[tuple[str, str]]) -> list[list[tuple[str, str]]]:
    """Split a transcript at each user prompt."""
    found: list[list[tuple[str, str]]] = []
    for row in rows:
        if row[0] == "user":
            found.append([])
        found[-1].append(row)
    return found


def well_formed(turn: list[tuple[str, str]], n: int) -> bool:
    return turn == [
        ("user", f"prompt {n}"),
        ("assistant", f"work {n}"),
        ("tool", f"noted: work {n}"),
        ("assistant", f"answer {n}"),
    ]


def test_four_concurrent_continues_wait_their_turn(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    first = run_ketch(
        "-p",
        "prompt 0",
        "--provider",
        "scripted",
        "--output-format",
        "json",
        cwd=workspace,
        env=cli_env(tmp_path, [call("note", {"text": "work 0"}, id="call_0"), text("answer 0")]),
    )
    assert first.returncode == 0, first.stderr
    session_id = json.loads(first.stdout)["session_id"]
    runs = [start(tmp_path, workspace, n) for n in range(1, 5)]
    results = [(proc.wait(timeout=120), proc.stdout.read(), proc.stderr.read()) for proc in runs]  # type: ignore[union-attr]
    for code, out, err in results:
        assert code == 0 and "Traceback" not in err, err
        assert session_of(out) == session_id  # all four continued the same session
    waited = [err for _, _, err in results if "is being written by another ketch" in err]
    assert len(waited) >= 1, [r[2] for r in results]  # the notice while waiting
    assert all("waiting up to 60s" in err for err in waited)
    assert any(
        "waited" in notices(out) for _, out, _ in results
    )  # and, in the event stream, for how long

    rows = transcript(tmp_path, workspace, session_id)
    split = turns(rows)
    assert len(split) == 5  # the first turn and all four: no turn lost
    order = [int(turn[0][1].split()[1]) for turn in split]
    assert order[0] == 0 and sorted(order) == [0, 1, 2, 3, 4]
    for turn, n in zip(split, order, strict=True):
        assert well_formed(turn, n), turn  # no interleaving: each turn whole, in one piece
    # Each run sent the model the whole history before it, its own prompt last.
    for n in range(1, 5):
        sent = [
            json.loads(line)
            for line in (tmp_path / f"run{n}" / "requests.jsonl").read_text().splitlines()
        ][0]["messages"]
        earlier = [m for m in sent if m["role"] == "user"]
        assert [m["parts"][0]["text"] for m in earlier][-1] == f"prompt {n}"
        assert len(earlier) == order.index(n) + 1


def test_past_writer_wait_the_second_writer_forks(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    config = Path(os.environ["KETCH_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    (config / "config.toml").write_text("[storage]\nwriter_wait = 0\n")
    first = run_ketch(
        "-p",
        "prompt 0",
        "--provider",
        "scripted",
        "--output-format",
        "json",
        cwd=workspace,
        env=cli_env(tmp_path, [call("note", {"text": "work 0"}, id="call_0"), text("answer 0")]),
    )
    original = json.loads(first.stdout)["session_id"]
    holder = start(tmp_path, workspace, 1, delay=4)
    # Wait until the first one holds the session (its lock file names its pid).
    holding(holder, original)
    second = start(tmp_path, workspace, 2)
    results = [(p.wait(timeout=120), p.stdout.read(), p.stderr.read()) for p in (holder, second)]  # type: ignore[union-attr]
    assert [code for code, _, _ in results] == [0, 0], [err for _, _, err in results]
    ids = [session_of(out) for _, out, _ in results]
    assert ids[0] == original and ids[1] != original
    said = notices(results[1][1])
    assert f"session {original} is still being written by another ketch (pid {holder.pid})" in said
    assert f"continuing in a new session {ids[1]}, forked from its history" in said
    original_turns = turns(transcript(tmp_path, workspace, original))
    fork_turns = turns(transcript(tmp_path, workspace, ids[1]))
    assert [t[0][1] for t in original_turns] == ["prompt 0", "prompt 1"]
    assert [t[0][1] for t in fork_turns] == ["prompt 0", "prompt 2"]
    assert all(well_formed(t, n) for t, n in zip(original_turns, (0, 1), strict=True))
    assert all(well_formed(t, n) for t, n in zip(fork_turns, (0, 2), strict=True))
    verify = run_ketch("sessions", "verify", "--all", cwd=workspace, env=cli_env(tmp_path))
    assert verify.returncode == 0, verify.stdout


def test_a_session_open_elsewhere_is_not_deleted(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    first = run_ketch(
        "-p",
        "prompt 0",
        "--provider",
        "scripted",
        "--output-format",
        "json",
        cwd=workspace,
        env=cli_env(tmp_path, [text("answer 0")]),
    )
    original = json.loads(first.stdout)["session_id"]
    holder = start(tmp_path, workspace, 1, delay=4)
    holding(holder, original)
    refused = run_ketch("sessions", "delete", original, cwd=workspace, env=cli_env(tmp_path))
    assert holder.wait(timeout=60) == 0
    assert (
        refused.returncode == 1
        and f"session {original} is open in another ketch (pid {holder.pid}); close it first"
        in refused.stderr
    )
    assert (
        run_ketch("sessions", "delete", original, cwd=workspace, env=cli_env(tmp_path)).returncode
        == 0
    )
