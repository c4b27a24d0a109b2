"""``--input-format stream-json``: Claude Code's user-message lines on stdin, a turn each."""

from __future__ import annotations

import pytest

from tests.headless.headless_kit import Headless, events, interrupt, of, read_until, texts, user

pytestmark = pytest.mark.timeout(120)
STREAM = ("--input-format", "stream-json", "--output-format", "stream-json")


def test_two_user_messages_are_two_turns_of_one_session(headless: Headless) -> None:
    headless.script([{"text": "first answer"}, {"text": "second answer"}])
    stdin = (
        user("first question") + "\n" + user([{"type": "text", "text": "second question"}]) + "\n"
    )
    proc = headless.run(*STREAM, stdin=stdin)
    assert proc.returncode == 0, proc.stderr
    out = events(proc.stdout)
    assert [e["stop_reason"] for e in of(out, "turn_end")] == ["end_turn", "end_turn"]
    assert len(of(out, "session")) == 1  # one session
    first, second = headless.requests()
    assert texts(first)[-1] == "first question"
    # The second request carries the first turn, question and answer.
    assert texts(second) == ["first question", "first answer", "second question"]
    ends = of(out, "turn_end")
    assert [e["text"] for e in ends] == ["first answer", "second answer"]
    assert {e["session_id"] for e in ends} == {of(out, "session")[0]["session_id"]}
    assert [e["usage"]["input_tokens"] for e in ends] == [10, 10]  # per turn, not cumulative


def test_an_interrupt_cancels_the_running_turn_and_the_session_goes_on(headless: Headless) -> None:
    headless.script([{"delay": 60, "text": "too late"}, {"text": "after the interrupt"}])
    proc = headless.popen(*STREAM)
    assert proc.stdin is not None
    try:
        proc.stdin.write(user("take your time") + "\n")
        proc.stdin.flush()
        seen = list(read_until(proc, "user_prompt"))  # the turn is running
        proc.stdin.write(interrupt("req_7") + "\n" + user("next") + "\n")
        proc.stdin.close()
        assert proc.stdout is not None and proc.stderr is not None
        out, err = proc.stdout.read(), proc.stderr.read()
        proc.wait(30)
    finally:
        proc.kill()
    everything = seen + events(out)
    response = of(everything, "control_response")[0]["response"]
    assert response == {"subtype": "success", "request_id": "req_7", "response": {}}
    assert [e["stop_reason"] for e in of(everything, "turn_end")] == ["cancelled", "end_turn"]
    assert "too late" not in out
    assert proc.returncode == 0, err  # an interrupt asked for is not a failure


def test_an_image_block_in_claude_codes_shape_reaches_the_model(headless: Headless) -> None:
    import base64
    import io
    import json

    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (2, 2), (1, 2, 3)).save(buffer, format="PNG")
    data = base64.b64encode(buffer.getvalue()).decode()
    headless.script([{"text": "a tiny square"}])
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}
    proc = headless.run(
        *STREAM, stdin=user([{"type": "text", "text": "what is it?"}, image]) + "\n"
    )
    assert proc.returncode == 0, proc.stderr
    (request,) = headless.requests()
    parts = request["messages"][-1]["parts"]
    assert [p["type"] for p in parts] == ["text", "image"] and parts[1]["data"] == data
    assert of(events(proc.stdout), "turn_end")[0]["text"] == "a tiny square"
    assert json.dumps(parts[1]).count("image/png") == 1


def test_a_malformed_line_is_an_error_event_and_the_session_goes_on(headless: Headless) -> None:
    headless.script([{"text": "answered"}])
    stdin = (
        "\n".join(
            [
                "{not json",
                '{"type": "assistant"}',
                user([{"type": "image", "source": {}}]),
                user("hello"),
            ]
        )
        + "\n"
    )
    proc = headless.run(*STREAM, stdin=stdin)
    out = events(proc.stdout)
    errors = [e for e in of(out, "error") if e["kind"] == "bad_input"]
    assert [e["message"].split(":")[0] for e in errors] == [
        "stdin line 1",
        "stdin line 2",
        "stdin line 3",
    ]
    assert (
        "not JSON" in errors[0]["message"]
        and "'assistant'" in errors[1]["message"]
        and "image block needs source" in errors[2]["message"]
    )
    assert of(out, "turn_end")[0]["text"] == "answered"
    assert proc.returncode == 1  # a rejected line is reported in the exit code
    assert "Traceback" not in proc.stderr


def test_should_query_false_adds_to_the_conversation_without_a_turn(headless: Headless) -> None:
    headless.script([{"text": "noted both"}])
    stdin = (
        user("context: the build is red", shouldQuery=False)
        + "\n"
        + user("what do you know?")
        + "\n"
    )
    proc = headless.run(*STREAM, stdin=stdin)
    assert proc.returncode == 0, proc.stderr
    (request,) = headless.requests()
    assert texts(request) == ["context: the build is red", "what do you know?"]


def test_eof_without_messages_ends_the_session(headless: Headless) -> None:
    headless.script([])
    proc = headless.run(*STREAM, stdin="")
    assert proc.returncode == 0, proc.stderr
    assert of(events(proc.stdout), "turn_end") == [] and headless.requests() == []


def test_stream_json_input_needs_stream_json_output(headless: Headless) -> None:
    proc = headless.run("--input-format", "stream-json", stdin=user("hi") + "\n")
    assert proc.returncode == 2
    assert "--input-format stream-json needs --output-format stream-json" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_dash_p_without_text_reads_the_prompt_from_stdin(headless: Headless) -> None:
    headless.script([{"text": "piped"}])
    proc = headless.run("-p", "--output-format", "json", stdin="a prompt on stdin")
    assert proc.returncode == 0, proc.stderr
    assert texts(headless.requests()[0])[-1] == "a prompt on stdin"
