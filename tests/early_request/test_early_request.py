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
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ketch.testing import isolated_env
from tests.platform.openai_stub import Answer, OpenAIStub

PROBE = Path(__file__).with_name("launch_probe.py")
KEY = "sk-test-early-not-a-key"
EARLY_THREAD = "ketch-early-request"

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX start")


class Starts:
    """Runs of ``ketch -p`` in one home and one workspace."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp = tmp_path
        self.home = tmp_path / "home"
        self.ws = tmp_path / "ws"
        self.ws.mkdir()
        self.extra: dict[str, str] = {}

    def env(self, stub: OpenAIStub) -> dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("KETCH_", "OPENAI_"))
            and k.lower() not in ("http_proxy", "https_proxy", "all_proxy")
        }
        env.update(isolated_env(self.home))
        env.pop("KETCH_PLUGINS", None)  # the default build
        env.update(
            {
                "HOME": str(self.home),
                "OPENAI_API_KEY": KEY,
                "OPENAI_BASE_URL": stub.base_url,
                "PYTHON_KEYRING_BACKEND": "ketch.testing.keyring_backend.FileKeyring",
                "KETCH_TEST_KEYRING_FILE": str(self.tmp / "keyring.json"),
                "PROBE_PORT": stub.base_url.rsplit(":", 1)[1].split("/", 1)[0],
            }
        )
        env.update(self.extra)
        return env

    def run(
        self, stub: OpenAIStub, prompt: str
    ) -> tuple[subprocess.CompletedProcess[str], list[dict[str, Any]]]:
        out = self.tmp / "connects.json"  # one name: the environment is part of the key
        out.unlink(missing_ok=True)
        env = {**self.env(stub), "PROBE_OUT": str(out)}
        argv = [
            sys.executable,
            str(PROBE),
            "--provider",
            "openai",
            "--model",
            "gpt-4o-mini",
            "-p",
            prompt,
        ]
        done = subprocess.run(
            argv,
            cwd=self.ws,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
        )
        connects = json.loads(out.read_text()) if out.exists() else []
        return done, connects

    def record(self) -> Path:
        return self.home / "cache" / "early-request.json"


def last_user_text(request: dict[str, Any]) -> str:
    users = [m for m in request["messages"] if m["role"] == "user"]
    content = users[-1]["content"]
    return content if isinstance(content, str) else json.dumps(content)


def warm(starts: Starts, stub: OpenAIStub) -> None:
    """Two runs: the record written, then confirmed."""
    for prompt in ("say one", "say two"):
        done, connects = starts.run(stub, prompt)
        assert done.returncode == 0, done.stderr[-2000:]
        assert [c["thread"] for c in connects] != [EARLY_THREAD]
    assert json.loads(starts.record().read_text())["confirmed"] is True


def test_the_third_start_sends_its_own_prompt_at_launch_once_and_reads_its_answer(
    tmp_path: Path,
) -> None:
    starts = Starts(tmp_path)
    answers = [Answer(text=f"answer {n}") for n in range(4)]
    with OpenAIStub(*answers) as stub:
        warm(starts, stub)
        done, connects = starts.run(stub, 'say three, with ünïcode and "quotes"')
        assert done.returncode == 0, done.stderr[-2000:]
        # Sent from the launch's thread before ketch loaded its first library, and once.
        assert connects == [{"thread": EARLY_THREAD, "pydantic": False}]
        assert "answer 2" in done.stdout
        assert len(stub.requests) == 3
        assert last_user_text(stub.requests[2]) == 'say three, with ünïcode and "quotes"'
        # The same request ketch would have built, but for its prompt.
        before, after = json.dumps(stub.requests[1]), json.dumps(stub.requests[2])
        assert before.replace(json.dumps("say two")[1:-1], "X") == after.replace(
            json.dumps('say three, with ünïcode and "quotes"')[1:-1], "X"
        )
        assert stub.headers[2]["authorization"] == f"Bearer {KEY}"
        # A fourth start: early again, with its own prompt.
        done, connects = starts.run(stub, "say four")
        assert connects == [{"thread": EARLY_THREAD, "pydantic": False}]
        assert "answer 3" in done.stdout and last_user_text(stub.requests[3]) == "say four"
    # The record holds neither a prompt nor the key.
    text = starts.record().read_text()
    for secret in ("say one", "say two", "say three", "say four", KEY):
        assert secret not in text
    assert starts.record().stat().st_mode & 0o077 == 0


def test_a_hook_configured_after_the_record_sees_and_stops_the_prompt(tmp_path: Path) -> None:
    """The record cannot outlive the configuration it was made in: a UserPromptSubmit
    hook added afterwards runs before anything reaches the model, and blocks."""
    starts = Starts(tmp_path)
    with OpenAIStub(*[Answer(text="ok") for _ in range(4)]) as stub:
        warm(starts, stub)
        config = starts.home / "config" / "config.toml"
        config.parent.mkdir(parents=True, exist_ok=True)
        hook = "grep -q CANARY-7d1f && exit 2; exit 0"
        config.write_text(f"[[hooks.UserPromptSubmit]]\ncommand = {json.dumps(hook)}\n")
        done, connects = starts.run(stub, "leak CANARY-7d1f please")
        assert done.returncode != 0 or "block" in (done.stdout + done.stderr).lower()
        assert EARLY_THREAD not in [c["thread"] for c in connects]
        assert all("CANARY-7d1f" not in json.dumps(r) for r in stub.requests)
        # And with the hook there, no record is kept to send early later.
        starts.run(stub, "a harmless prompt")
        done, connects = starts.run(stub, "another harmless prompt")
        assert EARLY_THREAD not in [c["thread"] for c in connects]
        assert not starts.record().exists()


def test_a_new_address_or_a_changed_workspace_is_not_sent_early(tmp_path: Path) -> None:
    starts = Starts(tmp_path)
    with OpenAIStub(*[Answer(text="first") for _ in range(3)]) as old:
        warm(starts, old)
        with OpenAIStub(Answer(text="from the new server")) as new:
            # OPENAI_BASE_URL now names another server: nothing goes to the old one.
            env_before = len(old.requests)
            done, connects = starts.run(new, "where does this go")
            assert done.returncode == 0, done.stderr[-2000:]
            assert "from the new server" in done.stdout
            assert len(old.requests) == env_before
            assert EARLY_THREAD not in [c["thread"] for c in connects]
    with OpenAIStub(*[Answer(text="ok") for _ in range(6)]) as stub:
        warm(starts, stub)
        (starts.ws / "NOTES.txt").write_text("an untracked file\n")  # the workspace changed
        done, connects = starts.run(stub, "after the change")
        assert EARLY_THREAD not in [c["thread"] for c in connects]
        assert done.returncode == 0


def test_a_prompt_a_plugin_would_change_is_never_sent_early(tmp_path: Path) -> None:
    """``@path`` attaches a file: such a prompt goes the whole way, and once."""
    starts = Starts(tmp_path)
    (starts.ws / "notes.md").write_text("hello\n")
    with OpenAIStub(*[Answer(text="ok") for _ in range(3)]) as stub:
        warm(starts, stub)
        done, connects = starts.run(stub, "summarise @notes.md")
        assert done.returncode == 0, done.stderr[-2000:]
        assert EARLY_THREAD not in [c["thread"] for c in connects]
        assert len(stub.requests) == 3


def test_bytes_that_differ_are_dropped_and_ketch_sends_its_own(tmp_path: Path) -> None:
    """A record whose request is not what ketch builds (here: tampered with) costs
    one unanswered request; ketch still sends its own and prints its answer."""
    starts = Starts(tmp_path)
    with OpenAIStub(
        Answer(text="a"),
        Answer(text="b"),
        Answer(text="early, unread"),
        Answer(text="the real answer"),
    ) as stub:
        warm(starts, stub)
        data = json.loads(starts.record().read_text())
        data["body"][0] = data["body"][0].replace("You are ketch", "You are someone else", 1)
        starts.record().write_text(json.dumps(data))
        done, connects = starts.run(stub, "what now")
        assert done.returncode == 0, done.stderr[-2000:]
        assert [c["thread"] for c in connects][:1] == [EARLY_THREAD]
        assert "the real answer" in done.stdout and "early, unread" not in done.stdout
        assert "You are ketch" in json.dumps(stub.requests[-1])


def test_the_console_script_is_the_launch(tmp_path: Path) -> None:
    script = Path(sys.executable).with_name("ketch")
    if not script.exists():
        pytest.skip("no ketch console script next to this Python (pip install -e . first)")
    starts = Starts(tmp_path)
    with OpenAIStub(*[Answer(text=f"n{i}") for i in range(3)]) as stub:
        warm(starts, stub)
        env = starts.env(stub)
        done = subprocess.run(
            [str(script), "--provider", "openai", "--model", "gpt-4o-mini", "-p", "via the script"],
            cwd=starts.ws,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        assert "n2" in done.stdout
        assert len(stub.requests) == 3 and last_user_text(stub.requests[2]) == "via the script"
