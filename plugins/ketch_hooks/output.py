"""What a hook command answered, read as Claude Code reads it (the rules live in
:mod:`ketch_claude_kit.hook_answers`, which the Agent SDK's hook callbacks share)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ketch_claude_kit.hook_answers import MAX_TEXT, HookAnswer, clip, from_process

if TYPE_CHECKING:  # pragma: no cover
    from ketch_hooks.runner import HookRun

Answer = HookAnswer
__all__ = ["MAX_TEXT", "Answer", "clip", "read"]


def read(run: HookRun) -> HookAnswer:
    return from_process(run.label, run.code, run.stdout, run.stderr, run.problem)
