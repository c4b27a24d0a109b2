"""``--input-format stream-json`` under hostile lines: every line read as untrusted.

A line nested deeper than the limit, one larger than the limit, binary, or JSON of the
wrong shape is one ``bad_input`` error event (one line, no traceback) and is skipped,
whether it arrives between turns or while one runs; the next valid line is a turn.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.headless.headless_kit import Headless, events, of, read_until, user

pytestmark = pytest.mark.timeout(120)
STREAM = ("--input-format", "stream-json", "--output-format", "stream-json")
DEEP = "[" * 200_000 + "]" * 200_000


def bad_inputs(out: list[dict]) -> list[str]:
    return [e["message"] for e in of(out, "error") if e["kind"] == "bad_input"]


def test_a_deeply_nested_line_is_one_error_and_the_next_line_is_a_turn(headless: Headless) -> None:
    headless.script([{"text": "still here"}])
    proc = headless.run(*STREAM, stdin=DEEP + "\n" + user("hello") + "\n")
    assert "Traceback" not in proc.stderr and "RecursionError" not in proc.stderr, proc.stderr
    out = events(proc.stdout)
    (problem,) = bad_inputs(out)
    assert problem.startswith("stdin line 1: nested deeper than 128 levels")
    assert [e["text"] for e in of(out, "turn_end")] == ["still here"]
    assert proc.returncode == 1  # a skipped line is reported in the exit status


def test_a_hostile_line_while_a_turn_runs_waits_its_turn_and_never_hangs(
    headless: Headless,
) -> None:
    headless.script([{"delay": 2, "text": "first"}, {"text": "second"}])
    proc = headless.popen(*STREAM)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    try:
        proc.stdin.write(user("slow one") + "\n")
        proc.stdin.flush()
        seen = list(read_until(proc, "user_prompt"))  # the first turn is running
        proc.stdin.write(DEEP + "\n" + '{"type": "user", "message": 5}\n' + user("next") + "\n")
        out, err = proc.communicate(timeout=60)  # closes stdin: EOF
    except subprocess.TimeoutExpired:
        proc.kill()
        raise AssertionError("ketch hung after a hostile line arrived mid-turn") from None
    everything = seen + events(out)
    assert [e["text"] for e in of(everything, "turn_end")] == ["first", "second"]
    assert len(bad_inputs(everything)) == 2
    assert "Traceback" not in err, err


def test_a_line_over_the_size_limit_is_dropped_unread(headless: Headless) -> None:
    from ketch_headless.stream_input import MAX_LINE

    headless.script([{"text": "fine"}])
    huge = json.dumps(
        {"type": "user", "message": {"role": "user", "content": "x" * (MAX_LINE + 1)}}
    )
    proc = headless.run(*STREAM, stdin=huge + "\n" + user("small") + "\n", timeout=120)
    out = events(proc.stdout)
    (problem,) = bad_inputs(out)
    assert "more than the 52,428,800 allowed" in problem
    assert [e["text"] for e in of(out, "turn_end")] == ["fine"]
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    "line",
    [
        b"\xff\xfe\x00garbage",
        b"[]",
        b"null",
        b'"text"',
        b'{"type":"user","message":{"content":[1]}}',
        b"NaN",
    ],
)
def test_wrong_lines_are_bad_input_not_a_crash(headless: Headless, line: bytes) -> None:
    headless.script([{"text": "ok"}])
    proc = subprocess.run(
        headless.argv(*STREAM),
        cwd=headless.workspace,
        env=headless.env(),
        input=line + b"\n" + user("go").encode() + b"\n",
        capture_output=True,
        timeout=60,
    )
    out = events(proc.stdout.decode())
    assert len(bad_inputs(out)) == 1 and "Traceback" not in proc.stderr.decode()
    assert [e["text"] for e in of(out, "turn_end")] == ["ok"]
