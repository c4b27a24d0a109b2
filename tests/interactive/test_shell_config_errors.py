"""The shell with a broken user config: it names the file and the line, and does not
offer the first-run setup (which would write over the file)."""

from __future__ import annotations

from pathlib import Path

import pytest
from interactive_kit import Terminal, needs_tmux, no_traceback

pytestmark = [needs_tmux, pytest.mark.slow]

NO_PROVIDER_ENV = {
    "OPENAI_API_KEY": "",
    "ANTHROPIC_API_KEY": "",
    "GEMINI_API_KEY": "",
    "OLLAMA_HOST": "http://127.0.0.1:9",
    "OPENAI_BASE_URL": "",
}


def test_a_broken_config_is_named_with_its_line_and_left_alone(tmp_path: Path) -> None:
    config = tmp_path / "home" / "config" / "config.toml"
    config.parent.mkdir(parents=True)
    broken = (
        b'default_provider = "s"\n[providers.s]\nkind = "scripted"\nmodel = "m"\n[providers.s]\n'
    )
    config.write_bytes(broken)
    term = Terminal(tmp_path, plugins="interactive,openai", provider=None, env=NO_PROVIDER_ENV)
    try:
        assert term.exit_code() == 1
        screen = term.screen()
        no_traceback(screen)
        assert f"{config}:5: invalid TOML" in screen.replace("\n", "")
        assert "Which provider?" not in screen  # no setup over a file the person wrote
        assert config.read_bytes() == broken
    finally:
        term.close()
