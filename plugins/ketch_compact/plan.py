"""The deterministic part of every compaction: what to prune, what to summarize, what stays.

1. Split the active context into turns. The most recent ``keep_recent_turns`` and
   every turn holding a pinned message are protected: they stay byte-identical.
2. Prune: in the other (old) turns, replace each large tool result (over
   ``prune_min_tokens``) with a short note, oldest first, until the target is met.
   The call stays, so the model knows what it ran and can run it again.
3. Summarize: if pruning is not enough, replace the oldest old turns, as few as
   meet the target, by one summary message at the head of the context. An earlier
   summary is folded in (re-rendered from the transcript it stood for).
4. Last resort: when the protected turns alone pass the effective capacity, prune old
   tool results of the current turn too (never its latest step), so a long agentic
   turn can go on; the record and a notice say so.

The summary names the instruction files still in force and every file the session
changed. Nothing here calls a model; the model summarizer only swaps the summary body.
A compaction that would not make the context smaller changes nothing.

Sizes come from the session's calibrated estimator (cached per message), and the plan
keeps running totals, so a 200k-token history plans in milliseconds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ketch.api import Message, ToolResultPart
from ketch_compact.changes import describe, files_changed
from ketch_compact.render import FULL, SUMMARY_MARK, TurnView, clip, fit
from ketch_compact.settings import CompactorSettings
from ketch_context_kit.budget import TokenEstimator, estimator_for
from ketch_context_kit.compaction import CompactionRequest, CompactionResult, origins, records
from ketch_context_kit.turns import prompt_numbers, split_turns

MIN_SUMMARY_TOKENS = 300


def prune_note(output: str, tokens: int) -> str:
    lines = output.count("\n") + 1
    return (
        f"[ketch] Output pruned by compaction (was ~{tokens:,} tokens, {lines:,} lines). "
        f"It began: {clip(output, 160)} Run the tool again if you need it in full."
    )


@dataclass
class Plan:
    request: CompactionRequest
    estimator: TokenEstimator
    messages: tuple[Message, ...]
    spans: list[Any]
    sizes: list[int]
    protected: list[int]  # span indexes kept verbatim (recent and pinned)
    pinned: list[int]
    summarized: list[int] = field(default_factory=list)  # span indexes the summary replaces
    prunes: dict[int, int] = field(default_factory=dict)  # message index -> its size once pruned
    last_resort: list[int] = field(
        default_factory=list
    )  # message indexes pruned in protected turns
    summary_budget: int = 0
    header: str = ""
    views: list[TurnView] = field(default_factory=list)  # the summarized turns, from the transcript
    notes: list[str] = field(default_factory=list)  # for the user (notices)
    _pruned_size: dict[int, int] = field(default_factory=dict)

    @property
    def settings(self) -> CompactorSettings:
        return self.request.session.kernel.settings.of(CompactorSettings)

    def span_size(self, s: int, *, pruned: bool = False) -> int:
        span = self.spans[s]
        if not pruned:
            return sum(self.sizes[span.start : span.end])
        return sum(
            self.pruned_size(m) if self.is_candidate(m) else self.sizes[m]
            for m in range(span.start, span.end)
        )

    def total(self, summary_tokens: int = 0) -> int:
        kept = self.request.system_tokens + summary_tokens + sum(self.sizes)
        kept -= sum(self.span_size(s) for s in self.summarized)
        gone = {i for s in self.summarized for i in range(self.spans[s].start, self.spans[s].end)}
        return kept + sum(
            size - self.sizes[index] for index, size in self.prunes.items() if index not in gone
        )

    def big_results(self, index: int) -> list[tuple[ToolResultPart, int]]:
        message = self.messages[index]
        if message.role != "tool":
            return []
        limit = self.settings.prune_min_tokens
        found = []
        for part in message.tool_results:
            if len(part.output) > limit * 2:  # cheap first test; estimates are >= chars / 8
                tokens = self.estimator.text(part.output)
                if tokens > limit:
                    found.append((part, tokens))
        return found

    def is_candidate(self, index: int) -> bool:
        return index in self._pruned_size or bool(self.big_results(index))

    def pruned_size(self, index: int) -> int:
        """The message's size with its large outputs replaced by notes (without building it)."""
        if index not in self._pruned_size:
            size = self.sizes[index]
            for part, tokens in self.big_results(index):
                size += self.estimator.text(prune_note(part.output, tokens)) - tokens
            self._pruned_size[index] = size
        return self._pruned_size[index]

    def pruned_message(self, index: int) -> Message:
        message = self.messages[index]
        notes = {
            id(part): prune_note(part.output, tokens) for part, tokens in self.big_results(index)
        }
        parts = tuple(
            part.model_copy(update={"output": notes[id(part)]}) if id(part) in notes else part
            for part in message.parts
        )
        return Message(role=message.role, parts=parts, synthetic=message.synthetic)


