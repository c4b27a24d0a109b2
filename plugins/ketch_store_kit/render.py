"""Showing a stored session: plain text for the terminal, Markdown and JSON for export."""

from __future__ import annotations

import json
import time
from typing import Any

from ketch.api import Message, ReasoningPart, SessionSummary, TextPart, ToolCallPart, ToolResultPart
from ketch_store_kit.record import Loaded

STATUS_NOTES = {
    "unknown_outcome": "outcome unknown: ketch stopped while it ran",
    "dispatched": "running (or its process is still alive)",
}


def when(ts: float | None) -> str:
    if not ts:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts))


def label(summary: SessionSummary) -> str:
    return summary.name or summary.title or "(untitled)"


def summaries_table(rows: list[SessionSummary], *, show_workspace: bool) -> str:
    header = f"{'ID':<36}  {'UPDATED':<16}  {'MSGS':>5}  {'MODEL':<24}  NAME"
    if show_workspace:
        header += " / WORKSPACE"
    lines = [header]
    for row in rows:
        line = f"{row.id:<36}  {when(row.updated):<16}  {row.messages:>5}  {row.model[:24]:<24}  {label(row)}"
        if show_workspace:
            line += f"  [{row.workspace}]"
        lines.append(line)
    return "\n".join(lines)


def turns(loaded: Loaded) -> list[dict[str, Any]]:
    """The session's turns as the kernel numbers them (each prompt starts one), with
    the rewound ones marked: what ``sessions rewind ID TURN`` counts."""
    from ketch_context_kit.marks import rewound as marks
    from ketch_context_kit.turns import prompt_numbers

    rewound = marks(loaded.record.state)
    numbers = prompt_numbers(loaded.record.transcript)
    return [
        {"n": n, "message_id": m.id, "prompt": m.text, "rewound": m.id in rewound}
        for m in loaded.record.transcript
        if (n := numbers.get(m.id))
    ]


def _turn_heading(message: Message, numbers: dict[str, int], rewound: set[str]) -> str | None:
    n = numbers.get(message.id)
    if n is None:
        return None
    return f"turn {n}" + (
        " · rewound (kept in the transcript, not in the conversation)"
        if message.id in rewound
        else ""
    )


def to_json(loaded: Loaded) -> dict[str, Any]:
    record = loaded.record
    data = record.model_dump(mode="json")
    data["turns"] = turns(loaded)
    data["title"] = loaded.title
    data["created"] = loaded.created
    data["updated"] = loaded.updated
    data["operations"] = [op.as_dict() for op in loaded.operations]
    data["timeline"] = loaded.timeline
    data["subagents"] = [
        {
            "agent_id": child.agent_id,
            **child.info,
            "transcript": [m.model_dump(mode="json") for m in child.loaded.record.transcript],
            "operations": [op.as_dict() for op in child.loaded.operations],
        }
        for child in loaded.children
    ]
    return data


def _clip(text: str, lines: int | None) -> str:
    if lines is None:
        return text
    rows = text.splitlines()
    if len(rows) <= lines:
        return text
    return (
        "\n".join(rows[:lines])
        + f"\n… ({len(rows) - lines} more lines; `ketch sessions export` has everything)"
    )


def _indent(text: str, prefix: str = "    ") -> str:
    return "\n".join(prefix + line for line in (text.splitlines() or [""]))


def text_view(loaded: Loaded, *, clip: int | None = 12) -> str:
    from ketch_context_kit.compaction import pinned, records

    record = loaded.record
    usage = record.usage
    compactions, pins = records(record.state), pinned(record.state)
    out = [
        f"session   {record.id}",
        f"name      {record.name or loaded.title or '(untitled)'}",
        f"workspace {record.workspace}",
        f"model     {record.provider}/{record.model}   mode {record.mode}",
        f"created   {when(loaded.created)}   updated {when(loaded.updated)}",
        f"tokens    input {usage.input_tokens}, output {usage.output_tokens}, cached {usage.cached_tokens}",
        f"messages  {len(record.transcript)}"
        + (f"   compactions {len(compactions)}" if compactions else "")
        + (f"   pins {len(pins)}" if pins else ""),
        "",
        "── transcript ──",
    ]
    numbers, rewound = _numbering(record)
    for message in record.transcript:
        heading = _turn_heading(message, numbers, rewound)
        if heading:
            out.append(f"── {heading} ──")
        out.append(_message_text(message, clip))
    out += ["", "── operations ──"]
    out += _operation_lines(loaded)
    noted = _summary_lines(loaded)
    if noted:
        out += ["", "── other journal entries ──", *noted]
    if record.unknown_outcomes:
        out += [
            "",
            f"{len(record.unknown_outcomes)} operation(s) with an unknown outcome: check their effects before repeating them.",
        ]
    for child in loaded.children:
        out += ["", f"── subagent {_child_title(child)} ──"]
        out += [
            _indent(_message_text(message, clip), "  ")
            for message in child.loaded.record.transcript
        ]
        out += [_indent(line, "  ") for line in _operation_lines(child.loaded)]
    return "\n".join(out)


