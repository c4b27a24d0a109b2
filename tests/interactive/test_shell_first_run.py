"""First run in a real terminal: with no provider configured the shell offers a setup
(here: an OpenAI-compatible server on 127.0.0.1 speaking the real wire format), stores
the pasted key in the keyring (never in a file), picks the model from the server's own
list, writes config.toml, and the next prompt reaches that server."""

from __future__ import annotations

import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
from interactive_kit import Terminal, needs_tmux, no_traceback
from tests.providers.loopback import LoopbackServer, Reply
from tests.providers.recordings import sse

pytestmark = [needs_tmux, pytest.mark.slow]

KEY = "sk-first-run-canary-0042"
NO_PROVIDER_ENV = {
    "OPENAI_API_KEY": "",
    "ANTHROPIC_API_KEY": "",
    "OLLAMA_HOST": "http://127.0.0.1:9",
    "OPENAI_BASE_URL": "",
}


def _chat_stream(text: str) -> bytes:
    base = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "loop-model",
    }
    return sse(
        {
            **base,
            "choices": [
                {"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}
            ],
        },
        {**base, "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]},
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        {
            **base,
            "choices": [],
            "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15},
        },
        "[DONE]",
    )


def _one_model(server: LoopbackServer) -> None:
    server.default(
        "/v1/models",
        Reply.json(200, {"object": "list", "data": [{"id": "loop-model", "object": "model"}]}),
    )


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    with LoopbackServer() as running:
        yield running


def test_setup_writes_a_working_config_and_the_next_prompt_reaches_the_server(
    tmp_path: Path, server: LoopbackServer
) -> None:
    server.default(
        "/v1/models",
        Reply.json(
            200,
            {
                "object": "list",
                "data": [
                    {"id": "loop-model", "object": "model"},
                    {"id": "zeta-model", "object": "model"},
                ],
            },
        ),
    )
    server.queue(
        "/v1/chat/completions", Reply(chunks=[_chat_stream("hello from the loopback server")])
    )
    term = Terminal(
        tmp_path, plugins="interactive,openai,keyring", provider=None, env=NO_PROVIDER_ENV
    )
    try:
        screen = term.wait_for("Which provider?")
        assert "No model provider is configured yet" in screen
        assert "Any OpenAI-compatible server" in screen and "Not now" in screen
        line = next(line for line in screen.splitlines() if "Any OpenAI-compatible server" in line)
        term.keys(line.replace("›", " ").split(".")[0].strip())  # its number selects it
        term.wait_for(r"›\s+\d+\. Any OpenAI-compatible server", regex=True)
        term.keys("Enter")
        term.wait_for("Base URL of the server")
        term.type(f"{server.url}/v1")
        term.wait_for("API key for openai-compatible")
        term.type(KEY)
        term.wait_for("Which model?")
        assert KEY not in term.screen()  # not echoed
        assert "*" * 8 not in term.screen()  # nor its length (issue 26 item 9)
        term.keys("Enter")  # the first listed: loop-model
        term.wait_for("✓ wrote [providers.openai-compatible] (model loop-model)")
        term.ready()
        term.type("are you there?")
        term.wait_for("hello from the loopback server")
        (chat,) = [r for r in server.requests if r.path == "/v1/chat/completions"]
        assert chat.json["model"] == "loop-model"
        assert chat.headers["authorization"] == f"Bearer {KEY}"
        config = term.home / "config" / "config.toml"
        data = tomllib.loads(config.read_text())
        assert data["default_provider"] == "openai-compatible"
        assert data["providers"]["openai-compatible"] == {
            "kind": "openai",
            "base_url": f"{server.url}/v1",
            "model": "loop-model",
        }
        assert KEY not in config.read_text()
        no_traceback(term.screen())
    finally:
        term.close()
    # The next start needs no setup: the config and the keyring have what it takes.
    server.queue("/v1/chat/completions", Reply(chunks=[_chat_stream("second start works")]))
    again = Terminal(
        tmp_path, plugins="interactive,openai,keyring", provider=None, env=NO_PROVIDER_ENV
    )
    try:
        screen = again.ready()
        assert "Which provider?" not in screen
        again.type("hi")
        again.wait_for("second start works")
    finally:
        again.close()


def test_declining_the_setup_says_how_to_configure_by_hand(tmp_path: Path) -> None:
    term = Terminal(tmp_path, plugins="interactive,openai", provider=None, env=NO_PROVIDER_ENV)
    try:
        term.wait_for("Which provider?")
        term.keys("q")
        assert term.exit_code() == 1
        screen = term.screen()
        assert "no model provider is configured" in screen and "export OPENAI_API_KEY" in screen
        no_traceback(screen)
    finally:
        term.close()


def test_a_key_in_the_environment_goes_straight_to_its_provider(
    tmp_path: Path, server: LoopbackServer
) -> None:
    # Issue 26 item 9: with OPENAI_API_KEY set the shell said "no model chosen", then
    # "No model provider is configured yet" with the cursor on another provider, and
    # offered two overlapping OpenAI-compatible choices.
    _one_model(server)
    server.queue("/v1/chat/completions", Reply(chunks=[_chat_stream("env key works")]))
    env = {**NO_PROVIDER_ENV, "OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": f"{server.url}/v1"}
    term = Terminal(
        tmp_path, plugins="interactive,openai,anthropic,keyring", provider=None, env=env
    )
    try:
        screen = term.wait_for("Which provider?")
        assert "$OPENAI_API_KEY is set, but no model is chosen yet" in screen
        assert "No model provider is configured yet" not in screen
        assert "no model chosen for provider" not in screen
        selected = next(line for line in screen.splitlines() if "›" in line)
        assert "openai: OpenAI" in selected and "key in $OPENAI_API_KEY" in selected
        assert screen.count("compatible") == 1  # one OpenAI-compatible choice, not two
        term.keys("Enter")
        term.wait_for("Which model?")
        term.keys("Enter")
        term.wait_for("✓ wrote [providers.openai] (model loop-model)")
        term.ready()
        term.type("hi")
        term.wait_for("env key works")
        (chat,) = [r for r in server.requests if r.path == "/v1/chat/completions"]
        assert chat.headers["authorization"] == f"Bearer {KEY}"
        no_traceback(term.screen())
    finally:
        term.close()


def test_without_a_secret_service_the_model_comes_first_then_storage_once(
    tmp_path: Path, server: LoopbackServer
) -> None:
    # Issue 26 item 2: with no Secret Service the very first screen asked for a
    # passphrase, before any provider. Now: the model first, then where the sessions'
    # key lives (asked once, the recommended choice first, remembered in config.toml).
    _one_model(server)
    server.queue("/v1/chat/completions", Reply(chunks=[_chat_stream("saved and answered")]))
    import uuid

    from ketch_crypto import kernel_keyring

    # A login session of its own (as a new login has), which both starts below share.
    kernel_keyring.join_new_session(f"ketch-test-{uuid.uuid4().hex[:12]}")
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    no_dbus = {
        **NO_PROVIDER_ENV,
        "OPENAI_API_KEY": KEY,
        "OPENAI_BASE_URL": f"{server.url}/v1",
        "PYTHON_KEYRING_BACKEND": "",  # keyring's own detection: it finds no backend
        "DBUS_SESSION_BUS_ADDRESS": "",
        "XDG_RUNTIME_DIR": str(runtime),
    }
    plugins = "interactive,openai,keyring,store,crypto"
    term = Terminal(tmp_path, plugins=plugins, provider=None, env=no_dbus)
    try:
        first = term.wait_for("Which provider?")
        assert "passphrase" not in first.lower() and "Where should ketch keep" not in first
        term.keys("Enter")
        term.wait_for("Which model?")
        term.keys("Enter")
        screen = term.wait_for("Where should ketch keep the key")
        assert "(recommended)" in screen and "stolen disk" in screen and "other users" in screen
        picked = next(line for line in screen.splitlines() if "›" in line)
        term.keys("Enter")  # the recommended one
        if "passphrase" in picked:
            term.wait_for("New passphrase")
            term.type("a storage passphrase 26")
            term.wait_for("Type it again:")
            term.type("a storage passphrase 26")
        term.wait_for("✓ the sessions' key")
        term.ready()
        term.type("hello")
        term.wait_for("saved and answered")
        assert "not being saved" not in term.screen()
        config = tomllib.loads((term.home / "config" / "config.toml").read_text())
        chosen = config["storage"]["key"]
        assert chosen in ("passphrase", "file")
        assert KEY not in (term.home / "config" / "config.toml").read_text()
        term.keys("C-d")
        assert term.exit_code() == 0
    finally:
        term.close()
    again = Terminal(tmp_path, plugins=plugins, provider=None, env=no_dbus)
    try:
        screen = again.ready()  # the same login session: nothing is asked again
        assert "Where should ketch keep" not in screen and "Passphrase for" not in screen
        no_traceback(screen)
    finally:
        again.close()
