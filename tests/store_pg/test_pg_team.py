"""Issue 28: two machines (HOMEs) share one PostgreSQL store through one team key.

A session started on one is continued on the other; four concurrent ``--continue`` runs
from both lose no turn and interleave nothing; a machine that is not a member is
refused with its public key; a removed member is locked out by the rotation that
follows; ``pg_dump`` of the whole database holds none of the canaries put into
prompts, file contents, tool output and titles.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from ketch.testing import call, text
from tests.store_pg.conftest import Machine

PROMPT_CANARY = "KETCHPGPROMPT7f31"
TITLE_CANARY = "KETCHPGTITLE0c9e"
TOOL_CANARY = "KETCHPGTOOLOUT5a2d"
INPUT_CANARY = "KETCHPGTOOLIN88b1"
FILE_CANARY = "KETCHPGFILE2b7c"
ANSWER_CANARY = "KETCHPGANSWER31f0"


def _json(run: subprocess.CompletedProcess[str]) -> dict:
    assert run.returncode == 0, run.stdout + run.stderr
    return json.loads(run.stdout)


def _user_texts(request: dict) -> list[str]:
    texts = []
    for message in request.get("messages", []):
        if message.get("role") == "user":
            for part in message.get("parts", []):
                if part.get("type") == "text":
                    texts.append(part["text"])
    return texts


def _text(message: dict) -> str:
    return "".join(p.get("text", "") for p in message.get("parts", []) if p.get("type") == "text")


def test_a_session_started_on_one_machine_is_continued_on_the_other(
    team: tuple[Machine, Machine], workspace: Path
) -> None:
    a, b = team
    started = _json(
        a.ketch("-p", "plan the migration", "--provider", "scripted", "--output-format", "json",
                cwd=workspace, script=[text("first step: back up")])
    )  # fmt: skip
    session_id = started["session_id"]
    listed = b.ketch("sessions", "list", "--json", cwd=workspace)
    assert [s["id"] for s in json.loads(listed.stdout)] == [session_id], listed.stderr
    went_on = _json(
        b.ketch("-p", "and then?", "--continue", "--output-format", "json",
                cwd=workspace, script=[text("second step: migrate")])
    )  # fmt: skip
    assert went_on["session_id"] == session_id
    # b's model saw a's turn: the transcript came from the server, decrypted with the team key.
    assert _user_texts(b.requests()[-1])[:2] == ["plan the migration", "and then?"]
    resumed = _json(
        a.ketch("-p", "done?", "--resume", session_id[:12], "--output-format", "json",
                cwd=workspace, script=[text("yes")])
    )  # fmt: skip
    assert resumed["session_id"] == session_id
    shown = b.ketch("sessions", "show", session_id, "--json", cwd=workspace)
    assert shown.returncode == 0, shown.stderr
    assert [m["role"] for m in json.loads(shown.stdout)["transcript"]].count("user") == 3
    for machine in (a, b):
        verified = machine.ketch("sessions", "verify", "--all", cwd=workspace)
        assert verified.returncode == 0, verified.stdout + verified.stderr


def test_four_concurrent_continues_from_two_machines_lose_nothing_and_never_interleave(
    team: tuple[Machine, Machine], workspace: Path
) -> None:
    a, b = team
    session_id = _json(
        a.ketch("-p", "start", "--provider", "scripted", "--output-format", "json",
                cwd=workspace, script=[text("started")])
    )["session_id"]  # fmt: skip
    runs = []
    for number, machine in enumerate((a, b, a, b)):
        script = [
            call("pause", {"seconds": 0.6, "text": f"run {number}"}),
            text(f"answer {number}"),
        ]
        runs.append(machine.popen("-p", f"prompt {number}", "--continue", "--output-format", "json",
                                  cwd=workspace, script=script))  # fmt: skip
    for run in runs:
        out, err = run.communicate(timeout=180)
        assert run.returncode == 0, err
        assert json.loads(out)["session_id"] == session_id, err  # none forked
    shown = json.loads(a.ketch("sessions", "show", session_id, "--json", cwd=workspace).stdout)
    roles = [(m["role"], _text(m)) for m in shown["transcript"]]
    prompts = [t for r, t in roles if r == "user"]
    assert sorted(prompts[1:]) == [f"prompt {n}" for n in range(4)]
    # Each turn whole and in order: user, assistant (call), tool, assistant (answer).
    turns = [roles[i : i + 4] for i in range(2, len(roles), 4)]
    assert len(turns) == 4
    for turn in turns:
        number = turn[0][1].removeprefix("prompt ")
        assert [r for r, _ in turn] == ["user", "assistant", "tool", "assistant"], turn
        assert turn[3][1] == f"answer {number}", turns
    verified = b.ketch("sessions", "verify", "--all", cwd=workspace)
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_a_stranger_is_refused_with_its_key_and_a_removed_member_is_locked_out(
    team: tuple[Machine, Machine], workspace: Path, tmp_path: Path
) -> None:
    a, b = team
    session_id = _json(
        a.ketch("-p", "secret plan", "--provider", "scripted", "--output-format", "json",
                cwd=workspace, script=[text("ok")])
    )["session_id"]  # fmt: skip
    stranger = Machine(tmp_path / "home-c", a.url, "carol")
    refused = stranger.ketch("sessions", "list", cwd=workspace)
    assert refused.returncode == 1 and "not a member" in refused.stderr, refused.stderr
    assert stranger.public_key(workspace) in refused.stderr
    listed = a.ketch("store", "key", "members", "list", cwd=workspace)
    assert "bob" in listed.stdout and "(you)" in listed.stdout
    removed = a.ketch("store", "key", "members", "remove", "bob", cwd=workspace)
    assert removed.returncode == 0, removed.stderr
    assert "rotated" in removed.stdout
    locked = b.ketch("-p", "more", "--continue", cwd=workspace, script=[text("never")])
    assert locked.returncode == 1 and "not a member" in locked.stderr, locked.stderr
    assert b.requests() == []  # nothing of the transcript reached b's model
    still = a.ketch("-p", "still here?", "--resume", session_id, "--output-format", "json",
                    cwd=workspace, script=[text("yes")])  # fmt: skip
    assert _json(still)["session_id"] == session_id
    verified = a.ketch("sessions", "verify", "--all", cwd=workspace)
    assert verified.returncode == 0, verified.stdout + verified.stderr


def _pg_dump(url: str) -> bytes:
    from ketch_store_pg.connection import parse_url

    target = parse_url(url)
    bindir = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_dump"))
    program = str(bindir[-1]) if bindir else "pg_dump"
    dumped = subprocess.run(
        [program, "-h", target.host, "-p", str(target.port), "-U", target.user, target.database],
        capture_output=True,
        timeout=60,
    )
    assert dumped.returncode == 0, dumped.stderr
    return dumped.stdout


def test_pg_dump_holds_no_plaintext(team: tuple[Machine, Machine], workspace: Path) -> None:
    a, b = team
    (workspace / "notes.txt").write_text(f"the file says {FILE_CANARY}\n")
    script = [
        call("read_file", {"path": "notes.txt"}),
        call("note", {"text": f"{INPUT_CANARY} as tool input"}),
        text(f"the answer is {ANSWER_CANARY}"),
    ]
    plugins = a.env()["KETCH_PLUGINS"] + ",fs,policy"
    run = a.ketch("-p", f"{TITLE_CANARY} then {PROMPT_CANARY}", "--provider", "scripted", "--allow", "note",
                  "--output-format", "json", cwd=workspace, script=script,
                  STORE_TEST_TOOL_OUTPUT=TOOL_CANARY, KETCH_PLUGINS=plugins)  # fmt: skip
    session_id = _json(run)["session_id"]
    shown = b.ketch("sessions", "export", session_id, "--format", "json", cwd=workspace)
    assert FILE_CANARY in shown.stdout and TOOL_CANARY in shown.stdout  # they were stored (sealed)
    renamed = b.ketch("sessions", "rename", session_id, f"named {TITLE_CANARY}", cwd=workspace)
    assert renamed.returncode == 0, renamed.stderr
    dump = _pg_dump(a.url)
    assert session_id.encode() in dump  # the dump is of the right database
    for canary in (
        PROMPT_CANARY,
        TITLE_CANARY,
        FILE_CANARY,
        TOOL_CANARY,
        INPUT_CANARY,
        ANSWER_CANARY,
        str(workspace),
    ):
        assert canary.encode() not in dump, canary
    assert b"bob" not in dump and b"alice" not in dump  # member names are sealed too
