"""Secrets never reach the model by accident: the redaction filter, unit by unit and end to end.

The end-to-end test is the acceptance case: ketch's own API key (``OPENAI_API_KEY``,
the openai provider talking to a loopback server speaking the chat-completions wire
format) is put in a workspace file, passed through into a command's environment, and
printed by the tool (raw and in base64). It must not reach a request body the model
server received, stdout/stderr, the SQLite journal file, or ``ketch sessions export``.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.providers.loopback import LoopbackServer, Reply

from ketch.testing import Harness, approve_all, call, text
from ketch.testing.harness import isolated_env
from ketch_redact.redactor import Redactor

# Test tokens in the documented formats (never real credentials).
GITHUB = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
AWS_ID = "AKIA" + "QWERTYUIOPASDFGH"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
PRIVATE = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n-----END OPENSSH PRIVATE KEY-----"
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
SLACK = "xoxb-" + "1234567890-0987654321-AbCdEfGhIjKlMnOp"
ANTHROPIC = "sk-ant-api03-" + "x" * 40 + "AA"
OPENAI_FORMAT = "sk-proj-" + "Zz9" * 16


def test_well_known_formats_are_redacted_and_counted() -> None:
    redactor = Redactor({})
    text = "\n".join(
        [
            f"token={GITHUB}",
            f"aws_access_key_id = {AWS_ID}",
            f"aws_secret_access_key = {AWS_SECRET}",
            PRIVATE,
            f"Authorization: Bearer {JWT}",
            f"slack {SLACK}",
            f"anthropic {ANTHROPIC} openai {OPENAI_FORMAT}",
            "google AIza" + "S" * 35,
        ]
    )
    done = redactor.redact(text)
    for secret in (
        GITHUB,
        AWS_ID,
        AWS_SECRET,
        "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ",
        JWT,
        SLACK,
        ANTHROPIC,
        OPENAI_FORMAT,
        "AIza" + "S" * 35,
    ):
        assert secret not in done.text
    assert (
        "aws_secret_access_key = [REDACTED aws-secret-key]" in done.text
    )  # the label stays readable
    assert "[REDACTED anthropic-key]" in done.text and "[REDACTED openai-key]" in done.text
    assert done.count == 9


def test_ordinary_code_is_left_alone() -> None:
    redactor = Redactor({})
    code = "import sklearn  # sk-learn\nkey = os.environ['GITHUB_TOKEN']  # ghp_ prefix\nx = 'AKIA'\nBearer auth is configured below\n"
    assert redactor.redact(code) == type(redactor.redact(""))(code, 0)


def test_known_values_in_any_alignment_of_base64_and_short_values_ignored() -> None:
    key = "ketch-own-key-" + secrets.token_hex(16)
    redactor = Redactor.of({"OPENAI_API_KEY": key, "DEBUG_TOKEN": "1", "HOME": "/home/me"})
    for prefix in ("", "a", "ab"):
        encoded = base64.b64encode((prefix + key).encode()).decode()
        done = redactor.redact(f"header: {encoded}\nplain: {key}\ncount 1 of /home/me")
        assert key not in done.text and encoded[8:-8] not in done.text
        assert "count 1 of /home/me" in done.text  # short and non-secret values stay
        assert "[REDACTED env:OPENAI_API_KEY]" in done.text


def test_redaction_reports_itself_and_covers_the_diff(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = "ketch-own-key-" + secrets.token_hex(16)
    monkeypatch.setenv("SERVICE_TOKEN", key)
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "config.py").write_text(f"TOKEN = '{key}'\nOTHER = '{GITHUB}'\n")
    script = [
        call("read_file", {"path": "config.py"}),
        call("edit_file", {"path": "config.py", "old_string": "OTHER", "new_string": "ANOTHER"}),
        text("done"),
    ]
    h = Harness.create(tmp_path, script=script, bundled=["fs", "redact"])
    h.run("go", approver=approve_all)
    read, edit = h.of_type("tool_result")
    assert key not in read.output and GITHUB not in read.output
    assert read.output.rstrip().endswith("[ketch] 2 secrets redacted")
    assert edit.diff is not None and key not in edit.diff and GITHUB not in edit.diff
    sent = json.dumps([r.model_dump(mode="json") for r in h.provider.requests])
    assert key not in sent and GITHUB not in sent


def test_the_user_can_turn_it_off_and_an_untrusted_workspace_cannot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def read_back(root: Path, **kw: Any) -> tuple[str, list[str]]:
        (root / "ws").mkdir(parents=True, exist_ok=True)
        (root / "ws" / "a.txt").write_text(f"t={GITHUB}\n")
        h = Harness.create(
            root,
            script=[call("read_file", {"path": "a.txt"}), text("ok")],
            bundled=["fs", "redact"],
            **kw,
        )
        h.run("go", approver=approve_all)
        return h.of_type("tool_result")[0].output, [e.message for e in h.of_type("notice")]

    output, _ = read_back(tmp_path / "user", config="[tools]\nredact_secrets = false\n")
    assert GITHUB in output  # the person's own choice
    output, notices = read_back(
        tmp_path / "repo", workspace_config="[tools]\nredact_secrets = false\n"
    )
    assert GITHUB not in output and any(
        "not trusted yet" in n and "setting tools.redact_secrets (.ketch/config.toml)" in n
        for n in notices
    )


def test_two_kernels_redaction_off_in_one_stays_on_in_the_other(tmp_path: Path) -> None:
    """One process, two kernels (``ketch acp`` serves one per session): the person
    turning redaction off for one leaves the other's output redacted."""
    harnesses = {}
    for name, config in (("off", "[tools]\nredact_secrets = false\n"), ("on", "")):
        (tmp_path / name / "ws").mkdir(parents=True)
        (tmp_path / name / "ws" / "a.txt").write_text(f"t={GITHUB}\n")
        harnesses[name] = Harness.create(
            tmp_path / name,
            script=[call("read_file", {"path": "a.txt"}), text("ok")] * 2,
            bundled=["fs", "redact"],
            config=config,
        )
    off, on = harnesses["off"], harnesses["on"]
    off.run("go", approver=approve_all)
    on.run("go", approver=approve_all)
    off.run("again", approver=approve_all)
    assert [GITHUB in r.output for r in off.of_type("tool_result")] == [True, True]
    (shown,) = on.of_type("tool_result")
    assert GITHUB not in shown.output and "[REDACTED" in shown.output
    sent = json.dumps([r.model_dump(mode="json") for r in on.provider.requests])
    assert GITHUB not in sent


