"""A headless run opens the store while its first request is under way.

The key comes from a keyring that takes a second to answer (``SlowFileKeyring``), the
model is a real OpenAI-compatible server on 127.0.0.1: the request reaches the model
while the key is still being fetched, the tool the model asks for runs only after the
store is open (its dispatch is journaled first), and the journal holds the whole turn.
A store that fails stops the turn before any tool runs
(``test_store_unavailable.test_a_damaged_store_stops_a_headless_run_before_any_tool``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ketch.testing import text
from tests.platform.openai_stub import Answer, OpenAIStub
from tests.store.conftest import cli_env, run_ketch


def test_the_first_request_goes_out_while_the_key_is_fetched(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    keyring_log = tmp_path / "keyring.log"
    env = {
        **cli_env(tmp_path, [text("first")]),
        "PYTHON_KEYRING_BACKEND": "ketch.testing.keyring_backend.SlowFileKeyring",
        "KETCH_TEST_KEYRING_LOG": str(keyring_log),
    }
    made = run_ketch("-p", "make the store", "--provider", "scripted", cwd=workspace, env=env)
    assert made.returncode == 0, made.stderr
    keyring_log.unlink()

    env["KETCH_PLUGINS"] += ",openai"
    env["KETCH_TEST_KEYRING_DELAY"] = "1.0"
    with OpenAIStub(
        Answer(tool_calls=[("touch", {"path": "made.txt"})]), Answer(text="done")
    ) as stub:
        env.update({"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": stub.base_url})
        run = run_ketch(
            "-p",
            "touch it",
            "--provider",
            "openai",
            "--model",
            "m",
            "--output-format",
            "json",
            cwd=workspace,
            env=env,
        )
    assert run.returncode == 0, run.stderr
    [read] = [json.loads(line) for line in keyring_log.read_text().splitlines()]
    first, second = stub.arrived
    assert first < read["ended"]  # the model was asked before the key was in hand
    made_at = os.stat(workspace / "made.txt").st_mtime
    # A file's mtime comes from the kernel's coarse clock (a tick, up to ~10 ms, behind
    # time.time()); the key's fetch took a whole second, so a tick's slack still tells.
    coarse = 0.02
    assert read["ended"] - coarse <= made_at  # the tool ran once the store was open ...
    assert made_at <= second  # ... and before its result went back

    # Everything the turn said is in the journal, in order, as if the store had opened first.
    session = json.loads(run.stdout)["session_id"]
    shown = run_ketch("sessions", "show", session, "--json", cwd=workspace, env=env)
    assert shown.returncode == 0, shown.stderr
    stored = json.loads(shown.stdout)
    messages = stored["transcript"]
    roles = [m["role"] for m in messages]
    assert roles == ["user", "assistant", "tool", "assistant"], roles
    assert "touch it" in json.dumps(messages[0]) and "done" in json.dumps(messages[-1])
    assert "created made.txt" in json.dumps(messages[2])
    # The dispatch was journaled (once the store was open) before the tool ran, the outcome after.
    [op] = stored["operations"]
    assert (op["name"], op["status"]) == ("touch", "succeeded")
    assert read["ended"] <= op["dispatched_at"] <= made_at + coarse
    assert made_at <= op["finished_at"]
