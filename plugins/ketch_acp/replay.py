"""``session/load``: the saved conversation replayed as the updates it was made of.

What the person typed comes back as ``user_message_chunk`` (the loop's own notes are
left out), answers as ``agent_message_chunk``, reasoning as ``agent_thought_chunk``,
and each tool call as one ``tool_call`` already finished, with its result.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from acp.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    TextContentBlock,
    ToolCallStart,
    UserMessageChunk,
)
from pydantic import ValidationError

from ketch.api import History, ReasoningPart, TextPart, ToolCallPart
from ketch_acp import toolcalls


def _title(tools: dict[str, Any], call: ToolCallPart) -> str:
    tool = tools.get(call.name)
    if tool is None:
        return call.name
    try:
        return str(tool.summary(tool.input_model.model_validate(call.input)))
    except (ValidationError, Exception):  # noqa: BLE001 - a title is cosmetic
        return call.name


def replay(transcript: History, workspace: Path, tools: dict[str, Any]) -> list[Any]:
    results = {r.tool_call_id: r for m in transcript for r in m.tool_results}
    updates: list[Any] = []
    for message in transcript:
        if message.role == "user":
            if not message.synthetic and message.text:
                updates.append(
                    UserMessageChunk(
                        session_update="user_message_chunk",
                        content=TextContentBlock(type="text", text=message.text),
                    )
                )
            continue
        if message.role != "assistant":
            continue
        for part in message.parts:
            if isinstance(part, ReasoningPart) and part.text:
                updates.append(
                    AgentThoughtChunk(
                        session_update="agent_thought_chunk",
                        content=TextContentBlock(type="text", text=part.text),
                    )
                )
            elif isinstance(part, TextPart) and part.text:
                updates.append(
                    AgentMessageChunk(
                        session_update="agent_message_chunk",
                        content=TextContentBlock(type="text", text=part.text),
                    )
                )
            elif isinstance(part, ToolCallPart):
                result = results.get(part.id)
                updates.append(
                    ToolCallStart(
                        session_update="tool_call",
                        tool_call_id=part.id,
                        title=_title(tools, part),
                        kind=toolcalls.tool_kind(part.name, tools.get(part.name)),  # type: ignore[arg-type]
                        status="completed" if result is not None and result.ok else "failed",
                        content=[toolcalls.text_content(result.output)]
                        if result is not None and result.output
                        else None,
                        locations=toolcalls.locations(part.name, part.input, workspace) or None,
                        raw_input=part.input,
                    )
                )
    return updates
