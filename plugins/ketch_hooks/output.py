"""What a hook answered, read as Claude Code reads it.

Exit code 0: success; stdout is JSON when its first non-blank character is ``{``,
else plain text. Exit code 2: a blocking error, with stderr as the reason. Any other
exit: a non-blocking error, reported to the person with stderr's first line. JSON on
stdout is honoured whatever the exit code. A hook that timed out or did not start
answered nothing, and that is reported.

The JSON fields honoured: ``continue`` / ``stopReason``, ``systemMessage``,
``decision`` (``"block"``, and the legacy ``"approve"``) with ``reason``, and in
``hookSpecificOutput``: ``permissionDecision`` (allow | deny | ask | defer) with
``permissionDecisionReason``, ``updatedInput`` and ``additionalContext``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ketch_text_kit.jsonline import LineProblem, parse

if TYPE_CHECKING:  # pragma: no cover
    from ketch_hooks.runner import HookRun

MAX_TEXT = 10_000  # characters of any one text a hook gives the model or the person


def clip(text: str) -> str:
    text = text.strip()
    if len(text) <= MAX_TEXT:
        return text
    return text[:MAX_TEXT] + f"\n[ketch: cut at {MAX_TEXT} characters]"


@dataclass(frozen=True)
class Answer:
    run: HookRun
    data: dict[str, Any] = field(default_factory=dict)  # the JSON it printed, if any
    text: str = ""  # stdout that was not JSON
    problem: str = ""  # what to report to the person (a failure, invalid JSON)

    @property
    def finished(self) -> bool:
        return self.run.code is not None

    @property
    def blocks(self) -> bool:
        """Exit code 2: a blocking error."""
        return self.run.code == 2

    @property
    def stderr(self) -> str:
        return clip(self.run.stderr)

    @property
    def goes_on(self) -> bool:
        return self.data.get("continue", True) is not False

    @property
    def stop_reason(self) -> str:
        return clip(str(self.data.get("stopReason") or ""))

    @property
    def system_message(self) -> str:
        return clip(str(self.data.get("systemMessage") or ""))

    @property
    def decision(self) -> str:
        value = self.data.get("decision")
        return value if isinstance(value, str) else ""

    @property
    def reason(self) -> str:
        return clip(str(self.data.get("reason") or ""))

    @property
    def specific(self) -> dict[str, Any]:
        value = self.data.get("hookSpecificOutput")
        return value if isinstance(value, dict) else {}

    @property
    def context(self) -> str:
        return clip(str(self.specific.get("additionalContext") or ""))


def read(run: HookRun) -> Answer:
    if run.code is None:
        return Answer(run, problem=run.problem)
    data: dict[str, Any] = {}
    text = ""
    problem = ""
    stripped = run.stdout.strip()
    if stripped.startswith("{"):
        try:
            parsed = parse(stripped)
        except LineProblem as exc:
            problem = f"printed JSON that cannot be used: {exc.message}; its answer was ignored"
        else:
            if isinstance(parsed, dict):
                data = parsed
    else:
        text = stripped
    if run.code not in (0, 2) and not problem:
        first = next((line for line in run.stderr.strip().splitlines() if line.strip()), "")
        problem = f"failed ({first[:200] or f'exit {run.code}'}); not blocking"
    return Answer(run, data, text, problem)
