"""A scripted provider: plays back a list of responses, and records every request.

A script is a list of responses, one per provider call. Each response is a dict (or a
:class:`Step`) with any of:

* ``text``: the answer text (``chunks`` splits it into several deltas);
* ``reasoning``: reasoning text, streamed before the answer;
* ``tool_calls``: ``[{"name": ..., "input": {...}, "id": optional}]``; an entry with
  ``"raw": "<not json>"`` gives a call whose arguments failed to parse;
* ``stop_reason``: defaults to ``tool_use`` when there are calls, else ``end_turn``;
* ``usage``: ``{"input_tokens": .., "output_tokens": ..}``;
* ``error``: ``{"kind": "rate_limit", "message": .., "retryable": true, "retry_after": 0}``
  raised instead of answering (``after_text`` streams some text first);
* ``delay``: seconds to wait before completing (for cancellation tests);
* ``chunk_delay``: seconds to wait after each chunk of ``text`` (a slow stream);
* ``truncate``: end the stream without a completed response;
* ``when``: text the request's first user message must contain for this response to
  answer it (the prompt of the root session, or the task a subagent got).

Requests are answered in order of arrival, each with the first remaining response
whose ``when`` it matches (a response without ``when`` matches any request): sessions
that run side by side (subagents) each get their own responses, whatever order their
requests arrive in. Every request is recorded with the time it arrived
(``received``; ``received_at`` in the log).

When the script runs out, the provider answers "(script exhausted)".
The same script can drive a CLI subprocess: load :mod:`ketch.testing.scripted_plugin`
with ``KETCH_LOAD`` and point ``KETCH_SCRIPT`` at a JSON file.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from ketch.messages import Message, ReasoningPart, TextPart, ToolCallPart, Usage, new_id
from ketch.providers import (
    Completed,
    ErrorKind,
    ModelInfo,
    ProviderConfig,
    ProviderError,
    ProviderEvent,
    ProviderKind,
    ProviderRequest,
    ReasoningDelta,
    Secret,
    TextDelta,
    ToolCallDelta,
)


def text(value: str, **extra: Any) -> dict[str, Any]:
    return {"text": value, **extra}


def call(
    name: str, input: dict[str, Any] | None = None, *, id: str | None = None
) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "input": input or {}, **({"id": id} if id else {})}]}


def calls(*items: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    return {"tool_calls": [{"name": n, "input": i} for n, i in items]}


def error(
    kind: str,
    message: str = "scripted failure",
    *,
    retryable: bool = False,
    retry_after: float | None = None,
    **extra: Any,
) -> dict[str, Any]:
    return {
        "error": {
            "kind": kind,
            "message": message,
            "retryable": retryable,
            "retry_after": retry_after,
            **extra,
        }
    }


class ScriptedProvider:
    kind = "scripted"

    def __init__(
        self,
        script: list[dict[str, Any]] | None = None,
        *,
        name: str = "scripted",
        model: str = "scripted-model",
        config: ProviderConfig | None = None,
        log_path: Path | None = None,
    ) -> None:
        self.script = list(script or [])
        self.name = name
        self.model = model
        self.config = config or ProviderConfig(name=name, kind="scripted", model=model)
        self.requests: list[ProviderRequest] = []
        self.received: list[float] = []  # when each request arrived (time.time())
        self.log_path = log_path
        self.closed = 0
        self.listeners: list[Callable[[ProviderRequest], None]] = []

    def add(self, *responses: dict[str, Any]) -> None:
        self.script.extend(responses)

    async def stream(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        self.requests.append(request)
        self.received.append(time.time())
        if self.log_path is not None:
            with self.log_path.open("a", encoding="utf-8") as log:
                log.write(
                    json.dumps(
                        {**request.model_dump(mode="json"), "received_at": self.received[-1]}
                    )
                    + "\n"
                )
        step = self._next_step(request)
        if step.get("delay"):
            await asyncio.sleep(float(step["delay"]))
        if step.get("reasoning"):
            yield ReasoningDelta(text=step["reasoning"])
        err: dict[str, Any] | None = step.get("error")
        if err:
            if step.get("after_text"):
                yield TextDelta(text=step["after_text"])
            raise ProviderError(
                ErrorKind(err.get("kind", "server")),
                err.get("message", "scripted failure"),
                retryable=bool(err.get("retryable")),
                retry_after=err.get("retry_after"),
                status=err.get("status"),
                context_limit=err.get("context_limit"),
            )
        answer = step.get("text", "")
        chunks = step.get("chunks") or ([answer] if answer else [])
        for chunk in chunks:
            yield TextDelta(text=chunk)
            if step.get("chunk_delay"):
                await asyncio.sleep(float(step["chunk_delay"]))
        if step.get("truncate"):
            return
        parts: list[Any] = []
        if step.get("reasoning"):
            parts.append(ReasoningPart(text=step["reasoning"], provider="scripted"))
        if answer:
            parts.append(TextPart(text=answer))
        tool_calls = step.get("tool_calls") or []
        for index, item in enumerate(tool_calls):
            call_id = item.get("id") or new_id("call_")
            yield ToolCallDelta(
                index=index,
                id=call_id,
                name=item["name"],
                arguments=json.dumps(item.get("input", {})),
            )
            if "raw" in item:
                parts.append(
                    ToolCallPart(
                        id=call_id,
                        name=item["name"],
                        input={},
                        input_error=f"invalid JSON: {item['raw'][:40]!r}",
                    )
                )
            else:
                parts.append(
                    ToolCallPart(id=call_id, name=item["name"], input=item.get("input", {}))
                )
        stop = step.get("stop_reason") or ("tool_use" if tool_calls else "end_turn")
        usage = Usage(**(step.get("usage") or {"input_tokens": 10, "output_tokens": 5}))
        yield Completed(
            message=Message(role="assistant", parts=tuple(parts)), stop_reason=stop, usage=usage
        )  # type: ignore[arg-type]

    def _next_step(self, request: ProviderRequest) -> dict[str, Any]:
        """The first remaining response whose ``when`` this request matches."""
        first = next((m for m in request.messages if m.role == "user"), None)
        prompt = first.text if first is not None else ""
        for index, step in enumerate(self.script):
            if not step.get("when") or str(step["when"]) in prompt:
                return self.script.pop(index)
        return {"text": "(script exhausted)"}

    async def list_models(self) -> list[ModelInfo]:
        return [ModelInfo(id=self.model, context_window=self.config.context_window)]

    async def context_window(self) -> int | None:
        return self.config.context_window

    async def aclose(self) -> None:
        self.closed += 1


def load_script(path: Path) -> list[dict[str, Any]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, list):
        raise ValueError(f"{path}: a script is a JSON list of responses")
    return data


def scripted_kind(
    script: list[dict[str, Any]] | None = None,
    *,
    log_path: Path | None = None,
    state_path: Path | None = None,
) -> ProviderKind:
    """A ProviderKind ``scripted`` whose clients play ``script``.

    With ``state_path`` the remaining script is kept in that file, so several CLI
    runs (``--continue``) consume one script in order.
    """

    def create(config: ProviderConfig, key: Secret | None) -> ScriptedProvider:
        remaining = script
        if state_path is not None and state_path.exists():
            remaining = load_script(state_path)
        provider = _PersistingProvider(
            remaining,
            name=config.name,
            model=config.model or "scripted-model",
            config=config,
            log_path=log_path,
        )
        provider.state_path = state_path
        return provider

    return ProviderKind(
        kind="scripted",
        create=create,
        description="plays back a script (tests)",
        needs_key=False,
        default_model="scripted-model",
    )


class _PersistingProvider(ScriptedProvider):
    state_path: Path | None = None

    async def stream(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        try:
            async for item in super().stream(request):
                yield item
        finally:
            if self.state_path is not None:
                self.state_path.write_text(json.dumps(self.script), encoding="utf-8")
