"""``ketch -p``'s first request sent at launch, against a real server, as a real process.

Each run is the console script's ``main`` in a subprocess (``launch_probe.py`` notes
which thread connected to the model server and whether pydantic was loaded then), in
one home and one workspace, against the OpenAI-compatible stub on 127.0.0.1. The first
run writes the record, the second confirms it (the same request twice), the third
sends its request at launch. Judged by effects: what the server received (once per
run, each run's own prompt, never a blocked one, never at an old address) and what
ketch printed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.platform.openai_stub import Answer, OpenAIStub

from .kit import EARLY_THREAD, Starts

KEY = "sk-test-early-not-a-key"
MAIN = "MainThread"

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX start")


def openai_starts(tmp_path: Path, stub: OpenAIStub) -> Starts:
    port = int(stub.base_url.rsplit(":", 1)[1].split("/", 1)[0])
    env = {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": stub.base_url}
    return Starts(tmp_path, port, env, ["--provider", "openai", "--model", "gpt-4o-mini"])


def last_user_text(request: dict[str, Any]) -> str:
    users = [m for m in request["messages"] if m["role"] == "user"]
    content = users[-1]["content"]
    return content if isinstance(content, str) else json.dumps(content)


def test_the_third_start_sends_its_own_prompt_at_launch_once_and_reads_its_answer(
    tmp_path: Path,
) -> None:
    prompt = 'say three, with ünïcode and "quotes"'
    with OpenAIStub(*[Answer(text=f"answer {n}") for n in range(4)]) as stub:
        starts = openai_starts(tmp_path, stub)
        starts.warm()
        done, threads = starts.run(prompt)
        assert done.returncode == 0, done.stderr[-2000:]
        # Sent from the launch's thread before ketch loaded pydantic (the kit checks), once.
        assert threads == [EARLY_THREAD]
        assert "answer 2" in done.stdout
        assert len(stub.requests) == 3
        assert last_user_text(stub.requests[2]) == prompt
        # The same request ketch would have built, but for its prompt.
        before, after = json.dumps(stub.requests[1]), json.dumps(stub.requests[2])
        assert before.replace(json.dumps("say two")[1:-1], "X") == after.replace(
            json.dumps(prompt)[1:-1], "X"
        )
        assert stub.headers[2]["authorization"] == f"Bearer {KEY}"
        # A fourth start: early again, with its own prompt.
        done, threads = starts.run("say four")
        assert threads == [EARLY_THREAD]
        assert "answer 3" in done.stdout and last_user_text(stub.requests[3]) == "say four"
    # The record holds neither a prompt nor the key, and is the user's own.
    text = starts.record().read_text()
    for secret in ("say one", "say two", "say three", "say four", KEY):
        assert secret not in text
    assert starts.record().stat().st_mode & 0o077 == 0


def test_a_hook_configured_after_the_record_sees_and_stops_the_prompt(tmp_path: Path) -> None:
    """The record cannot outlive the configuration it was made in: a UserPromptSubmit
    hook added afterwards runs before anything reaches the model, and blocks."""
    with OpenAIStub(*[Answer(text="ok") for _ in range(5)]) as stub:
        starts = openai_starts(tmp_path, stub)
        starts.warm()
        config = starts.home / "config" / "config.toml"
        config.parent.mkdir(parents=True, exist_ok=True)
        hook = "grep -q CANARY-7d1f && exit 2; exit 0"
        config.write_text(f"[[hooks.UserPromptSubmit]]\ncommand = {json.dumps(hook)}\n")
        done, threads = starts.run("leak CANARY-7d1f please")
        assert EARLY_THREAD not in threads
        assert all("CANARY-7d1f" not in json.dumps(r) for r in stub.requests)
        assert len(stub.requests) == 2  # blocked: nothing sent
        # And with the hook there, no record is kept to send early later.
        starts.run("a harmless prompt")
        done, threads = starts.run("another harmless prompt")
        assert threads == [MAIN] and done.returncode == 0
        assert not starts.record().exists()


def test_a_new_address_gets_the_prompt_and_the_old_one_nothing(tmp_path: Path) -> None:
    with OpenAIStub(*[Answer(text="first") for _ in range(2)]) as old:
        openai_starts(tmp_path, old).warm()
        with OpenAIStub(Answer(text="from the new server")) as new:
            done, threads = openai_starts(tmp_path, new).run("where does this go")
            assert done.returncode == 0, done.stderr[-2000:]
            assert "from the new server" in done.stdout
            assert threads == [MAIN]
        assert len(old.requests) == 2


def test_a_changed_git_state_is_not_sent_early(tmp_path: Path) -> None:
    """A tracked file ketch does not read changes: no directory's entries and no file it
    read changed, only what ``git status`` says (and so the system prompt)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "data.txt").write_text("1\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    for argv in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "init"]):
        subprocess.run([*git, *argv], cwd=ws, check=True, capture_output=True)
    with OpenAIStub(*[Answer(text="ok") for _ in range(8)]) as stub:
        starts = openai_starts(tmp_path, stub)
        starts.warm()
        (ws / "data.txt").write_text("2\n")
        done, threads = starts.run("after the edit")
        assert threads == [MAIN] and done.returncode == 0
        assert "1 modified" in json.dumps(stub.requests[-1])
        assert not starts.record().exists()  # dropped: the next start records anew
        starts.warm("again", "and again")
        done, threads = starts.run("now early")
        assert threads == [EARLY_THREAD] and "1 modified" in json.dumps(stub.requests[-1])


def test_a_prompt_a_plugin_would_change_is_never_sent_early(tmp_path: Path) -> None:
    """``@path`` attaches a file: such a prompt goes the whole way, and once."""
    with OpenAIStub(*[Answer(text="ok") for _ in range(3)]) as stub:
        starts = openai_starts(tmp_path, stub)
        (starts.ws / "notes.md").write_text("hello\n")
        starts.warm()
        done, threads = starts.run("summarise @notes.md")
        assert done.returncode == 0, done.stderr[-2000:]
        assert threads == [MAIN]
        assert len(stub.requests) == 3 and "hello" in json.dumps(stub.requests[2])


def test_bytes_that_differ_are_dropped_and_ketch_sends_its_own(tmp_path: Path) -> None:
    """A record whose request is not what ketch builds (here: tampered with) costs one
    unanswered request; ketch sends its own, prints its answer, and drops the record."""
    answers = [Answer(text="a"), Answer(text="b"), Answer(text="unread"), Answer(text="real")]
    with OpenAIStub(*answers) as stub:
        starts = openai_starts(tmp_path, stub)
        starts.warm()
        data = json.loads(starts.record().read_text())
        data["body"][0] = data["body"][0].replace("You are ketch", "You are someone else", 1)
        starts.record().write_text(json.dumps(data))
        done, threads = starts.run("what now")
        assert done.returncode == 0, done.stderr[-2000:]
        assert threads == [EARLY_THREAD, MAIN]
        assert "real" in done.stdout and "unread" not in done.stdout
        assert "You are ketch" in json.dumps(stub.requests[-1])
        assert not starts.record().exists()


def test_an_adopted_error_status_is_classified_and_retried(tmp_path: Path) -> None:
    answers = [Answer(text="a"), Answer(text="b"), Answer(status=503, error="overloaded")]
    with OpenAIStub(*answers, Answer(text="after the retry")) as stub:
        starts = openai_starts(tmp_path, stub)
        starts.warm()
        done, threads = starts.run("try me")
        assert done.returncode == 0, done.stderr[-2000:]
        assert threads == [EARLY_THREAD, MAIN]
        assert "after the retry" in done.stdout
        assert len(stub.requests) == 4


def test_the_console_script_is_the_launch(tmp_path: Path) -> None:
    script = Path(sys.executable).with_name("ketch")
    if not script.exists():
        pytest.skip("no ketch console script next to this Python (pip install -e . first)")
    with OpenAIStub(*[Answer(text=f"n{i}") for i in range(3)]) as stub:
        starts = openai_starts(tmp_path, stub)
        runs = [starts.run(p, [str(script)])[0] for p in ("one", "two", "via the script")]
        assert all(r.returncode == 0 for r in runs), runs[-1].stderr[-2000:]
        assert "n2" in runs[-1].stdout
        assert len(stub.requests) == 3 and last_user_text(stub.requests[2]) == "via the script"
        assert json.loads(starts.record().read_text())["confirmed"] is True


def test_a_record_others_can_write_or_read_is_not_one(tmp_path: Path) -> None:
    """ketch writes its record 0600; a file with another mode (what a tool writes) is
    not taken for one."""
    with OpenAIStub(*[Answer(text="ok") for _ in range(3)]) as stub:
        starts = openai_starts(tmp_path, stub)
        starts.warm()
        starts.record().chmod(0o644)
        done, threads = starts.run("not early")
        assert threads == [MAIN] and done.returncode == 0


def test_a_slash_command_is_run_not_sent_early(tmp_path: Path) -> None:
    """``-p "/name args"`` runs the Markdown command: its text is what the model gets."""
    with OpenAIStub(*[Answer(text="ok") for _ in range(3)]) as stub:
        starts = openai_starts(tmp_path, stub)
        commands = starts.home / "config" / "commands"
        commands.mkdir(parents=True)
        (commands / "greet.md").write_text("Say hello to $ARGUMENTS, warmly.\n")
        starts.warm()
        done, threads = starts.run("/greet the team")
        assert done.returncode == 0, done.stderr[-2000:]
        assert threads == [MAIN]
        assert len(stub.requests) == 3
        assert "Say hello to the team, warmly." in json.dumps(stub.requests[2])


def test_free_text_typed_on_the_command_line_is_never_written(tmp_path: Path) -> None:
    """``--append-system-prompt TEXT`` reaches the request: such a start keeps no record
    (what a person typed is not written to disk), and so never sends early."""
    appended = "Answer like a pirate, please."
    with OpenAIStub(*[Answer(text="ok") for _ in range(3)]) as stub:
        starts = openai_starts(tmp_path, stub)
        starts.argv += ["--append-system-prompt", appended]
        for prompt in ("one", "two", "three"):
            done, threads = starts.run(prompt)
            assert done.returncode == 0, done.stderr[-2000:]
            assert threads == [MAIN]
        assert appended in json.dumps(stub.requests[-1])
    assert not starts.record().exists()
    assert not any(appended in p.read_text(errors="replace") for p in starts.home.rglob("*.json"))
