"""The shared contract: every scenario, against every provider kind, through a real HTTP
server on 127.0.0.1 serving the recorded byte streams split at awkward places. Each
test checks the events produced and the exact request body sent."""

from __future__ import annotations

import pytest

from ketch.providers import Completed, ErrorKind

from .kit import PATHS, awkward, cut_call, inside_characters, make, request, run, serve_ollama_show
from .loopback import LoopbackServer, Reply, free_port
from .recordings import CANARY, KINDS, expected_body, recordings

STREAMS_OK = ["plain", "tool_split", "parallel", "reasoning", "utf8", "garbage"]


def serve(server: LoopbackServer, kind: str, scenario: str) -> dict:
    rec = recordings(kind)
    data = rec["streams"][scenario]
    if scenario == "utf8":  # each split lands in its own TCP segment
        reply = Reply(chunks=inside_characters(data), content_type=rec["content_type"], pause=0.01)
    else:
        reply = Reply(chunks=awkward(data), content_type=rec["content_type"])
    server.queue(PATHS[kind], reply)
    if kind == "ollama":
        serve_ollama_show(server)
    return rec


@pytest.mark.parametrize("scenario", STREAMS_OK)
@pytest.mark.parametrize("kind", KINDS)
def test_stream_gives_the_recorded_events_and_sends_the_exact_body(
    server: LoopbackServer, kind: str, scenario: str
) -> None:
    rec = serve(server, kind, scenario)
    events, error = run(make(kind, server.url), request(kind))
    assert error is None, error
    assert events == rec["events"][scenario]
    assert server.posts(PATHS[kind]) == [expected_body(kind)]


@pytest.mark.parametrize("kind", KINDS)
def test_utf8_split_across_tcp_writes_arrives_whole(server: LoopbackServer, kind: str) -> None:
    rec = serve(server, kind, "utf8")
    assert len(inside_characters(rec["streams"]["utf8"])) >= 8  # really split inside characters
    events, error = run(make(kind, server.url), request(kind))
    assert error is None
    final = events[-1]
    assert isinstance(final, Completed)
    assert final.message.text == "Grüße aus Köln — 東京 🌍!"
    assert "\ufffd" not in final.message.text


@pytest.mark.parametrize("kind", KINDS)
def test_truncated_stream_is_a_retryable_malformed_stream_never_completed(
    server: LoopbackServer, kind: str
) -> None:
    rec = serve(server, kind, "truncated")
    events, error = run(make(kind, server.url), request(kind))
    assert error is not None and error.kind == ErrorKind.MALFORMED_STREAM and error.retryable
    assert "truncated" in error.message
    assert events == rec["events"]["truncated"]
    assert not any(isinstance(e, Completed) for e in events)


@pytest.mark.parametrize("kind", KINDS)
def test_a_data_line_that_is_not_json_is_a_malformed_stream(
    server: LoopbackServer, kind: str
) -> None:
    rec = serve(server, kind, "garbage_data")
    events, error = run(make(kind, server.url), request(kind))
    assert error is not None and error.kind == ErrorKind.MALFORMED_STREAM and error.retryable
    assert "not JSON" in error.message
    assert events == rec["events"]["garbage_data"]


@pytest.mark.parametrize("kind", KINDS)
def test_midstream_error_event_raises_classified_after_the_partial_text(
    server: LoopbackServer, kind: str
) -> None:
    rec = serve(server, kind, "midstream_error")
    events, error = run(make(kind, server.url), request(kind))
    assert events == rec["events"]["midstream_error"]
    assert error is not None and error.retryable
    expected = ErrorKind.OVERLOADED if kind == "anthropic" else ErrorKind.SERVER
    assert error.kind == expected
    assert "mid-stream" in error.message


