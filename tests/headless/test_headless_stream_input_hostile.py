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


def test_an_interrupt_before_its_turn_began_still_ends_that_turn_once() -> None:
    """The interrupt lands after the turn's task was created but before it ran (the
    fuzzer found this): the worker goes on, and the turn ends once, cancelled."""
    import asyncio
    from types import SimpleNamespace

    from ketch_headless.stream_input import StreamSession, UserLine

    emitted: list = []
    finished: list = []

    class Kernel:
        async def run_turn(self, *args: object, **kwargs: object) -> object:
            await asyncio.sleep(10)
            raise AssertionError("the turn should never run")

        def emit(self, session: object, event: object) -> None:
            emitted.append(event)

    printer = SimpleNamespace(start=lambda: None, finish=lambda end, session: finished.append(end))

    async def scenario() -> None:
        runner = StreamSession(Kernel(), object(), printer, None, lambda obj: None)  # type: ignore[arg-type]
        runner.jobs.put_nowait(UserLine("hi"))
        runner.jobs.put_nowait(None)
        worker = asyncio.create_task(runner.worker())
        await asyncio.sleep(0)  # the worker created the turn's task, which has not run yet
        assert runner.current is not None
        runner.interrupted = True
        runner.current.cancel()
        await asyncio.wait_for(worker, 5)
        assert not runner.failed

    asyncio.run(scenario())
    assert [e.stop_reason for e in finished] == ["cancelled"]
    assert [e.type for e in emitted] == ["turn_end"]


def test_a_signal_mid_turn_cancels_it_and_exits_128_plus_the_signal(headless: Headless) -> None:
    import signal

    from tests.stdio_kit import wait_gone, wait_started

    marker = "320.25"
    headless.script([{"tool_calls": [{"name": "shell", "input": {"command": f"sleep {marker}"}}]}])
    proc = headless.popen(*STREAM, "--profile", "full-access")
    assert proc.stdin is not None
    try:
        proc.stdin.write(user("run it") + "\n")
        proc.stdin.flush()
        assert wait_started(marker), "the shell command never started"
        import time

        time.sleep(0.5)  # past the shell tool's own start-up instant
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 143, err
    assert "Traceback" not in err and "Fatal Python error" not in err, err
    assert [e["stop_reason"] for e in of(events(out), "turn_end")] == ["cancelled"]
    assert wait_gone(marker) == []
