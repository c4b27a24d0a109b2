"""Rewinding the conversation (``ketch_checkpoints.conversation.rewind``): the transcript stays
whole, the active context is cut back to before a prompt, compaction summaries survive
only when they summarize what came before, and the store brings all of it back."""

from __future__ import annotations

from typing import Any

import pytest

from ketch.errors import KetchError
from ketch.messages import Message
from ketch.testing import Harness, text
from ketch_checkpoints.conversation import rewind, rewind_context
from ketch_context_kit.compaction import add_record
from ketch_context_kit.marks import rewound


def _conversation(turns: int) -> tuple[tuple[Message, ...], list[str]]:
    messages: list[Message] = []
    prompts = []
    for n in range(1, turns + 1):
        prompt = Message.user(f"prompt {n}")
        prompts.append(prompt.id)
        messages += [prompt, Message.assistant(f"answer {n}")]
    return tuple(messages), prompts


def test_rewind_cuts_the_active_context_and_marks_the_rest() -> None:
    transcript, prompts = _conversation(4)
    active, cut = rewind_context(transcript, transcript, [], set(), prompts[2])
    assert [m.text for m in active] == ["prompt 1", "answer 1", "prompt 2", "answer 2"]
    assert cut == [m.id for m in transcript[4:]]


def test_a_summary_of_earlier_turns_stays_and_one_of_later_turns_does_not() -> None:
    transcript, prompts = _conversation(4)
    early = Message.user("summary of turns 1-2", synthetic=True)
    compactions = [
        {"record": [{"how": "summary", "replaced": [m.id for m in transcript[:4]], "by": early.id}]}
    ]
    active = (early, *transcript[4:])
    kept, _ = rewind_context(transcript, active, compactions, set(), prompts[3])
    assert [m.text for m in kept] == ["summary of turns 1-2", "prompt 3", "answer 3"]
    # A summary that covers the cut cannot be split: back to the transcript before the cut.
    late = Message.user("summary of turns 1-3", synthetic=True)
    compactions = [
        {"record": [{"how": "summary", "replaced": [m.id for m in transcript[:6]], "by": late.id}]}
    ]
    kept, _ = rewind_context(transcript, (late, *transcript[6:]), compactions, set(), prompts[1])
    assert [m.text for m in kept] == ["prompt 1", "answer 1"]


def test_rewinding_twice_and_what_is_refused() -> None:
    transcript, prompts = _conversation(4)
    _, first = rewind_context(transcript, transcript, [], set(), prompts[2])
    extra = Message.user("prompt 5")
    transcript += (extra, Message.assistant("answer 5"))
    active, second = rewind_context(
        transcript, transcript[:4] + transcript[8:], [], set(first), prompts[1]
    )
    assert [m.text for m in active] == ["prompt 1", "answer 1"]
    assert second == [
        transcript[2].id,
        transcript[3].id,
        extra.id,
        transcript[9].id,
    ]  # not the ones rewound before
    with pytest.raises(KetchError, match="rewound already"):
        rewind_context(transcript, active, [], set(first) | set(second), prompts[2])
    with pytest.raises(KetchError, match="not a prompt"):
        rewind_context(transcript, active, [], set(), transcript[1].id)
    with pytest.raises(KetchError, match="not in this session"):
        rewind_context(transcript, active, [], set(), "msg_nope")


def test_a_rewound_session_resumes_as_rewound(harness: Any) -> None:
    h: Harness = harness([text("answer 1"), text("answer 2"), text("answer 3")])
    for n in (1, 2, 3):
        h.run(f"prompt {n}")
    session = h.session
    prompt_two = next(m.id for m in session.transcript if m.text == "prompt 2")
    event = rewind(session, prompt_two)
    assert [m.text for m in session.active] == ["prompt 1", "answer 1"]
    assert len(session.transcript) == 6 and set(event.rewound) == rewound(session.state)
    assert [e.type for e in h.events][-1] == "rewind"
    h.kernel.end(session)
    resumed = h.resume(session.id)
    assert [m.text for m in resumed.active] == ["prompt 1", "answer 1"]
    assert rewound(resumed.state) == rewound(session.state) and len(resumed.transcript) == 6


def test_a_kept_summary_comes_back_on_resume(harness: Any) -> None:
    from ketch_context_kit.compaction import CompactionEvent

    h: Harness = harness([text("answer 1"), text("answer 2"), text("answer 3")])
    for n in (1, 2, 3):
        h.run(f"prompt {n}")
    session = h.session
    summary = Message.user("summary: the person asked twice", synthetic=True)
    replaced = [m.id for m in session.transcript[:2]]
    session.set_active((summary, *session.transcript[2:]), "compaction")
    add_record(
        session.state,
        {
            "n": 1,
            "reason": "command",
            "record": [{"how": "summary", "replaced": replaced, "by": summary.id}],
        },
    )
    h.kernel.emit(session, CompactionEvent(before_tokens=100, after_tokens=50))
    rewind(session, session.transcript[4].id)  # to before prompt 3
    assert [m.text for m in session.active] == [
        "summary: the person asked twice",
        "prompt 2",
        "answer 2",
    ]
    h.kernel.end(session)
    resumed = h.resume(session.id)
    assert [m.text for m in resumed.active] == [
        "summary: the person asked twice",
        "prompt 2",
        "answer 2",
    ]
