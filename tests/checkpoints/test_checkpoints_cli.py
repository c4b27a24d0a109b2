"""Checkpoints through the real CLI: a turn changes four files with write_file, edit_file
and a shell command (rm, sed -i); ``ketch sessions undo`` brings all four back byte for
byte with their mode bits, ``redo`` puts the turn's state back, a file the person edited
in between is listed and left alone, and ``rewind --conversation`` leaves turns out of
the next request while ``sessions export`` still shows them, marked rewound."""

from __future__ import annotations

import json
from pathlib import Path

from tests.checkpoints.kit import (
    ORIGINAL,
    acceptance_script,
    dirs_of,
    env_for,
    files_of,
    git_state,
    headless,
    ketch,
    make_workspace,
    requests,
    turn,
    user_texts,
)


def _after_turn(
    tmp_path: Path,
) -> tuple[Path, dict[str, str], dict[str, tuple[bytes, int]], dict[str, tuple[bytes, int]], str]:
    ws = make_workspace(tmp_path)
    before = files_of(ws)
    env = env_for(tmp_path, acceptance_script())
    result = turn("change four files", cwd=ws, env=env)
    after = files_of(ws)
    return ws, env, before, after, result["session_id"]


def test_undo_restores_all_four_files_byte_for_byte_with_mode_bits(tmp_path: Path) -> None:
    ws, env, before, after, session_id = _after_turn(tmp_path)
    git_before = git_state(ws)
    # The turn did what it says: one overwritten, one edited, one deleted, one sed'ed.
    assert after["notes.md"][0].startswith(
        b"rewritten by the model"
    )  # (write_file keeps the CRLF endings)
    assert after["src/config.py"][0].startswith(b"DEBUG = True")
    assert "old.log" not in after
    assert after["tool.sh"] == (b"#!/bin/sh\necho gamma\n", 0o755)

    undo = ketch("sessions", "undo", "--json", cwd=ws, env=env)
    assert undo.returncode == 0, undo.stderr
    report = json.loads(undo.stdout)
    assert report["session_id"] == session_id and report["turn"] == 1 and report["ok"]
    assert {r["path"]: r["change"] for r in report["restored"]} == {
        "notes.md": "rewritten",
        "src/config.py": "rewritten",
        "old.log": "recreated",
        "tool.sh": "rewritten",
    }
    assert report["conflicts"] == []
    assert files_of(ws) == before  # every byte, every mode bit
    for rel, (data, mode) in ORIGINAL.items():
        assert (ws / rel).read_bytes() == data and (ws / rel).stat().st_mode & 0o7777 == mode, rel
    assert git_state(ws) == git_before  # nothing written under .git

    redo = ketch("sessions", "redo", "--json", cwd=ws, env=env)
    assert redo.returncode == 0, redo.stderr
    assert json.loads(redo.stdout)["ok"]
    assert files_of(ws) == after
    assert git_state(ws) == git_before


def test_a_file_the_person_edited_is_listed_and_left_alone(tmp_path: Path) -> None:
    ws, env, before, after, _ = _after_turn(tmp_path)
    (ws / "tool.sh").write_bytes(
        b"#!/bin/sh\necho my own change\n"
    )  # the person's edit after the turn
    mine = files_of(ws)

    stopped = ketch("sessions", "undo", cwd=ws, env=env)
    assert stopped.returncode == 1
    assert (
        "tool.sh" in stopped.stdout
        and "changed since ketch's turn" in stopped.stdout
        and "--force" in stopped.stdout
    )
    assert "Traceback" not in stopped.stderr
    assert files_of(ws) == mine  # it stopped: nothing at all was changed

    kept = ketch("sessions", "undo", "--keep-changed", "--json", cwd=ws, env=env)
    assert kept.returncode == 0, kept.stderr
    report = json.loads(kept.stdout)
    assert [k["path"] for k in report["kept"]] == ["tool.sh"]
    assert sorted(r["path"] for r in report["restored"]) == ["notes.md", "old.log", "src/config.py"]
    now = files_of(ws)
    assert now["tool.sh"] == (b"#!/bin/sh\necho my own change\n", 0o755)  # left alone
    assert {k: v for k, v in now.items() if k != "tool.sh"} == {
        k: v for k, v in before.items() if k != "tool.sh"
    }