# --- the acceptance case: the real CLI, the openai provider, a loopback server ------------------


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def _sse(*events: Any) -> bytes:
    return "".join(
        f"data: {e if isinstance(e, str) else json.dumps(e)}\n\n" for e in events
    ).encode()


def _tool_call_reply(command: str) -> Reply:
    arguments = json.dumps({"command": command})
    return Reply(
        chunks=[
            _sse(
                _chunk(
                    {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": "call_leak",
                                "type": "function",
                                "function": {"name": "shell", "arguments": arguments},
                            }
                        ],
                    }
                ),
                _chunk({}, "tool_calls"),
                "[DONE]",
            )
        ]
    )


def test_the_own_api_key_never_reaches_the_model_the_journal_or_stdout(tmp_path: Path) -> None:
    key = "ketch-e2e-key-" + secrets.token_hex(
        20
    )  # not a well-known format: only knowing it redacts it
    encoded = base64.b64encode(key.encode()).decode()
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text(f"the key is {key}\n")
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_", "KETCH_"))
    }
    env.update(isolated_env(tmp_path / "ketch"))
    config = Path(env["KETCH_CONFIG_DIR"])
    config.mkdir(parents=True)
    # The key is passed through to commands on purpose, so a tool really prints it.
    (config / "config.toml").write_text(
        'profile = "full-access"\n[permissions]\nallow = ["shell"]\n[shell]\nenv_passthrough = ["OPENAI_API_KEY"]\n[storage]\nencryption = "off"\n'
    )
    command = 'cat notes.txt; env | grep OPENAI_API_KEY; base64 -w0 notes.txt; echo; printf %s "$OPENAI_API_KEY" | base64 -w0'
    with LoopbackServer() as server:
        server.queue(
            "/v1/chat/completions",
            _tool_call_reply(command),
            Reply(chunks=[_sse(_chunk({"content": "done"}), _chunk({}, "stop"), "[DONE]")]),
        )
        env.update(OPENAI_API_KEY=key, OPENAI_BASE_URL=f"{server.url}/v1")
        done = subprocess.run(
            [sys.executable, "-m", "ketch", "-p", "show me the key", "--provider", "openai", "--model", "m", "--output-format", "stream-json"],
            cwd=ws, env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        bodies = [r.body.decode("utf-8", "replace") for r in server.requests]
        headers = [r.headers.get("authorization", "") for r in server.requests]
        turns = server.posts("/v1/chat/completions")
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    (result,) = [e for e in events if e["type"] == "tool_result"]
    assert result["ok"], result["output"]
    assert result["output"].count("[REDACTED") >= 3 and "secrets redacted" in result["output"]
    assert len(turns) == 2 and any(
        f"Bearer {key}" == h for h in headers
    )  # it was ketch's key, and it was used
    assert "secrets redacted" in json.dumps(
        turns[1]
    )  # the tool's result went back to the model, redacted
    for where, text_ in [
        ("request bodies", "\n".join(bodies)),
        ("stdout", done.stdout),
        ("stderr", done.stderr),
    ]:
        assert key not in text_ and encoded[8:-8] not in text_, where
    db = Path(env["KETCH_STATE_DIR"]) / "sessions.db"
    assert db.exists()
    stored = b"".join(
        p.read_bytes() for p in db.parent.iterdir() if p.name.startswith("sessions.db")
    )
    assert b"secrets redacted" in stored  # the plain journal holds the redacted result...
    assert (
        key.encode() not in stored and encoded[8:-8].encode() not in stored
    )  # ...and never the key
    session_id = events[0]["session_id"]
    exported = subprocess.run(
        [sys.executable, "-m", "ketch", "sessions", "export", session_id],
        cwd=ws,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert exported.returncode == 0, exported.stderr
    assert "secrets redacted" in exported.stdout and key not in exported.stdout


def test_a_key_from_the_keyring_is_known_and_redacted(tmp_path: Path) -> None:
    """A key ketch got from the keyring is in no environment variable: only the kernel
    knows it (``Kernel.known_secrets``), and that is enough to keep it out of results."""
    from ketch import hookimpl
    from ketch.providers import ProviderKind
    from ketch.testing import ScriptedProvider

    held = "keyring-held-" + secrets.token_hex(16)
    given: list[Any] = []

    class Vault:
        @hookimpl
        def ketch_register_providers(self, register: Any) -> None:
            def create(config: Any, key: Any) -> ScriptedProvider:
                given.append(key)
                return ScriptedProvider(
                    [call("read_file", {"path": "leak.txt"}), text("ok")],
                    name=config.name,
                    model="m",
                )

            register(
                ProviderKind(
                    kind="vaulted",
                    create=create,
                    needs_key=True,
                    env_key="VAULTED_API_KEY",
                    default_model="m",
                )
            )

        @hookimpl
        def ketch_get_credential(self, provider: str, kind: str) -> str | None:
            return held if kind == "vaulted" else None

    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "leak.txt").write_text(f"key: {held}\n")
    h = Harness.create(
        tmp_path, bundled=["fs", "redact"], plugins=[("vault", Vault())], provider_name="vaulted"
    )
    h.run("go", approver=approve_all)
    assert given and given[0].reveal() == held and held not in os.environ.values()
    assert [s.reveal() for s in h.kernel.known_secrets()] == [held]
    (result,) = h.of_type("tool_result")
    assert (
        held not in result.output
        and "[REDACTED provider-key]" in result.output
        and "1 secret redacted" in result.output
    )
