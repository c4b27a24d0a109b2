"""The command line end to end, once per kind: ``ketch -p`` as a subprocess with nothing
but the ecosystem's usual variables pointing at a loopback server; ``ketch models``;
the first run finding a local Ollama; a missing key explained."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from .kit import PATHS
from .loopback import LoopbackServer, Reply, free_port
from .recordings import CANARY, OLLAMA_SHOW, recordings

PLUGINS = "openai,anthropic,ollama,gemini,headless,keyring,admin"


def ketch(
    tmp_path: Path, *args: str, env: dict[str, str] | None = None, stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    base = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "ANTHROPIC_", "OLLAMA_", "GEMINI_", "GOOGLE_"))
    }
    merged = {
        **base,
        "KETCH_PLUGINS": PLUGINS,
        "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
        **(env or {}),
    }
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    return subprocess.run(
        [sys.executable, "-m", "ketch", *args],
        env=merged,
        cwd=workspace,
        capture_output=True,
        text=True,
        input=stdin,
        timeout=60,
    )


def lines(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines() if line.strip()]


CASES = {
    "openai": lambda url: {"OPENAI_API_KEY": CANARY, "OPENAI_BASE_URL": f"{url}/v1"},
    "openai-responses": lambda url: {
        "OPENAI_API_KEY": CANARY,
        "OPENAI_BASE_URL": url,
    },  # no /v1: added
    "anthropic": lambda url: {"ANTHROPIC_API_KEY": CANARY, "ANTHROPIC_BASE_URL": url},
    "ollama": lambda url: {
        "OLLAMA_HOST": url.removeprefix("http://")
    },  # host:port, as people write it
    "gemini": lambda url: {"GEMINI_API_KEY": CANARY, "GEMINI_BASE_URL": url},
}
ANSWERS = {
    "openai": "I'm unable to provide real-time weather updates.",
    "openai-responses": "I'm unable to provide real-time weather updates.",
    "anthropic": "Hello there!",
    "ollama": "The sky is blue.",
    "gemini": "\n".join(str(n) for n in range(1, 31)),
}


@pytest.mark.parametrize("kind", [k for k in CASES if k != "gemini"])
def test_headless_stream_json_with_only_environment_variables(
    tmp_path: Path, server: LoopbackServer, kind: str
) -> None:
    rec = recordings(kind)
    server.queue(
        PATHS[kind], Reply(chunks=[rec["streams"]["plain"]], content_type=rec["content_type"])
    )
    server.default("/api/show", Reply.json(200, OLLAMA_SHOW), method="POST")
    done = ketch(
        tmp_path,
        "-p",
        "hi",
        "--provider",
        kind,
        "--model",
        "m",
        "--output-format",
        "stream-json",
        env=CASES[kind](server.url),
    )
    assert done.returncode == 0, done.stderr
    events = lines(done.stdout)
    assert events[0]["type"] == "session" and events[0]["model"] == "m"
    assert "".join(e["text"] for e in events if e["type"] == "text_delta") == ANSWERS[kind]
    assert (
        events[-1]["type"] == "turn_end"
        and events[-1]["text"] == ANSWERS[kind]
        and events[-1]["stop_reason"] == "end_turn"
    )
    body = server.posts(PATHS[kind])[0]
    assert body["model"] == "m" and body["stream"] is True
    assert CANARY not in done.stdout + done.stderr
    if kind != "ollama":
        sent = server.requests[-1].headers
        assert CANARY in (sent.get("authorization", "") + sent.get("x-api-key", ""))


def test_gemini_headless_with_only_gemini_api_key_and_base_url(
    tmp_path: Path, server: LoopbackServer
) -> None:
    rec = recordings("gemini")
    path = "/v1beta/models/gemini-2.5-flash:streamGenerateContent"
    server.queue(path, Reply(chunks=[rec["streams"]["plain"]], content_type=rec["content_type"]))
    server.default(
        "/v1beta/models/gemini-2.5-flash",
        Reply.json(
            200,
            {
                "name": "models/gemini-2.5-flash",
                "inputTokenLimit": 1048576,
                "outputTokenLimit": 65536,
                "supportedGenerationMethods": ["generateContent"],
            },
        ),
    )
    done = ketch(
        tmp_path,
        "-p",
        "hi",
        "--provider",
        "gemini",
        "--model",
        "gemini-2.5-flash",
        "--output-format",
        "stream-json",
        env=CASES["gemini"](server.url),
    )
    assert done.returncode == 0, done.stderr
    events = lines(done.stdout)
    assert (
        events[0]["type"] == "session"
        and events[0]["provider"] == "gemini"
        and events[0]["model"] == "gemini-2.5-flash"
    )
    assert (
        events[-1]["type"] == "turn_end"
        and events[-1]["text"] == ANSWERS["gemini"]
        and events[-1]["stop_reason"] == "end_turn"
    )
    (sent,) = [r for r in server.requests if r.path == path]
    assert (
        sent.target == f"{path}?alt=sse" and CANARY not in sent.target
    )  # the key is never in the URL
    assert sent.headers["x-goog-api-key"] == CANARY
    assert sent.json["contents"][-1] == {"role": "user", "parts": [{"text": "hi"}]}
    assert CANARY not in done.stdout + done.stderr
    # With neither variable set, the error names both ways to give a key.
    missing = ketch(
        tmp_path,
        "-p",
        "hi",
        "--provider",
        "gemini",
        "--model",
        "gemini-2.5-flash",
        "--output-format",
        "json",
        env={"GEMINI_BASE_URL": server.url},
    )
    assert (
        missing.returncode == 1
        and "GEMINI_API_KEY" in missing.stdout
        and "ketch auth set gemini" in missing.stdout
    )
    assert "Traceback" not in missing.stderr


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_a_key_in_the_environment_picks_its_provider_with_no_config(
    tmp_path: Path, server: LoopbackServer, kind: str
) -> None:
    rec = recordings(kind)
    server.queue(
        PATHS[kind], Reply(chunks=[rec["streams"]["plain"]], content_type=rec["content_type"])
    )
    done = ketch(
        tmp_path,
        "-p",
        "hi",
        "--model",
        "m",
        "--output-format",
        "stream-json",
        env=CASES[kind](server.url),
    )
    assert done.returncode == 0, done.stderr
    events = lines(done.stdout)
    assert events[0]["provider"] == kind and events[-1]["text"] == ANSWERS[kind]
    key_var = "OPENAI_API_KEY" if kind == "openai" else "ANTHROPIC_API_KEY"
    assert any(
        e["type"] == "notice" and f"using {kind} because {key_var} is set" in e["message"]
        for e in events
    )
    # Without a model the message says what to do, in one line, not "no provider".
    missing = ketch(tmp_path, "-p", "hi", env=CASES[kind](server.url))
    assert missing.returncode == 2 and f"no model chosen for provider '{kind}'" in missing.stderr
    assert "Traceback" not in missing.stderr and CANARY not in missing.stderr


@pytest.mark.parametrize("kind", ["openai", "anthropic", "ollama"])
def test_ketch_models_lists_the_providers_models(
    tmp_path: Path, server: LoopbackServer, kind: str
) -> None:
    server.default(
        "/v1/models",
        Reply.json(
            200,
            {
                "data": [
                    {"id": "gpt-4o", "owned_by": "openai"},
                    {"id": "claude-sonnet-4-5", "type": "model"},
                ]
            },
        ),
    )
    server.default("/api/tags", Reply.json(200, {"models": [{"name": "qwen3:8b"}]}))
    server.default("/api/show", Reply.json(200, OLLAMA_SHOW), method="POST")
    done = ketch(tmp_path, "--provider", kind, "models", env=CASES[kind](server.url))
    assert done.returncode == 0, done.stderr
    if kind == "ollama":
        assert done.stdout.split() == ["qwen3:8b", "context", "131072"]
    else:
        assert (
            "gpt-4o  context 128000" in done.stdout
            and "claude-sonnet-4-5  context 200000" in done.stdout
        )


def test_ketch_models_with_a_rejected_key_is_one_clear_line(
    tmp_path: Path, server: LoopbackServer
) -> None:
    server.default(
        "/v1/models",
        Reply.json(
            401,
            {
                "error": {
                    "message": f"Incorrect API key provided: {CANARY}",
                    "code": "invalid_api_key",
                }
            },
        ),
    )
    done = ketch(tmp_path, "--provider", "openai", "models", env=CASES["openai"](server.url))
    assert done.returncode == 1
    assert (
        done.stderr.count("\n") == 1
        and "OPENAI_API_KEY" in done.stderr
        and "Traceback" not in done.stderr
    )
    assert CANARY not in done.stderr


def test_missing_key_names_both_ways_and_exits_1(tmp_path: Path) -> None:
    done = ketch(
        tmp_path,
        "-p",
        "hi",
        "--provider",
        "anthropic",
        "--model",
        "claude-sonnet-4-5",
        "--output-format",
        "json",
    )
    assert done.returncode == 1, done.stderr
    result = json.loads(done.stdout)
    assert result["is_error"] and result["stop_reason"] == "error"
    (error,) = result["errors"]
    assert (
        error["kind"] == "auth"
        and "ANTHROPIC_API_KEY" in error["message"]
        and "ketch auth set anthropic" in error["message"]
    )
    assert "Traceback" not in done.stderr


def test_first_run_finds_a_local_ollama(tmp_path: Path, server: LoopbackServer) -> None:
    """No provider configured, no key: LM Studio (localhost:1234) is tried, then Ollama
    (OLLAMA_HOST here, localhost:11434 by default), which answers and is used."""
    server.default("/api/version", Reply.json(200, {"version": "0.12.3"}))
    server.default("/api/tags", Reply.json(200, {"models": [{"name": "qwen3:8b"}]}))
    server.default("/api/show", Reply.json(200, OLLAMA_SHOW), method="POST")
    server.queue(
        "/api/chat",
        Reply(
            chunks=[recordings("ollama")["streams"]["plain"]], content_type="application/x-ndjson"
        ),
    )
    done = ketch(
        tmp_path, "-p", "hi", "--output-format", "stream-json", env={"OLLAMA_HOST": server.url}
    )
    assert done.returncode == 0, done.stderr
    events = lines(done.stdout)
    assert events[0]["model"] == "qwen3:8b"
    assert any(
        e["type"] == "notice"
        and "ollama" in e["message"]
        and server.url.removeprefix("http://") in e["message"]
        for e in events
    )
    assert events[-1]["text"] == "The sky is blue."
    assert server.posts("/api/chat")[0]["model"] == "qwen3:8b"


def test_first_run_with_nothing_found_explains_how_to_configure(tmp_path: Path) -> None:
    done = ketch(tmp_path, "-p", "hi", env={"OLLAMA_HOST": f"127.0.0.1:{free_port()}"})
    assert done.returncode != 0
    assert "no model provider is configured" in done.stderr and "ketch auth set" in done.stderr
    assert "Traceback" not in done.stderr


def test_ketch_models_lists_gemini_chat_models_with_their_windows(
    tmp_path: Path, server: LoopbackServer
) -> None:
    listing = {
        "models": [
            {
                "name": "models/gemini-2.5-flash",
                "inputTokenLimit": 1048576,
                "outputTokenLimit": 65536,
                "supportedGenerationMethods": ["generateContent", "countTokens"],
            },
            {
                "name": "models/gemini-embedding-001",
                "inputTokenLimit": 2048,
                "supportedGenerationMethods": ["embedContent"],
            },
        ]
    }
    server.default("/v1beta/models", Reply.json(200, listing))
    done = ketch(tmp_path, "--provider", "gemini", "models", env=CASES["gemini"](server.url))
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["gemini-2.5-flash", "context", "1048576"]
    assert (
        server.requests[-1].headers["x-goog-api-key"] == CANARY
        and CANARY not in server.requests[-1].target
    )