def test_force_overwrites_what_the_person_changed(tmp_path: Path) -> None:
    ws, env, before, _, _ = _after_turn(tmp_path)
    (ws / "notes.md").write_text("my edit\n")
    forced = ketch("sessions", "undo", "--force", "--json", cwd=ws, env=env)
    assert forced.returncode == 0, forced.stderr
    assert files_of(ws) == before


def test_rewind_conversation_leaves_later_turns_out_of_the_next_request(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    script = [{"text": f"answer {n}"} for n in range(1, 5)] + [{"text": "answer 5"}]
    env = env_for(tmp_path, script)
    session_id = turn("prompt one", cwd=ws, env=env)["session_id"]
    for n in (2, 3, 4):
        assert (
            turn(
                f"prompt {['', '', 'two', 'three', 'four'][n]}",
                cwd=ws,
                env=env,
                more=("--continue",),
            )["session_id"]
            == session_id
        )

    shown = ketch("sessions", "show", session_id, cwd=ws, env=env)
    assert [line for line in shown.stdout.splitlines() if line.startswith("── turn")] == [
        f"── turn {n} ──" for n in range(1, 5)
    ]

    rewound = ketch(
        "sessions", "rewind", session_id, "3", "--conversation", "--json", cwd=ws, env=env
    )
    assert rewound.returncode == 0, rewound.stderr
    report = json.loads(rewound.stdout)
    assert (
        report["ok"]
        and report["code"] is None
        and report["conversation"]["rewound_turns"] == [3, 4]
    )
    assert report["prompt"] == "prompt three"

    turn("prompt five", cwd=ws, env=env, more=("--continue",))
    last = requests(tmp_path)[-1]
    assert user_texts(last) == ["prompt one", "prompt two", "prompt five"]
    assistant = [
        "".join(p.get("text", "") for p in m["parts"])
        for m in last["messages"]
        if m["role"] == "assistant"
    ]
    assert assistant == ["answer 1", "answer 2"]

    exported = ketch("sessions", "export", session_id, "--format", "json", cwd=ws, env=env)
    data = json.loads(exported.stdout)
    assert [(t["n"], t["prompt"], t["rewound"]) for t in data["turns"]] == [
        (1, "prompt one", False),
        (2, "prompt two", False),
        (3, "prompt three", True),
        (4, "prompt four", True),
        (5, "prompt five", False),
    ]
    texts = [m["parts"][0].get("text") for m in data["transcript"]]
    assert "answer 3" in texts and "answer 4" in texts  # the transcript stays complete
    markdown = ketch("sessions", "export", session_id, cwd=ws, env=env).stdout
    assert (
        "## Turn 3 · rewound" in markdown
        and "## Turn 4 · rewound" in markdown
        and "## Turn 5\n" in markdown
    )

    again = ketch("sessions", "rewind", session_id, "4", "--conversation", cwd=ws, env=env)
    assert again.returncode == 2 and "rewound already" in again.stderr


def test_rewind_code_and_conversation_reverts_later_turns_only(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    script = [
        {
            "tool_calls": [
                {"name": "write_file", "input": {"path": "a.txt", "content": "turn one\n"}}
            ]
        },
        {"text": "one"},
        {
            "tool_calls": [
                {
                    "name": "shell",
                    "input": {
                        "command": "mkdir -p gen/deep && echo two > gen/deep/b.txt && mv README.md README.old"
                    },
                }
            ]
        },
        {"text": "two"},
        {
            "tool_calls": [
                {"name": "write_file", "input": {"path": "a.txt", "content": "turn three\n"}}
            ]
        },
        {"text": "three"},
    ]
    env = env_for(tmp_path, script)
    session_id = turn("one", cwd=ws, env=env)["session_id"]
    after_one, dirs_after_one = files_of(ws), dirs_of(ws)
    turn("two", cwd=ws, env=env, more=("--continue",))
    turn("three", cwd=ws, env=env, more=("--continue",))
    assert (ws / "gen" / "deep" / "b.txt").exists() and not (ws / "README.md").exists()

    listed = json.loads(ketch("sessions", "turns", session_id, "--json", cwd=ws, env=env).stdout)[
        "turns"
    ]
    assert [(t["n"], sorted(t["files_changed"])) for t in listed] == [
        (1, ["a.txt"]),
        (2, ["README.md", "README.old", "gen/deep/b.txt"]),
        (3, ["a.txt"]),
    ]

    result = ketch("sessions", "rewind", session_id, "2", "--json", cwd=ws, env=env)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["code"]["turns"] == [2, 3] and report["conversation"]["rewound_turns"] == [2, 3]
    assert (
        files_of(ws) == after_one
    )  # turn one's file stays; turns two and three are gone, mv included
    assert (
        dirs_of(ws) == dirs_after_one
    )  # the directories turn two made are gone too (they were left empty)


def test_what_another_session_changed_at_the_same_time_is_left_alone(tmp_path: Path) -> None:
    """Two sessions in one workspace; the second writes while the first one's call runs.
    Undoing the first must not take the second's change with it (OpenCode #13558)."""
    import subprocess
    import sys
    import time

    ws = make_workspace(tmp_path)
    (ws / "shared.txt").write_text("start\n")
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    env_a = env_for(
        tmp_path / "a",
        [
            {
                "tool_calls": [
                    {
                        "name": "shell",
                        "input": {
                            "command": "echo A >> shared.txt; echo a > a.txt; while [ ! -e b.done ]; do sleep 0.05; done"
                        },
                    }
                ]
            },
            {"text": "a done"},
        ],
    )
    env_b = env_for(
        tmp_path / "b",
        [
            {
                "tool_calls": [
                    {"name": "shell", "input": {"command": "echo B >> shared.txt; touch b.done"}}
                ]
            },
            {"text": "b done"},
        ],
    )
    for env in (env_a, env_b):
        env["KETCH_TEST_KEYRING_FILE"] = str(tmp_path / "keyring.json")  # one store, one key
    first = subprocess.Popen(
        [sys.executable, "-m", "ketch", *headless("a")],
        cwd=ws,
        env=env_a,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while "A" not in (ws / "shared.txt").read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    turn("b", cwd=ws, env=env_b)
    out, err = first.communicate(timeout=60)
    assert first.returncode == 0, err
    session_a = json.loads(out)["session_id"]
    assert (ws / "shared.txt").read_text() == "start\nA\nB\n"

    undo = ketch("sessions", "undo", session_a, "--keep-changed", "--json", cwd=ws, env=env_a)
    assert undo.returncode == 0, undo.stderr
    report = json.loads(undo.stdout)
    assert [r["path"] for r in report["restored"]] == ["a.txt"]
    kept = {k["path"]: k["reason"] for k in report["kept"]}
    assert set(kept) == {"shared.txt", "b.done"} and all(
        "also changed by ketch session" in r for r in kept.values()
    )
    assert (
        (ws / "shared.txt").read_text() == "start\nA\nB\n"
        and (ws / "b.done").exists()
        and not (ws / "a.txt").exists()
    )


def test_a_key_rotation_re_seals_the_checkpoints_and_undo_still_works(tmp_path: Path) -> None:
    """Checkpoint blobs are sealed fields like any other: ``ketch store key rotate``
    re-encrypts them in its transaction, ``sessions verify`` finds every one opening
    under the new key, and an undo after the rotation restores the files."""
    ws, env, before, after, session_id = _after_turn(tmp_path)
    rotated = ketch("store", "key", "rotate", cwd=ws, env=env)
    assert rotated.returncode == 0, rotated.stderr + rotated.stdout
    verified = ketch("sessions", "verify", "--all", cwd=ws, env=env)
    assert verified.returncode == 0, (
        verified.stdout + verified.stderr
    )  # blobs included (verify_store)
    undo = ketch("sessions", "undo", "--json", cwd=ws, env=env)
    assert undo.returncode == 0, undo.stderr
    assert json.loads(undo.stdout)["ok"] and files_of(ws) == before
