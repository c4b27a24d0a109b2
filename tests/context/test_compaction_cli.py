"""Acceptance through the real command line: ``ketch -p ... --continue`` turns, one
session, a small configured context window, the scripted model in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from ketch.messages import Message
from ketch.providers import ToolSpec
from ketch_context_kit.budget import TokenEstimator, effective_capacity
from tests.context.kit_context import MARKER

TURN_CHARS = 6_000


def ketch(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ketch", *args],
        cwd=cwd,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=90,
        stdin=subprocess.DEVNULL,
    )


def tokens(request: dict[str, Any]) -> int:
    messages = [Message.model_validate(m) for m in request["messages"]]
    tools = [ToolSpec.model_validate(t).model_dump() for t in request["tools"]]
    return TokenEstimator().request(request["system"], tools, messages).tokens


def write_config(config_dir: Path, window: int | None) -> None:
    config_dir.mkdir(parents=True, exist_ok=True)
    lines = ["[providers.scripted]", 'kind = "scripted"']
    if window:
        lines.append(f"context_window = {window}")
    lines += ["[storage]", 'encryption = "off"']
    (config_dir / "config.toml").write_text("\n".join(lines) + "\n")


def test_continue_session_compacts_fits_and_keeps_instructions(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "AGENTS.md").write_text(MARKER + "\n")
    script_path, log_path = tmp_path / "script.json", tmp_path / "requests.jsonl"
    answers = [{"text": f"answer {i} " + "a" * TURN_CHARS} for i in range(8)]
    script_path.write_text(json.dumps(answers))
    env = {
        "KETCH_LOAD": "ketch.testing.scripted_plugin",
        "KETCH_SCRIPT": str(script_path),
        "KETCH_SCRIPT_LOG": str(log_path),
    }
    config_dir = Path(os.environ["KETCH_CONFIG_DIR"])
    write_config(config_dir, None)

    def turn(i: int) -> list[dict[str, Any]]:
        flags = ["--continue"] if i else []
        proc = ketch(
            "-p",
            f"prompt {i} " + "p" * TURN_CHARS,
            "--provider",
            "scripted",
            "--output-format",
            "stream-json",
            *flags,
            cwd=workspace,
            env=env,
        )
        assert "Traceback" not in proc.stderr, proc.stderr
        assert proc.returncode == 0, proc.stderr
        return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]

    events = turn(0)
    session_id = next(e for e in events if e["type"] == "session")["session_id"]
    # Size the window from what this build sends besides the messages (system prompt and
    # every bundled tool's schema), so compaction falls in the fourth or fifth turn.
    first = [json.loads(line) for line in log_path.read_text().splitlines()][0]
    fixed = tokens({**first, "messages": []})
    turn_tokens = 2 * TURN_CHARS // 4
    window = 4_096
    while effective_capacity(window) * 0.70 < fixed + 3.6 * turn_tokens:
        window += 256
    capacity = effective_capacity(window)
    write_config(config_dir, window)

    compacted_in = None
    for i in range(1, 7):
        before = len(log_path.read_text().splitlines())
        events = turn(i)
        started = next(e for e in events if e["type"] == "session")
        assert started["session_id"] == session_id and started["resumed"] is True
        if compacted_in is None and any(e["type"] == "compaction" for e in events):
            compacted_in = i
            compaction = next(e for e in events if e["type"] == "compaction")
            assert compaction["after_tokens"] < compaction["before_tokens"]
            request = [json.loads(line) for line in log_path.read_text().splitlines()][before]
            assert tokens(request) <= capacity
            assert MARKER in request["system"]
            assert request["messages"][0]["synthetic"] and request["messages"][0]["parts"][0][
                "text"
            ].startswith("[ketch] Summary")
        usage = [e for e in events if e["type"] == "usage"][-1]
        assert 0 <= usage["context_utilization"] <= 1 and usage["effective_capacity"] == capacity
    assert compacted_in is not None, "no compaction in six --continue turns"
    # Later runs resume the compacted context, not the whole transcript.
    requests = [json.loads(line) for line in log_path.read_text().splitlines()]
    assert all(tokens(r) <= capacity for r in requests[1:])
    assert requests[-1]["messages"][0]["parts"][0]["text"].startswith("[ketch] Summary")
    assert MARKER in requests[-1]["system"]