def make_plan(request: CompactionRequest) -> Plan:
    session = request.session
    estimator = estimator_for(session)
    messages = tuple(request.messages)
    transcript = getattr(session, "transcript", messages)
    spans = split_turns(messages, prompt_numbers(transcript))
    sizes = [estimator.message(m) for m in messages]
    settings = session.kernel.settings.of(CompactorSettings)
    recent = list(
        range(max(len(spans) - session.kernel.settings.compaction.keep_recent_turns, 0), len(spans))
    )
    pinned = [
        i
        for i, span in enumerate(spans)
        if request.pinned.intersection(span.ids) and i not in recent
    ]
    plan = Plan(
        request, estimator, messages, spans, sizes, sorted(set(recent) | set(pinned)), pinned
    )
    old = [i for i in range(len(spans)) if i not in plan.protected]
    if all(spans[i].number is None for i in old):
        old = []  # only an earlier summary is left: summarizing it again gains nothing
    target = request.target_tokens
    manual = request.reason == "command"
    known = origins(records(getattr(session, "state", {})))

    candidates = _prune_candidates(plan, old, known)
    if not manual:
        _prune_until(plan, candidates, target)
        if plan.total() <= target:
            return _last_resort(plan)
        plan.prunes.clear()
    plan.header = _header(plan)
    header_tokens = estimator.text(plan.header)
    # Choose how many of the oldest old turns to summarize: as few as meet the target,
    # assuming the rest get pruned; all of them for /compact.
    cap = settings.summary_max_tokens
    base = request.system_tokens + sum(plan.span_size(s) for s in plan.protected)
    count = len(old)
    if not manual:
        kept_cost = [plan.span_size(s, pruned=True) for s in old]
        kept_total = sum(kept_cost)
        summary_cost = header_tokens
        for k, s in enumerate(old, 1):
            span = spans[s]
            summary_cost += estimator.text(
                TurnView.of(span.number, messages[span.start : span.end]).render(FULL)
            )
            kept_total -= kept_cost[k - 1]
            if base + min(summary_cost, cap) + kept_total <= target:
                count = k
                break
    plan.summarized = old[:count]
    kept_total = sum(plan.span_size(s, pruned=True) for s in old[count:])
    room = target - base - kept_total
    plan.summary_budget = max(min(room, cap), min(MIN_SUMMARY_TOKENS, cap))
    plan.views = _views(plan, known)
    # Prune the kept old turns only as far as the target needs.
    summarized = set(plan.summarized)
    kept_candidates = [
        i for i in candidates if not any(spans[s].start <= i < spans[s].end for s in summarized)
    ]
    _prune_until(plan, kept_candidates, target, extra=plan.summary_budget)
    return _last_resort(plan)


def _prune_candidates(plan: Plan, span_indexes: Sequence[int], known: dict[str, Any]) -> list[int]:
    found = []
    for s in span_indexes:
        span = plan.spans[s]
        for index in range(span.start, span.end):
            if plan.messages[index].id not in known and plan.big_results(index):
                found.append(index)
    return found


def _prune_until(plan: Plan, candidates: Sequence[int], target: int, extra: int = 0) -> None:
    total = plan.total(extra)
    for index in candidates:
        if total <= target:
            return
        if index in plan.prunes:
            continue
        plan.prunes[index] = plan.pruned_size(index)
        total += plan.prunes[index] - plan.sizes[index]


def _last_resort(plan: Plan) -> Plan:
    """Protected turns alone overflow: prune the current turn's older tool results."""
    summary = plan.summary_budget if plan.summarized else 0
    if not plan.settings.prune_current_turn or plan.total(summary) <= plan.request.capacity_tokens:
        return plan
    # The latest step (the last assistant message and what follows) is never touched.
    last_assistant = max(
        (i for i, m in enumerate(plan.messages) if m.role == "assistant"),
        default=len(plan.messages),
    )
    recent = [s for s in plan.protected if s not in plan.pinned]
    candidates = [i for i in _prune_candidates(plan, recent, {}) if i < last_assistant]
    before = len(plan.prunes)
    _prune_until(plan, candidates, plan.request.target_tokens, extra=summary)
    plan.last_resort = [i for i in candidates if i in plan.prunes]
    if len(plan.prunes) > before:
        plan.notes.append(
            f"the current turn alone nearly fills the context: pruned {len(plan.last_resort)} of its older tool outputs "
            "(the saved transcript keeps them)"
        )
    return plan


