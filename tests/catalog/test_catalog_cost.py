"""The catalog and cost, end to end: ``ketch -p`` as a subprocess against the loopback
server (json and stream-json outputs), and ``/cost`` typed in the real shell (tmux): a
catalogued model's cost, none for an unknown model, a configured override's price."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ketch.testing import isolated_env
from tests.interactive.interactive_kit import Terminal, needs_tmux
from tests.providers.kit import PATHS
from tests.providers.loopback import LoopbackServer, Reply
from tests.providers.recordings import CANARY, recordings

# The recorded OpenAI stream reports 14 prompt and 30 completion tokens.
GPT_4O = 14 * 2.5 / 1e6 + 30 * 10.0 / 1e6  # the shipped price: $2.50 in, $10 out per million


@pytest.fixture
def server() -> Any:
    with LoopbackServer() as srv:
        yield srv


def ketch(
    tmp_path: Path, server: LoopbackServer, model: str, fmt: str, config: str = ""
) -> subprocess.CompletedProcess[str]:
    rec = recordings("openai")
    server.queue(
        PATHS["openai"], Reply(chunks=[rec["streams"]["plain"]], content_type=rec["content_type"])
    )
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "KETCH_"))}
    env.update(isolated_env(home))
    env.update(
        {
            "KETCH_PLUGINS": "openai,headless,catalog",
            "OPENAI_API_KEY": CANARY,
            "OPENAI_BASE_URL": f"{server.url}/v1",
            "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
        }
    )
    Path(env["KETCH_CONFIG_DIR"]).mkdir(parents=True, exist_ok=True)
    Path(env["KETCH_CONFIG_DIR"], "config.toml").write_text(
        f"[providers.openai]\ncontext_window = 100000\n{config}", encoding="utf-8"
    )
    (tmp_path / "ws").mkdir(exist_ok=True)
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "ketch",
            "-p",
            "hi",
            "--provider",
            "openai",
            "--model",
            model,
            "--output-format",
            fmt,
        ],
        env=env,
        cwd=tmp_path / "ws",
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_json_output_has_the_cost_of_a_catalogued_model(
    tmp_path: Path, server: LoopbackServer
) -> None:
    done = ketch(tmp_path, server, "gpt-4o", "json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["usage"] == {
        "input_tokens": 14,
        "output_tokens": 30,
        "cache_read_input_tokens": 0,
    }
    assert result["cost_usd"] == pytest.approx(GPT_4O, abs=1e-12)
    assert result["total_cost_usd"] == pytest.approx(GPT_4O, abs=1e-12)  # Claude Code's name


def test_stream_json_usage_and_turn_end_carry_cost_usd(
    tmp_path: Path, server: LoopbackServer
) -> None:
    done = ketch(
        tmp_path, server, "gpt-4o-2024-08-06", "stream-json"
    )  # a dated name: its own entry
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    (usage,) = [e for e in events if e["type"] == "usage"]
    assert usage["cost_usd"] == pytest.approx(GPT_4O, abs=1e-12)
    assert events[-1]["type"] == "turn_end" and events[-1]["cost_usd"] == pytest.approx(
        GPT_4O, abs=1e-12
    )


def test_an_unknown_model_shows_tokens_without_a_cost(
    tmp_path: Path, server: LoopbackServer
) -> None:
    done = ketch(tmp_path, server, "my-finetune", "json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert (
        result["usage"] == {"input_tokens": 14, "output_tokens": 30, "cache_read_input_tokens": 0}
        and result["cost_usd"] is None
        and result["total_cost_usd"] is None
    )
    stream = ketch(tmp_path / "b", server, "my-finetune", "stream-json")
    events = [json.loads(line) for line in stream.stdout.splitlines()]
    assert [e["cost_usd"] for e in events if e["type"] in ("usage", "turn_end")] == [None, None]


def test_a_configured_model_is_charged_at_its_configured_price(
    tmp_path: Path, server: LoopbackServer
) -> None:
    done = ketch(
        tmp_path,
        server,
        "my-finetune",
        "json",
        config='[models."my-finetune"]\ninput_price = 1.0\noutput_price = 4.0\n',
    )
    assert json.loads(done.stdout)["cost_usd"] == pytest.approx(
        (14 * 1.0 + 30 * 4.0) / 1e6, abs=1e-12
    )
    # An override of one price keeps the catalogue's other one.
    merged = ketch(
        tmp_path / "b", server, "gpt-4o", "json", config='[models."gpt-4o"]\ninput_price = 5.0\n'
    )
    assert json.loads(merged.stdout)["cost_usd"] == pytest.approx(
        (14 * 5.0 + 30 * 10.0) / 1e6, abs=1e-12
    )


def _cost_screen(tmp_path: Path, model: str, config: str = "") -> str:
    script = [
        {"text": "first", "usage": {"input_tokens": 120_000, "output_tokens": 3_000}},
        {
            "text": "second",
            "usage": {"input_tokens": 80_000, "output_tokens": 1_000, "cached_tokens": 40_000},
        },
    ]
    config_dir = Path(
        isolated_env(tmp_path / "home")["KETCH_CONFIG_DIR"]
    )  # where Terminal's ketch reads it
    config_dir.mkdir(parents=True, exist_ok=True)
    (config_dir / "config.toml").write_text(config, encoding="utf-8")
    term = Terminal(tmp_path, script=script, plugins="interactive,catalog", args=("--model", model))
    try:
        term.ready()
        term.type("one")
        term.wait_for("first")
        term.wait_idle()
        term.type("two")
        term.wait_for("second")
        term.wait_idle()
        term.type("/cost")
        return term.wait_for(
            "(?m)^cost      ", regex=True
        )  # the report line, not the typed command
    finally:
        term.close()


@needs_tmux
def test_slash_cost_in_the_shell(tmp_path: Path) -> None:
    # gpt-4o: (120k x 2.5 + 3k x 10) + (40k x 2.5 + 40k cached x 1.25 + 1k x 10), per million
    screen = _cost_screen(tmp_path / "known", "gpt-4o")
    assert "tokens    input 200,000 (cached 40,000), output 4,000" in screen
    assert "cost      $0.4900" in screen and "input $2.5, output $10" in screen
    unknown = _cost_screen(tmp_path / "unknown", "my-local-model")
    assert (
        "cost      unknown: no price for 'my-local-model'" in unknown
        and "$" not in unknown.split("cost      ")[-1].split("\n")[0]
    )
    configured = _cost_screen(
        tmp_path / "configured",
        "my-local-model",
        '[models."my-local-model"]\ninput_price = 0\noutput_price = 0\n',
    )
    assert "cost      $0.0000" in configured and "(config)" in configured