def _operation_lines(loaded: Loaded) -> list[str]:
    if not loaded.operations:
        return ["(no tool calls)"]
    out = []
    for op in loaded.operations:
        note = STATUS_NOTES.get(op.status, "")
        args = json.dumps(op.input, ensure_ascii=False)
        if len(args) > 120:
            args = args[:117] + "..."
        out.append(
            f"{when(op.dispatched_at or op.finished_at):<16}  {op.name:<16} {op.status:<16} {args}"
            + (f"   ← {note}" if note else "")
        )
    return out


def _summary_lines(loaded: Loaded) -> list[str]:
    """Entries of event types a plugin added (the sandbox's ``egress``, one per
    connection), each shown by the one-line ``summary`` it carries."""
    return [
        f"{when(entry['ts']):<16}  {entry['kind']:<16} {entry['data']['summary']}"
        for entry in loaded.timeline
        if isinstance(entry.get("data"), dict) and isinstance(entry["data"].get("summary"), str)
    ]


def _child_title(child: Any) -> str:
    info = child.info
    title = f"{info.get('name') or '?'} ({child.agent_id})"
    if info.get("description"):
        title += f": {info['description']}"
    ended = info.get("stop_reason") or (
        "running when ketch stopped" if info.get("status") != "finished" else ""
    )
    return title + (f" · {ended}" if ended else "")


def _numbering(record: Any) -> tuple[dict[str, int], set[str]]:
    from ketch_context_kit.marks import rewound
    from ketch_context_kit.turns import prompt_numbers

    return prompt_numbers(record.transcript), rewound(record.state)


def _message_text(message: Message, clip: int | None) -> str:
    tag = message.role + (" (ketch)" if message.synthetic else "")
    lines: list[str] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            lines.append(f"[{tag}] {_clip(part.text, clip)}")
        elif isinstance(part, ReasoningPart):
            lines.append(f"[{tag} reasoning] {_clip(part.text or '(redacted)', clip)}")
        elif isinstance(part, ToolCallPart):
            lines.append(
                f"[{tag}] → {part.name} {json.dumps(part.input, ensure_ascii=False)}  ({part.id})"
            )
        elif isinstance(part, ToolResultPart):
            mark = "ok" if part.ok else "error"
            lines.append(f"[tool {part.name} {mark}]\n{_indent(_clip(part.output, clip))}")
    return "\n".join(lines) if lines else f"[{tag}] (empty)"


def markdown(loaded: Loaded) -> str:
    record = loaded.record
    title = record.name or loaded.title or record.id
    out = [
        f"# {title}",
        "",
        f"- session: `{record.id}`",
        f"- workspace: `{record.workspace}`",
        f"- model: {record.provider}/{record.model}, mode {record.mode}",
        f"- created {when(loaded.created)}, updated {when(loaded.updated)}",
        f"- tokens: input {record.usage.input_tokens}, output {record.usage.output_tokens}, cached {record.usage.cached_tokens}",
        "",
    ]
    out += _markdown_body(loaded, "##")
    for child in loaded.children:
        out += [f"## Subagent {_child_title(child)}", ""]
        out += _markdown_body(child.loaded, "###")
    return "\n".join(out)


def _markdown_body(loaded: Loaded, level: str) -> list[str]:
    out: list[str] = []
    numbers, rewound = _numbering(loaded.record)
    for message in loaded.record.transcript:
        turn = _turn_heading(message, numbers, rewound)
        if turn:
            out += [f"{level} {turn[0].upper()}{turn[1:]}", ""]
        heading = {"user": "User", "assistant": "Assistant", "tool": "Tool results"}[message.role]
        out.append(f"{level} {heading}" + (" (added by ketch)" if message.synthetic else ""))
        out.append("")
        for part in message.parts:
            if isinstance(part, TextPart):
                out += [part.text, ""]
            elif isinstance(part, ReasoningPart):
                out += [
                    "<details><summary>reasoning</summary>",
                    "",
                    part.text or "(redacted)",
                    "",
                    "</details>",
                    "",
                ]
            elif isinstance(part, ToolCallPart):
                out += [
                    f"**→ {part.name}** (`{part.id}`)",
                    "",
                    _fence(json.dumps(part.input, ensure_ascii=False, indent=2), "json"),
                    "",
                ]
            elif isinstance(part, ToolResultPart):
                out += [
                    f"**{part.name}** {'ok' if part.ok else 'error'} (`{part.tool_call_id}`)",
                    "",
                    _fence(part.output),
                    "",
                ]
    if loaded.operations:
        out += [f"{level} Operations", "", "| time | tool | status |", "|---|---|---|"]
        for op in loaded.operations:
            out.append(f"| {when(op.dispatched_at or op.finished_at)} | {op.name} | {op.status} |")
        out.append("")
    return out


def _fence(text: str, lang: str = "") -> str:
    fence = "```"
    while fence in text:
        fence += "`"
    return f"{fence}{lang}\n{text}\n{fence}"