def _header(plan: Plan) -> str:
    session = plan.request.session
    settings = plan.settings
    numbers = [
        plan.spans[s].number for s in plan.protected if s in plan.pinned and plan.spans[s].number
    ]
    lines = [
        f"{SUMMARY_MARK}: older turns were compacted to fit the context window. "
        "The saved transcript keeps every message in full; this summary stands in for them."
    ]
    context_state = (
        session.state.get("context") if isinstance(getattr(session, "state", None), dict) else None
    )
    instruction_files = (context_state or {}).get("instruction_files") or []
    if instruction_files:
        lines.append(
            "Instruction files still in force (re-read from disk after this compaction; the system prompt "
            "carries them): " + ", ".join(str(f) for f in instruction_files)
        )
    changed = files_changed(getattr(session, "transcript", ()), settings.changed_file_tools)
    lines.append(
        "Files changed in this session: " + (describe(changed) if changed else "none so far")
    )
    if numbers:
        lines.append("Pinned turns " + ", ".join(str(n) for n in numbers) + " follow verbatim.")
    if plan.request.instructions:
        lines.append(
            "The user asked this summary to focus on: " + clip(plan.request.instructions, 500)
        )
    return "\n".join(lines)


def _views(plan: Plan, known: dict[str, Any]) -> list[TurnView]:
    """The summarized turns, re-read from the transcript (an earlier summary included)."""
    session = plan.request.session
    transcript = tuple(getattr(session, "transcript", ()))
    covered: set[str] = set()
    orphans: list[Message] = []
    transcript_ids = {m.id for m in transcript}
    for s in plan.summarized:
        span = plan.spans[s]
        for message in plan.messages[span.start : span.end]:
            if message.id in transcript_ids:
                covered.add(message.id)
            elif message.id in known:
                covered.update(known[message.id][1])
            else:
                orphans.append(message)  # someone else's summary: keep its text, bounded
    chosen = [m for m in transcript if m.id in covered]
    numbers = prompt_numbers(transcript)
    views = [
        TurnView.of(span.number, chosen[span.start : span.end])
        for span in split_turns(chosen, numbers)
    ]
    if orphans:
        views.insert(
            0,
            TurnView(None, "", "", [], [SUMMARY_MARK + "\n" + "\n".join(m.text for m in orphans)]),
        )
    return views


def deterministic_body(plan: Plan) -> str:
    budget = plan.summary_budget - plan.estimator.text(plan.header) - 10
    rendered, _ = fit(plan.views, max(budget, 50), plan.estimator.text)
    return "## Earlier turns (oldest first)\n" + "\n".join(rendered)


def build(plan: Plan, body: str | None, compactor: str) -> CompactionResult:
    """The new active context: summary first, then every kept turn in its order."""
    request = plan.request
    estimator = plan.estimator
    output: list[Message] = []
    record: list[dict[str, Any]] = []
    after = request.system_tokens
    if plan.summarized:
        summary = Message.user(
            plan.header + "\n\n" + (body if body is not None else deterministic_body(plan)),
            synthetic=True,
        )
        replaced = [
            m.id
            for s in plan.summarized
            for m in plan.messages[plan.spans[s].start : plan.spans[s].end]
        ]
        turns = [plan.spans[s].number for s in plan.summarized if plan.spans[s].number]
        output.append(summary)
        after += estimator.message(summary)
        record.append({"how": "summary", "replaced": replaced, "by": summary.id, "turns": turns})
    gone = set(plan.summarized)
    for s, span in enumerate(plan.spans):
        if s in gone:
            continue
        for index in range(span.start, span.end):
            if index not in plan.prunes:
                output.append(plan.messages[index])
                after += plan.sizes[index]
                continue
            pruned = plan.pruned_message(index)
            output.append(pruned)
            after += estimator.message(pruned)
            item: dict[str, Any] = {
                "how": "pruned",
                "replaced": [plan.messages[index].id],
                "by": pruned.id,
                "turns": [span.number] if span.number else [],
            }
            if index in plan.last_resort:
                item["last_resort"] = True
            record.append(item)
    before = request.system_tokens + sum(plan.sizes)
    messages: tuple[Message, ...] = tuple(output)
    if after >= before:
        # A summary longer than what it replaces helps no one: leave the context as it is.
        messages, after, record = plan.messages, before, []
    pruned_count = sum(1 for r in record if r["how"] == "pruned")
    words = []
    if record and plan.summarized:
        words.append(f"summarized {len(plan.views)} turn{'s' if len(plan.views) != 1 else ''}")
    if pruned_count:
        words.append(f"pruned {pruned_count} tool output{'s' if pruned_count != 1 else ''}")
    return CompactionResult(
        messages=messages,
        before_tokens=before,
        after_tokens=after,
        compactor=compactor,
        summary=(", ".join(words) or "nothing to compact")
        + (f"; {plan.notes[0]}" if plan.notes and record else ""),
        record=record,
    )
