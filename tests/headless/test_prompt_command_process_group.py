"""``--permission-prompt-command`` that leaves a background child: the immediate answer
is honoured, the child dies with the command's process group, no traceback at exit."""

from __future__ import annotations

import time

import pytest

from tests.headless.headless_kit import Headless, events, of
from tests.stdio_kit import wait_gone

pytestmark = pytest.mark.timeout(120)


def test_an_answer_is_read_when_the_command_exits_not_when_stdout_closes(
    headless: Headless,
) -> None:
    marker = "319.25"
    headless.script(
        [
            {
                "tool_calls": [
                    {"name": "write_file", "input": {"path": "a.txt", "content": "yes\n"}}
                ]
            },
            {"text": "done"},
        ]
    )
    command = f'(sleep {marker} &); echo \'{{"decision": "allow"}}\''
    began = time.monotonic()
    proc = headless.run(
        "-p",
        "write it",
        "--output-format",
        "stream-json",
        "--permission-prompt-command",
        command,
        "--permission-prompt-timeout",
        "30",
    )
    took = time.monotonic() - began
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and "Event loop is closed" not in proc.stderr
    assert (headless.workspace / "a.txt").read_text() == "yes\n"  # allowed, at once
    assert took < 20, took
    assert [e["stop_reason"] for e in of(events(proc.stdout), "turn_end")] == ["end_turn"]
    assert wait_gone(marker) == [], "the command's background child outlived it"


@pytest.mark.parametrize(
    "answer",
    [
        b'{"decision": "allow", "sco\xfe\xfepe": "forever"}',  # a corrupted key hid a bad scope
        b'{"decision": "allow", "message": "ok\xc3"}',
        b'{"decision": "allow", "x": ' + b"[" * 200 + b"]" * 200 + b"}",
        b'{"decision": "allow", "n": NaN}',
    ],
)
def test_an_answer_that_is_not_clean_utf8_json_never_approves(answer: bytes) -> None:
    from ketch_headless.prompt_command import parse_answer

    parsed, problem = parse_answer(answer)
    assert parsed is None and problem