@pytest.mark.parametrize("kind", KINDS)
def test_a_tool_call_cut_by_the_token_limit_is_returned_with_input_error(
    server: LoopbackServer, kind: str
) -> None:
    rec = serve(server, kind, "cut_tool")
    events, error = run(make(kind, server.url), request(kind))
    assert error is None
    expected = rec["events"]["cut_tool"]
    if kind == "gemini":  # Gemini sends calls whole: the limit leaves no half call, only MAX_TOKENS
        assert (
            events == expected
            and events[-1].stop_reason == "max_tokens"
            and not events[-1].message.tool_calls
        )
        return
    if kind != "ollama":
        assert events[:-1] == expected[:-1]
    call = cut_call(events)
    assert call.name == "write_file"
    assert call.input == {} and call.input_error
    assert events[-1].stop_reason == "max_tokens"


@pytest.mark.parametrize("kind", KINDS)
def test_a_rejected_key_is_auth_not_retryable_names_both_ways_and_hides_the_key(
    server: LoopbackServer, kind: str
) -> None:
    rec = recordings(kind)
    status, headers, body = rec["errors"]["auth"]
    server.queue(PATHS[kind], Reply.json(status, body, **headers))
    serve_ollama_show(server)
    events, error = run(make(kind, server.url), request(kind))
    assert events == []
    assert error is not None and error.kind == ErrorKind.AUTH and not error.retryable
    assert error.status == (
        400 if kind == "gemini" else 401
    )  # Gemini: 400 INVALID_ARGUMENT, API_KEY_INVALID
    assert CANARY not in error.message and CANARY not in repr(error)
    if kind == "ollama":
        assert "OLLAMA_API_KEY" in error.message
    elif kind == "gemini":
        assert "GEMINI_API_KEY" in error.message and "ketch auth set gemini" in error.message
    else:
        var = "ANTHROPIC_API_KEY" if kind == "anthropic" else "OPENAI_API_KEY"
        assert var in error.message and f"ketch auth set {kind}" in error.message
    assert len(server.posts(PATHS[kind])) == 1  # never retried by the provider itself


@pytest.mark.parametrize("kind", KINDS)
def test_400_context_overflow_is_classified_with_its_numbers(
    server: LoopbackServer, kind: str
) -> None:
    rec = recordings(kind)
    status, headers, body = rec["errors"]["overflow"]
    server.queue(PATHS[kind], Reply.json(status, body, **headers))
    serve_ollama_show(server)
    events, error = run(make(kind, server.url), request(kind))
    assert events == []
    assert error is not None and error.kind == ErrorKind.CONTEXT_LENGTH and not error.retryable
    limit, used = rec["overflow_numbers"]
    assert (error.context_limit, error.context_used) == (limit, used)


@pytest.mark.parametrize("kind", KINDS)
def test_429_and_500_are_retryable_with_the_server_hint(server: LoopbackServer, kind: str) -> None:
    rec = recordings(kind)
    for name, kind_expected, hint in (
        ("rate_limit", ErrorKind.RATE_LIMIT, 0.02),
        ("server", ErrorKind.SERVER, None),
    ):
        status, headers, body = rec["errors"][name]
        server.queue(PATHS[kind], Reply.json(status, body, **headers))
        serve_ollama_show(server)
        events, error = run(make(kind, server.url), request(kind))
        assert events == []
        assert (
            error is not None
            and error.kind == kind_expected
            and error.retryable
            and error.status == status
        )
        assert error.retry_after == hint


@pytest.mark.parametrize("kind", KINDS)
def test_connection_refused_is_a_retryable_network_error(kind: str) -> None:
    port = free_port()
    events, error = run(make(kind, f"http://127.0.0.1:{port}"), request(kind))
    assert events == []
    assert error is not None and error.kind == ErrorKind.NETWORK and error.retryable
    assert "connection refused" in error.message and f"127.0.0.1:{port}" in error.message


@pytest.mark.parametrize("kind", KINDS)
def test_wrong_content_type_on_200_is_a_clear_error(server: LoopbackServer, kind: str) -> None:
    server.queue(PATHS[kind], Reply(chunks=[b"<html>login page</html>"], content_type="text/html"))
    serve_ollama_show(server)
    events, error = run(make(kind, server.url), request(kind))
    assert error is not None and error.kind == ErrorKind.MALFORMED_STREAM
    if kind != "ollama":
        assert "text/html" in error.message
