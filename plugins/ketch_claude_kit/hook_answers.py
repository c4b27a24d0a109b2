"""What a Claude Code hook answered, and what it means for ketch.

Two kinds of hooks answer in Claude Code's contract: the commands of ``[hooks]``
(``ketch_hooks``: an exit code, stdout, stderr) and the callbacks an Agent SDK program
registers (``ketch_headless``: the callback's JSON, over the control protocol). Both are
read into a :class:`HookAnswer`, and the functions below turn a list of them into the
:class:`ketch.verdicts.HookVerdict` the kernel expects, so both kinds mean the same.

Exit code 0: success; stdout is JSON when its first non-blank character is ``{``,
else plain text. Exit code 2: a blocking error, with stderr as the reason. Any other
exit: a non-blocking error. JSON is honoured whatever the exit code. The JSON fields
honoured: ``continue`` / ``stopReason``, ``systemMessage``, ``decision`` (``"block"``,
and the legacy ``"approve"``) with ``reason``, and in ``hookSpecificOutput``:
``permissionDecision`` (allow | deny | ask | defer) with ``permissionDecisionReason``,
``updatedInput`` and ``additionalContext``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ketch.api import HookVerdict

MAX_TEXT = 10_000  # characters of any one text a hook gives the model or the person


def clip(text: str) -> str:
    text = text.strip()
    if len(text) <= MAX_TEXT:
        return text
    return text[:MAX_TEXT] + f"\n[ketch: cut at {MAX_TEXT} characters]"


@dataclass(frozen=True)
class HookAnswer:
    label: str  # how the hook is named to the person (its command line, the SDK callback)
    code: int | None  # exit code (0 for a callback that answered); None: no answer at all
    data: dict[str, Any] = field(default_factory=dict)  # the JSON it answered, if any
    text: str = ""  # stdout that was not JSON
    raw_stderr: str = ""
    problem: str = ""  # what to report to the person (a failure, invalid JSON)

    @property
    def finished(self) -> bool:
        return self.code is not None

    @property
    def blocks(self) -> bool:
        """Exit code 2: a blocking error."""
        return self.code == 2

    @property
    def stderr(self) -> str:
        return clip(self.raw_stderr)

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


def from_process(
    label: str, code: int | None, stdout: str, stderr: str, problem: str = ""
) -> HookAnswer:
    """A command hook's answer from its exit code and output (``code`` None: it did not
    finish, and ``problem`` says why)."""
    if code is None:
        return HookAnswer(label, None, raw_stderr=stderr, problem=problem)
    data: dict[str, Any] = {}
    text = ""
    stripped = stdout.strip()
    if stripped.startswith("{"):
        from ketch_text_kit.jsonline import LineProblem, parse

        try:
            parsed = parse(stripped)
        except LineProblem as exc:
            problem = f"printed JSON that cannot be used: {exc.message}; its answer was ignored"
        else:
            if isinstance(parsed, dict):
                data = parsed
    else:
        text = stripped
    if code not in (0, 2) and not problem:
        first = next((line for line in stderr.strip().splitlines() if line.strip()), "")
        problem = f"failed ({first[:200] or f'exit {code}'}); not blocking"
    return HookAnswer(label, code, data, text, stderr, problem)


def from_json(label: str, data: Any, problem: str = "") -> HookAnswer:
    """A callback's answer (an SDK program's hook): its JSON object, or a problem."""
    if problem or not isinstance(data, dict):
        return HookAnswer(
            label, None, problem=problem or "answered something that is not an object"
        )
    return HookAnswer(label, 0, dict(data))


# --- what answers mean, per event ------------------------------------------------------


def stopper(answers: list[HookAnswer]) -> HookAnswer | None:
    """The first answer that said ``continue: false``."""
    return next((a for a in answers if not a.goes_on), None)


def pre_tool_use(answers: list[HookAnswer]) -> tuple[HookVerdict | None, dict[str, Any] | None]:
    """PreToolUse: exit 2 or ``permissionDecision: "deny"`` refuses, ``"ask"`` (and
    ``"defer"``) asks, ``"allow"`` spares a question; deny > ask > allow. Returns the
    verdict (without the input) and the raw ``updatedInput`` a hook gave, if any."""
    stop = stopper(answers)
    if stop is not None:
        reason = stop.stop_reason or f"PreToolUse hook `{stop.label}` said continue: false"
        return HookVerdict(stop=True, stop_reason=reason), None
    decisions: list[tuple[str, str]] = []
    for answer in answers:
        if answer.blocks:
            decisions.append(
                ("deny", answer.stderr or f"PreToolUse hook `{answer.label}` blocked it")
            )
            continue
        specific = answer.specific
        decision = specific.get("permissionDecision")
        reason = clip(str(specific.get("permissionDecisionReason") or ""))
        if decision is None and answer.decision in ("approve", "block"):  # the legacy form
            decision, reason = ("allow" if answer.decision == "approve" else "deny"), answer.reason
        if decision == "defer":
            decision = "ask"
        if decision in ("allow", "deny", "ask"):
            decisions.append(
                (str(decision), reason or f"PreToolUse hook `{answer.label}` said {decision}")
            )
    updated = next(
        (
            a.specific["updatedInput"]
            for a in answers
            if isinstance(a.specific.get("updatedInput"), dict)
        ),
        None,
    )
    chosen = next((d for rank in ("deny", "ask", "allow") for d in decisions if d[0] == rank), None)
    if chosen is None:
        return None, updated
    return HookVerdict(decision=chosen[0], reason=chosen[1]), updated  # type: ignore[arg-type]


def after_tool_use(answers: list[HookAnswer]) -> HookVerdict | None:
    """PostToolUse / PostToolUseFailure: exit 2's stderr, ``decision: "block"``'s reason
    and ``additionalContext`` go to the model beside the result."""
    notes = [a.stderr for a in answers if a.blocks and a.stderr]
    notes += [a.reason for a in answers if a.decision == "block" and a.reason]
    notes += [a.context for a in answers if a.context]
    stop = stopper(answers)
    if not notes and stop is None:
        return None
    return HookVerdict(
        context="\n".join(notes) or None,
        stop=stop is not None,
        stop_reason=stop.stop_reason if stop else "",
    )


def prompt_submit(answers: list[HookAnswer]) -> HookVerdict | None:
    """UserPromptSubmit: exit 2 or ``decision: "block"`` drops the prompt (the reason
    is shown); ``additionalContext`` and plain stdout go to the model with it."""
    blocked = [a.stderr or f"`{a.label}` said no" for a in answers if a.blocks]
    blocked += [
        a.reason or f"`{a.label}` blocked it"
        for a in answers
        if not a.blocks and a.decision == "block"
    ]
    if blocked:
        return HookVerdict(block=True, reason="; ".join(blocked))
    context = "\n".join(
        t
        for a in answers
        if a.finished and not a.blocks
        for t in (a.context, a.text if a.code == 0 else "")
        if t
    )
    stop = stopper(answers)
    if not context and stop is None:
        return None
    return HookVerdict(
        context=("\n" + context) if context else None,
        stop=stop is not None,
        stop_reason=stop.stop_reason if stop else "",
    )


def keeps_going(answers: list[HookAnswer]) -> HookVerdict | None:
    """Stop and SubagentStop: a block (exit 2, ``decision: "block"``) or
    ``additionalContext`` keeps the agent going with the reason."""
    if stopper(answers) is not None:
        return None  # continue: false: it stops, whatever else was said
    reasons = [a.stderr for a in answers if a.blocks and a.stderr]
    reasons += [a.reason for a in answers if a.decision == "block" and a.reason]
    reasons += [a.context for a in answers if a.context]
    if not reasons and not any(a.blocks or a.decision == "block" for a in answers):
        return None
    return HookVerdict(block=True, reason="\n".join(reasons) or "a hook asked to continue")


def added_context(answers: list[HookAnswer], *, plain_text: bool = False) -> str:
    """SessionStart / SubagentStart: the context the hooks give the model."""
    return "\n".join(
        t for a in answers if a.code == 0 for t in (a.context, a.text if plain_text else "") if t
    )
