"""Which plugins may stop or change a prompt, and what each says it leaves alone.

The record keeps a pattern from every plugin that implements a prompt hook; one that
implements such a hook and does not answer ``verbatim_prompts`` means no record at all
(fail closed). In-process, with every bundled plugin and a third-party one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ketch.api import hookimpl
from ketch.testing import Harness, text
from ketch_early_request import verbatim_patterns


class QuietGate:
    """A third-party plugin that may stop a prompt and knows nothing of this one."""

    @hookimpl
    def ketch_user_prompt_submit(self, session: Any, prompt: str) -> Any:
        return None


class DeclaredGate(QuietGate):
    @hookimpl(optionalhook=True)
    def verbatim_prompts(self, session: Any) -> str:
        return "(?s)(?!/).*"


class BrokenDeclaration(QuietGate):
    @hookimpl(optionalhook=True)
    def verbatim_prompts(self, session: Any) -> str:
        raise RuntimeError("broken")


def patterns_with(tmp_path: Path, *plugins: tuple[str, Any], config: str = "") -> Any:
    harness = Harness.create(
        tmp_path, script=[text("ok")], plugins=list(plugins), bundled=True, config=config or None
    )
    return verbatim_patterns(harness.session)


def test_every_bundled_prompt_plugin_declares_what_it_leaves_alone(tmp_path: Path) -> None:
    patterns = patterns_with(tmp_path)
    assert patterns is not None
    assert "[^@]*" in patterns  # attach: a prompt without an @ mentions nothing


def test_a_prompt_plugin_that_does_not_say_means_no_record(tmp_path: Path) -> None:
    assert patterns_with(tmp_path, ("quiet_gate", QuietGate())) is None


def test_a_declaration_that_raises_counts_as_none(tmp_path: Path) -> None:
    assert patterns_with(tmp_path, ("broken", BrokenDeclaration())) is None


def test_a_declared_gate_adds_its_pattern(tmp_path: Path) -> None:
    patterns = patterns_with(tmp_path, ("declared", DeclaredGate()))
    assert patterns is not None and "(?s)(?!/).*" in patterns


def test_a_configured_prompt_hook_means_no_record(tmp_path: Path) -> None:
    config = '[[hooks.UserPromptSubmit]]\ncommand = "true"\n'
    assert patterns_with(tmp_path, config=config) is None
