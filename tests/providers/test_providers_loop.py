"""Provider failures as the real kernel loop sees them: retries with backoff honouring the
server's hint (ErrorEvent with retry_in, then success), errors that are never retried,
cancellation, and a canary key that must not appear in any event, log line or message."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from pathlib import Path
from typing import Any

import pytest

from ketch.testing import Harness

from .kit import PATHS, make, serve_ollama_show
from .loopback import LoopbackServer, Reply
from .recordings import CANARY, KINDS, recordings

PLAIN_TEXT = {
    "gemini": "\n".join(str(n) for n in range(1, 31)),
    "openai": "I'm unable to provide real-time weather updates.",
    "openai-responses": "I'm unable to provide real-time weather updates.",
    "anthropic": "Hello there!",
    "ollama": "The sky is blue.",
}


def turn(
    tmp_path: Path, provider: Any, prompt: str = "hi", **harness: Any
) -> tuple[Any, list[Any]]:
    """One real turn through the kernel loop with ``provider``; returns (turn_end, events)."""
    h = Harness.create(tmp_path, bundled=["retry"], **harness)
    events: list[Any] = []

    async def go() -> Any:
        session = h.kernel.new_session(provider=provider, listeners=[events.append])
        try:
            return await h.kernel.run_turn(session, prompt)
        finally:
            await provider.aclose()

    return asyncio.run(go()), events


def success(kind: str) -> Reply:
    rec = recordings(kind)
    return Reply(chunks=[rec["streams"]["plain"]], content_type=rec["content_type"])


def failure(kind: str, name: str) -> Reply:
    status, headers, body = recordings(kind)["errors"][name]
    return Reply.json(status, body, **headers)


@pytest.mark.parametrize("kind", KINDS)
def test_429_with_retry_after_then_success(
    tmp_path: Path, server: LoopbackServer, kind: str
) -> None:
    server.queue(PATHS[kind], failure(kind, "rate_limit"), success(kind))
    serve_ollama_show(server)
    end, events = turn(tmp_path, make(kind, server.url))
    errors = [e for e in events if e.type == "error"]
    assert [(e.kind, e.retryable, e.retry_in) for e in errors] == [("rate_limit", True, 0.02)]
    assert end.stop_reason == "end_turn" and end.text == PLAIN_TEXT[kind]
    first, second = server.posts(PATHS[kind])
    assert first == second  # the retry re-sends the same request


@pytest.mark.parametrize("kind", KINDS)
def test_500_then_success_uses_exponential_backoff(
    tmp_path: Path, server: LoopbackServer, kind: str
) -> None:
    server.queue(PATHS[kind], failure(kind, "server"), success(kind))
    serve_ollama_show(server)
    end, events = turn(tmp_path, make(kind, server.url))
    errors = [e for e in events if e.type == "error"]
    assert len(errors) == 1 and errors[0].kind == "server" and errors[0].retryable
    assert 0.375 <= errors[0].retry_in <= 0.5  # 0.5 s x jitter(0.75..1), no server hint
    assert end.stop_reason == "end_turn" and end.text == PLAIN_TEXT[kind]
    assert len(server.posts(PATHS[kind])) == 2


@pytest.mark.parametrize("kind", KINDS)
def test_midstream_error_discards_the_partial_turn_and_retries(
    tmp_path: Path, server: LoopbackServer, kind: str
) -> None:
    rec = recordings(kind)
    server.queue(
        PATHS[kind],
        Reply(chunks=[rec["streams"]["midstream_error"]], content_type=rec["content_type"]),
        success(kind),
    )
    serve_ollama_show(server)
    end, events = turn(tmp_path, make(kind, server.url))
    assert [e.type for e in events if e.type == "error"] == ["error"]
    assert end.stop_reason == "end_turn" and end.text == PLAIN_TEXT[kind]
    assistant = [e.message for e in events if e.type == "message" and e.message.role == "assistant"]
    assert [m.text for m in assistant] == [PLAIN_TEXT[kind]]  # nothing of the broken attempt kept


@pytest.mark.parametrize("kind", KINDS)
def test_401_is_not_retried_and_ends_the_turn(
    tmp_path: Path, server: LoopbackServer, kind: str
) -> None:
    server.queue(PATHS[kind], failure(kind, "auth"))
    serve_ollama_show(server)
    end, events = turn(tmp_path, make(kind, server.url))
    errors = [e for e in events if e.type == "error"]
    assert [(e.kind, e.retryable, e.retry_in) for e in errors] == [("auth", False, None)]
    assert end.stop_reason == "error"
    assert len(server.posts(PATHS[kind])) == 1


@pytest.mark.parametrize("kind", KINDS)
def test_context_overflow_is_not_retried_as_is(
    tmp_path: Path, server: LoopbackServer, kind: str
) -> None:
    server.queue(PATHS[kind], failure(kind, "overflow"))
    serve_ollama_show(server)
    end, events = turn(tmp_path, make(kind, server.url))
    assert [e.kind for e in events if e.type == "error"] == ["context_length"]
    assert end.stop_reason == "context_overflow"
    assert len(server.posts(PATHS[kind])) == 1  # no compactor loaded: nothing to resend


@pytest.mark.parametrize("kind", KINDS)
def test_truncated_tool_call_is_never_executed(
    tmp_path: Path, server: LoopbackServer, kind: str
) -> None:
    rec = recordings(kind)
    server.queue(
        PATHS[kind],
        Reply(chunks=[rec["streams"]["cut_tool"]], content_type=rec["content_type"]),
        success(kind),
    )
    serve_ollama_show(server)
    end, events = turn(tmp_path, make(kind, server.url), settings={"loop": {"max_iterations": 3}})
    assert not [e for e in events if e.type in ("tool_call", "tool_started", "tool_result")]
    assert end.stop_reason == "end_turn"


@pytest.mark.parametrize("kind", KINDS)
def test_the_canary_key_appears_nowhere(
    tmp_path: Path, server: LoopbackServer, kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The key goes to the server and nowhere else: not in events (JSON), logs, or messages,
    even when the server echoes it back in an error body."""
    caplog.set_level(logging.DEBUG)
    rec = recordings(kind)
    midstream = rec["streams"]["midstream_error"]
    for phrase in (b"Overloaded", b"an error was", b"Sorry about that!", b"An internal error"):
        midstream = midstream.replace(phrase, CANARY.encode())
    assert CANARY.encode() in midstream
    server.queue(
        PATHS[kind],
        failure(kind, "auth"),
        Reply(chunks=[midstream], content_type=rec["content_type"]),
        success(kind),
    )
    serve_ollama_show(server)
    _, first = turn(tmp_path / "a", make(kind, server.url))
    _, second = turn(tmp_path / "b", make(kind, server.url))
    seen = [r.headers for r in server.requests if r.path == PATHS[kind]]
    assert len(seen) == 3 and all(CANARY in json.dumps(h) for h in seen)  # the key was really used
    dumped = "\n".join(e.model_dump_json() for e in first + second)
    assert "mid-stream" in dumped or "overloaded" in dumped
    assert CANARY not in dumped
    assert CANARY not in caplog.text
    assert all(CANARY not in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("kind", KINDS)
def test_cancelling_the_turn_closes_the_connection_promptly(
    tmp_path: Path, server: LoopbackServer, kind: str
) -> None:
    rec = recordings(kind)
    data = rec["streams"]["plain"]
    first_token = data.index(
        json.dumps(PLAIN_TEXT[kind][:3])[1:-1].encode()
    )  # as it is escaped in the JSON
    head = data.index(b"\n", first_token) + 2  # everything up to the first text delta, at once
    chunks = [data[:head], *(data[i : i + 40] for i in range(head, len(data), 40))]
    server.queue(PATHS[kind], Reply(chunks=chunks, content_type=rec["content_type"], pause=0.25))
    serve_ollama_show(server)
    h = Harness.create(tmp_path, bundled=False)
    provider = make(kind, server.url)
    events: list[Any] = []

    async def go() -> tuple[Any, float]:
        first = asyncio.Event()

        def listen(event: Any) -> None:
            events.append(event)
            if event.type == "text_delta":
                first.set()

        session = h.kernel.new_session(provider=provider, listeners=[listen])
        task = asyncio.create_task(h.kernel.run_turn(session, "hi"))
        await asyncio.wait_for(first.wait(), 10)
        cancelled_at = time.monotonic()
        task.cancel()
        end = await task
        await provider.aclose()
        return end, cancelled_at

    end, cancelled_at = asyncio.run(go())
    assert end.stop_reason == "cancelled"
    for _ in range(100):
        if server.disconnects:
            break
        time.sleep(0.01)
    assert server.disconnects, "the server never saw the client leave"
    (path, left_at), *_ = server.disconnects
    assert path == PATHS[kind]
    assert left_at - cancelled_at < 0.5  # well before the reply's remaining writes
    assert PATHS[kind] not in [p for p, _ in server.finished]  # never streamed to the end
