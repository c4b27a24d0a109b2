"""``ketch sessions ...``, ``--continue`` and ``--resume`` as subprocesses, on a real store."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from ketch.testing import call, text
from tests.store.conftest import cli_env, logged_requests, run_ketch


def _turn(
    tmp_path: Path, cwd: Path, prompt: str, script: list[dict[str, Any]], *extra: str
) -> dict[str, Any]:
    env = cli_env(tmp_path, script)
    proc = run_ketch(
        "-p", prompt, "--provider", "scripted", "--output-format", "json", *extra, cwd=cwd, env=env
    )
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    return json.loads(proc.stdout)


def _sessions(tmp_path: Path, cwd: Path, *args: str) -> Any:
    return run_ketch("sessions", *args, cwd=cwd, env=cli_env(tmp_path))


@pytest.fixture
def workspaces(tmp_path: Path) -> tuple[Path, Path]:
    a, b = tmp_path / "alpha", tmp_path / "beta"
    a.mkdir()
    b.mkdir()
    return a, b


def test_list_show_export_rename_delete(tmp_path: Path, workspaces: tuple[Path, Path]) -> None:
    a, b = workspaces
    first = _turn(
        tmp_path,
        a,
        "fix the parser",
        [call("note", {"text": "parser notes"}), text("parser fixed")],
    )
    second = _turn(tmp_path, a, "write the docs", [text("docs written")])
    other = _turn(tmp_path, b, "elsewhere work", [text("done elsewhere")])

    listing = _sessions(tmp_path, a, "list")
    assert listing.returncode == 0, listing.stderr
    assert first["session_id"] in listing.stdout and second["session_id"] in listing.stdout
    assert other["session_id"] not in listing.stdout
    assert "fix the parser" in listing.stdout
    assert listing.stdout.index(second["session_id"]) < listing.stdout.index(
        first["session_id"]
    )  # newest first

    everything = _sessions(tmp_path, a, "list", "--all", "--json")
    rows = json.loads(everything.stdout)
    assert {r["id"] for r in rows} == {
        first["session_id"],
        second["session_id"],
        other["session_id"],
    }
    assert {r["workspace"] for r in rows} == {str(a.resolve()), str(b.resolve())}

    show = _sessions(tmp_path, a, "show", first["session_id"][:10])
    assert show.returncode == 0, show.stderr
    for expected in (
        "fix the parser",
        "parser fixed",
        "note",
        "noted: parser notes",
        "succeeded",
        "── operations ──",
    ):
        assert expected in show.stdout
    data = json.loads(_sessions(tmp_path, a, "show", first["session_id"], "--json").stdout)
    assert [m["role"] for m in data["transcript"]] == ["user", "assistant", "tool", "assistant"]
    assert data["operations"][0]["status"] == "succeeded" and data["unknown_outcomes"] == []
    assert data["usage"]["input_tokens"] == 20

    md = _sessions(tmp_path, a, "export", first["session_id"], "--format", "md")
    assert md.returncode == 0 and md.stdout.startswith("# fix the parser")
    assert "## User" in md.stdout and "**→ note**" in md.stdout
    exported = json.loads(
        _sessions(tmp_path, a, "export", first["session_id"], "--format", "json").stdout
    )
    assert exported["id"] == first["session_id"] and len(exported["transcript"]) == 4
    target = tmp_path / "export.md"
    written = _sessions(tmp_path, a, "export", first["session_id"], "-o", str(target))
    assert written.returncode == 0 and target.read_text().startswith("# fix the parser")
    assert stat.S_IMODE(target.stat().st_mode) == 0o600

    renamed = _sessions(tmp_path, a, "rename", first["session_id"], "parser", "work")
    assert renamed.returncode == 0, renamed.stderr
    assert "parser work" in _sessions(tmp_path, a, "list").stdout

    deleted = _sessions(tmp_path, a, "delete", second["session_id"])
    assert deleted.returncode == 0 and second["session_id"] in deleted.stdout
    assert second["session_id"] not in _sessions(tmp_path, a, "list").stdout
    gone = _sessions(tmp_path, a, "show", second["session_id"])
    assert gone.returncode == 1 and gone.stderr.startswith("ketch: no session")
    assert "Traceback" not in gone.stderr and len(gone.stderr.strip().splitlines()) == 1

    empty = _sessions(tmp_path, tmp_path, "list")
    assert empty.returncode == 0 and "no saved sessions" in empty.stdout
    usage = _sessions(tmp_path, a, "show")
    assert usage.returncode == 2 and "Traceback" not in usage.stderr


def test_continue_and_resume_bring_back_the_transcript(
    tmp_path: Path, workspaces: tuple[Path, Path]
) -> None:
    a, b = workspaces
    first = _turn(tmp_path, a, "my name is Ada", [text("hello Ada")])
    log = tmp_path / "requests.jsonl"
    log.unlink()
    second = _turn(tmp_path, a, "what is my name?", [text("Ada")], "--continue")
    assert second["session_id"] == first["session_id"]
    sent = logged_requests(tmp_path)[0]["messages"]
    texts = [part.get("text") for message in sent for part in message["parts"]]
    assert texts == ["my name is Ada", "hello Ada", "what is my name?"]

    third = _turn(tmp_path, a, "and again", [text("still Ada")], "--resume", first["session_id"])
    assert third["session_id"] == first["session_id"]
    shown = json.loads(_sessions(tmp_path, a, "show", first["session_id"], "--json").stdout)
    assert [m["role"] for m in shown["transcript"]] == ["user", "assistant"] * 3

    elsewhere = run_ketch(
        "-p",
        "hi",
        "--provider",
        "scripted",
        "--resume",
        first["session_id"],
        cwd=b,
        env=cli_env(tmp_path, [text("x")]),
    )
    assert elsewhere.returncode == 1 and "never rebound silently" in elsewhere.stderr
    nothing = run_ketch(
        "-p",
        "hi",
        "--provider",
        "scripted",
        "--continue",
        cwd=b,
        env=cli_env(tmp_path, [text("x")]),
    )
    assert nothing.returncode == 1 and "no earlier session" in nothing.stderr


def test_recovery_locked_from_the_command_line(
    tmp_path: Path, workspaces: tuple[Path, Path]
) -> None:
    a, _ = workspaces
    _turn(tmp_path, a, "remember me", [text("ok")])
    db = Path(os.environ["KETCH_STATE_DIR"]) / "sessions.db"
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    (tmp_path / "keyring.json").write_text("{}")  # the key is gone
    listing = _sessions(tmp_path, a, "list")
    assert listing.returncode == 1
    assert listing.stderr.startswith("ketch: recovery-locked") and "Traceback" not in listing.stderr
    resumed = run_ketch(
        "-p",
        "again",
        "--provider",
        "scripted",
        "--continue",
        cwd=a,
        env=cli_env(tmp_path, [text("x")]),
    )
    assert resumed.returncode == 1 and "recovery-locked" in resumed.stderr
    # A new headless turn: the store opens while the model is asked, so the answer comes,
    # but the run fails and says so: its work would silently not be kept.
    requests_before = len(logged_requests(tmp_path))
    fresh = run_ketch(
        "-p", "new work", "--provider", "scripted", cwd=a, env=cli_env(tmp_path, [text("answer")])
    )
    assert fresh.returncode == 1 and fresh.stdout == "answer\n"
    assert fresh.stderr.startswith("ketch: recovery-locked") and "--no-save" in fresh.stderr
    assert "this run was not saved" in fresh.stderr
    assert len(fresh.stderr.strip().splitlines()) == 1 and "Traceback" not in fresh.stderr
    assert len(logged_requests(tmp_path)) == requests_before + 1
    # --no-save: the user chose to run unsaved; it runs, says so once, and writes nothing.
    unsaved = run_ketch(
        "-p",
        "new work",
        "--provider",
        "scripted",
        "--no-save",
        cwd=a,
        env=cli_env(tmp_path, [text("answer")]),
    )
    assert unsaved.returncode == 0 and unsaved.stdout.strip() == "answer", unsaved.stderr
    assert unsaved.stderr.count("not being saved") == 1 and "recovery-locked" not in unsaved.stderr
    assert len(logged_requests(tmp_path)) == requests_before + 2
    assert json.loads((tmp_path / "keyring.json").read_text()) == {}  # no key was minted
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before


def test_plaintext_mode_is_explicit_and_shown(
    tmp_path: Path, workspaces: tuple[Path, Path]
) -> None:
    a, _ = workspaces
    config = Path(os.environ["KETCH_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    disabled = run_ketch(
        "-p",
        "x",
        "--provider",
        "scripted",
        "--no-plugin",
        "crypto",
        cwd=a,
        env=cli_env(tmp_path, [text("y")]),
    )
    assert disabled.returncode == 0 and "refusing to store sessions in plaintext" in disabled.stderr
    (config / "config.toml").write_text('[storage]\nencryption = "off"\n')
    plain = run_ketch(
        "-p", "x", "--provider", "scripted", cwd=a, env=cli_env(tmp_path, [text("y")])
    )
    assert plain.returncode == 0 and "saved unencrypted" in plain.stderr
    listing = _sessions(tmp_path, a, "list")
    assert listing.returncode == 0 and "not encrypted" in listing.stderr


def test_show_reports_unknown_outcomes(tmp_path: Path, workspaces: tuple[Path, Path]) -> None:
    """A session whose process died while a tool ran: show and --continue both say so."""
    import keyring

    from ketch.events import MessageEvent, ToolStartedEvent
    from ketch.kernel import Kernel
    from ketch.messages import Message
    from ketch.testing.keyring_backend import FileKeyring
    from ketch.testing.scripted import ScriptedProvider

    a, _ = workspaces
    os.environ["KETCH_TEST_KEYRING_FILE"] = str(
        tmp_path / "keyring.json"
    )  # restored by the autouse env fixture
    keyring.set_keyring(FileKeyring())
    kernel = Kernel.boot(
        workspace=a, autoload=True, environ={**os.environ, "KETCH_PLUGINS": "guards,store,crypto"}
    )
    session = kernel.new_session(provider=ScriptedProvider([]))
    user = Message.user("delete the build dir")
    assistant = Message(
        role="assistant",
        parts=(
            {
                "type": "tool_call",
                "id": "call_rm",
                "name": "shell",
                "input": {"command": "rm -rf build"},
            },
        ),
    )
    for message in (user, assistant):
        session.append(message)
        kernel.emit(session, MessageEvent(message=message))
    kernel.emit(
        session,
        ToolStartedEvent(tool_call_id="call_rm", name="shell", input={"command": "rm -rf build"}),
    )
    kernel.store.close()  # type: ignore[union-attr]  # "killed" mid-call

    show = _sessions(tmp_path, a, "show", session.id)
    assert show.returncode == 0, show.stderr
    assert "unknown_outcome" in show.stdout and "outcome unknown" in show.stdout
    data = json.loads(_sessions(tmp_path, a, "show", session.id, "--json").stdout)
    assert data["unknown_outcomes"][0]["tool_call_id"] == "call_rm"
    assert data["unknown_outcomes"][0]["input"] == {"command": "rm -rf build"}
    cont = _turn(tmp_path, a, "did it work?", [text("let me check")], "--continue")
    assert cont["session_id"] == session.id
    sent = logged_requests(tmp_path)[-1]["messages"]
    outputs = [part.get("output", "") for message in sent for part in message["parts"]]
    assert any("outcome of this call is unknown" in o for o in outputs)


def test_a_session_name_works_for_show_and_resume(
    tmp_path: Path, workspaces: tuple[Path, Path]
) -> None:
    # Issue 26 item 7: a name given with /rename (or `sessions rename`) worked for
    # /resume only; `ketch sessions show NAME` and `ketch --resume NAME` said "no session".
    a, _ = workspaces
    first = _turn(tmp_path, a, "fix the parser", [text("parser fixed")])
    assert _sessions(tmp_path, a, "rename", first["session_id"], "parser work").returncode == 0
    show = _sessions(tmp_path, a, "show", "parser work")
    assert show.returncode == 0, show.stderr
    assert "parser fixed" in show.stdout
    again = _turn(tmp_path, a, "and now?", [text("still here")], "--resume", "Parser Work")
    assert again["session_id"] == first["session_id"]
    missing = _sessions(tmp_path, a, "show", "no such name")
    assert missing.returncode == 1 and missing.stderr.startswith("ketch: no session")


def test_no_save_refuses_to_resume(tmp_path: Path, workspaces: tuple[Path, Path]) -> None:
    """--no-save with --continue/--resume: one line, exit 2, and no store is opened."""
    a, _ = workspaces
    _turn(tmp_path, a, "my name is Ada", [text("Hello Ada")])
    env = cli_env(tmp_path, [text("never sent")])
    before = _sessions(tmp_path, a, "list", "--json").stdout
    for resume in (("--continue",), ("--resume", "ses_missing")):
        proc = run_ketch("-p", "hi", "--provider", "scripted", "--no-save", *resume, cwd=a, env=env)
        assert proc.returncode == 2, proc.stderr
        assert "--no-save opens no session store, so there is nothing to resume" in proc.stderr
        assert "Traceback" not in proc.stderr
    assert len(logged_requests(tmp_path)) == 1  # only the first turn reached the model
    assert _sessions(tmp_path, a, "list", "--json").stdout == before
