"""``/btw QUESTION``: a side question, answered without touching the session.

The model gets the conversation as it stands (the active context, cut before a step
whose calls are still running) and the question, and no tools: it can only answer.
Nothing is appended to the transcript, no event reaches the session's listeners (so
nothing is stored), and the next request is exactly what it would have been. It works
at the prompt and while a turn runs (then beside it).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import History
    from ketch_interactive.shell import Shell

NOTE = (
    "[ketch] A side question from the user, answered on the side: your answer is not added "
    "to the conversation and you cannot use tools for it. Answer briefly from what you know "
    "so far.\n\n"
)
MAX_OUTPUT = 2_000


def settled(active: History) -> History:
    """The context without a trailing step whose tool calls have no results yet."""
    from ketch.api import pending_tool_calls

    messages = tuple(active)
    while messages and pending_tool_calls(messages):
        last = max(i for i, m in enumerate(messages) if m.role == "assistant")
        messages = messages[:last]
    return messages


async def ask(shell: Shell, question: str) -> None:
    from rich.text import Text

    from ketch.api import Completed, Message, ProviderRequest, TextDelta
    from ketch_context_kit.request import measure

    session = shell.session
    renderer = shell.renderer
    budget = measure(session, [])
    request = ProviderRequest(
        model=session.model,
        system=budget.system,
        messages=(*settled(session.active), Message.user(NOTE + question)),
        tools=(),
        max_output_tokens=MAX_OUTPUT,
    )
    renderer.line(f"↳ /btw: {question}  (on the side: not added to the conversation)", "dim italic")
    chunks: list[str] = []
    completed: Completed | None = None
    try:
        async for item in session.provider.stream(request):
            if isinstance(item, TextDelta):
                chunks.append(item.text)
            elif isinstance(item, Completed):
                completed = item
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # noqa: BLE001 - a side question never breaks the shell
        renderer.line(f"✗ /btw: {getattr(exc, 'message', None) or exc}", "red")
        return
    answer = (completed.message.text if completed is not None else "") or "".join(chunks)
    renderer.print_answer(answer.strip() or "(no answer)")
    if completed is not None:
        usage = completed.usage
        renderer.line(
            Text(f"── btw · in {usage.input_tokens:,} · out {usage.output_tokens:,} ──", "dim")
        )
