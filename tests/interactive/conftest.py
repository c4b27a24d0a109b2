"""Fixtures for the terminal tests: ``start(**kwargs)`` opens ketch in tmux (a
:class:`interactive_kit.Terminal` under ``tmp_path``) and waits for the prompt; a test
module's ``TERMINAL_DEFAULTS`` dict gives its defaults. Every terminal is closed after."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from interactive_kit import Terminal


@pytest.fixture
def terminals() -> Iterator[list[Terminal]]:
    opened: list[Terminal] = []
    yield opened
    for terminal in opened:
        terminal.close()


@pytest.fixture
def start(
    request: pytest.FixtureRequest, tmp_path: Path, terminals: list[Terminal]
) -> Callable[..., Terminal]:
    defaults: dict[str, Any] = dict(getattr(request.module, "TERMINAL_DEFAULTS", {}))

    def start(**kwargs: Any) -> Terminal:
        options = {**defaults, **kwargs}
        if options.pop("isolated_home", False):  # HOME under tmp_path: no ~/.claude of the machine
            home = tmp_path / "home"
            home.mkdir(exist_ok=True)
            options["env"] = {"HOME": str(home), **options.get("env", {})}
        terminal = Terminal(tmp_path, **options)
        terminals.append(terminal)
        terminal.ready()
        return terminal

    return start
