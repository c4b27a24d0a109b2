"""Compaction through the real loop (in-process harness, scripted provider)."""

from __future__ import annotations

import os
from pathlib import Path

from ketch.testing import approve_all, call, error, text
from ketch_context_kit.budget import context_budget, estimator_for
from ketch_context_kit.compaction import records
from ketch_context_kit.turns import split_turns
from tests.context.kit_context import MARKER, big, harness, slash

WINDOW = 8_000  # effective capacity 5,312 tokens; compaction above ~3,718


def request_tokens(h, request) -> int:  # noqa: ANN001
    estimator = estimator_for(h.session)
    return estimator.request(
        request.system, [t.model_dump() for t in request.tools], request.messages
    ).tokens


def test_multi_turn_session_compacts_fits_and_keeps_instructions(tmp_path: Path) -> None:
    script = [text(big(f"answer {i}")) for i in range(6)]
    h = harness(tmp_path, script, context_window=WINDOW)
    capacity = context_budget(h.session).capacity
    for i in range(6):
        assert h.run(big(f"prompt {i}")).stop_reason == "end_turn"
    compactions = h.of_type("compaction")
    assert compactions, "a long session with a small window must compact"
    assert compactions[0].after_tokens < compactions[0].before_tokens
    assert compactions[0].after_tokens <= h.kernel.settings.compaction.target * capacity
    # Every request, the ones after compaction included, fits the effective capacity.
    for request in h.provider.requests:
        assert request_tokens(h, request) <= capacity
    after = h.provider.requests[-1]
    assert MARKER in after.system
    summary = after.messages[0]
    assert summary.synthetic and summary.text.startswith(
        "[ketch] Summary of the earlier conversation"
    )
    assert "AGENTS.md" in summary.text  # the instruction files are named as still in force
    # The saved transcript is never rewritten.
    assert len(h.session.transcript) == 12
    assert [m.text for m in h.session.transcript if m.role == "user"] == [
        big(f"prompt {i}") for i in range(6)
    ]
    # The record says what was replaced by what.
    record = records(h.session.state)[0]["record"]
    assert (
        record[0]["how"] == "summary"
        and record[0]["by"] == records(h.session.state)[0]["record"][0]["by"]
    )
    transcript_ids = {m.id for m in h.session.transcript}
    assert set(record[0]["replaced"]) <= transcript_ids


def test_usage_meter_after_compaction_is_below_the_trigger(tmp_path: Path) -> None:
    h = harness(tmp_path, [text(big(f"answer {i}")) for i in range(5)], context_window=WINDOW)
    for i in range(5):
        h.run(big(f"prompt {i}"))
    usages = h.of_type("usage")
    assert all(0 <= u.context_utilization <= 1 for u in usages)
    assert all(u.effective_capacity == context_budget(h.session).capacity for u in usages)
    index = h.events.index(h.of_type("compaction")[0])
    next_usage = next(e for e in h.events[index:] if e.type == "usage")
    assert next_usage.context_utilization < h.kernel.settings.compaction.trigger


def test_instruction_files_are_reread_from_disk_after_compaction(tmp_path: Path) -> None:
    h = harness(tmp_path, [text(big(f"answer {i}")) for i in range(5)], context_window=WINDOW)
    agents = h.workspace / "AGENTS.md"
    h.run(big("prompt 0"))
    # Same size, same mtime: only a re-read (not a stat change) can notice the new text.
    stat = agents.stat()
    agents.write_text(MARKER.replace("7f3a", "9c2e") + "\n")
    os.utime(agents, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    h.run(big("prompt 1"))
    assert MARKER in h.provider.requests[-1].system
    for i in range(2, 5):
        h.run(big(f"prompt {i}"))
    assert h.of_type("compaction")
    assert MARKER.replace("7f3a", "9c2e") in h.provider.requests[-1].system


def test_pinned_and_most_recent_turns_are_byte_identical(tmp_path: Path) -> None:
    script = [
        text(big("answer 0")),
        call("read_blob", {"name": "pinned-blob", "size": 1200}),
        text("pinned answer"),
        text(big("answer 2")),
        text(big("answer 3")),
        text(big("answer 4")),
        text(big("answer 5")),
    ]
    h = harness(tmp_path, script, tools=True, context_window=WINDOW)
    h.run(big("prompt 0"))
    h.run("turn two: read the pinned blob", approver=approve_all)
    assert "pinned turn 2" in slash(h, "pin", "2")
    for i in range(2, 6):
        h.run(big(f"prompt {i}"))
    assert h.of_type("compaction")
    spans = split_turns(h.session.transcript)
    pinned = [m.model_dump_json() for m in h.session.transcript[spans[1].start : spans[1].end]]
    recent = [
        m.model_dump_json() for m in h.session.transcript[spans[-1].start : spans[-1].end - 1]
    ]  # the answer came after the request
    sent = [m.model_dump_json() for m in h.provider.requests[-1].messages]
    assert len(pinned) == 4  # prompt, call, result, answer
    start = sent.index(pinned[0])
    assert sent[start : start + len(pinned)] == pinned
    assert sent[-len(recent) :] == recent
    # Turns 1 and 3 were summarized; the pinned turn 2 and the last turn were not.
    summary = h.provider.requests[-1].messages[0]
    assert summary.text.startswith("[ketch] Summary") and "Turn 1" in summary.text
    assert "Pinned turns 2 follow verbatim" in summary.text


def test_old_tool_outputs_are_pruned_before_any_summary(tmp_path: Path) -> None:
    script = []
    for i in range(4):
        script += [call("read_blob", {"name": f"blob{i}", "size": 5000}), text(f"short answer {i}")]
    h = harness(tmp_path, script, tools=True, context_window=WINDOW)
    for i in range(4):
        h.run(f"read blob {i}", approver=approve_all)
    compaction = records(h.session.state)[0]
    hows = {item["how"] for item in compaction["record"]}
    assert hows == {"pruned"}, compaction["record"]
    sent = h.provider.requests[-1].messages
    results = [r for m in sent for r in m.tool_results]
    calls = [c for m in sent for c in m.tool_calls]
    assert len(calls) == 4  # every call stays
    assert results[0].output.startswith("[ketch] Output pruned by compaction")
    assert "blob0" in results[0].output  # the note keeps the output's head
    assert not results[-1].output.startswith("[ketch]")  # the current turn's result stays
    assert not any(m.text.startswith("[ketch] Summary") for m in sent)
    # The transcript still has the full outputs.
    assert all(len(r.output) == 5000 for m in h.session.transcript for r in m.tool_results)


def test_summary_lists_files_changed_in_the_session(tmp_path: Path) -> None:
    script = [
        call("write_file", {"path": "src/app.py", "content": "x = 1\n"}),
        text(big("wrote it")),
    ]
    script += [text(big(f"answer {i}")) for i in range(1, 6)]
    h = harness(tmp_path, script, tools=True, context_window=WINDOW)
    h.run(big("prompt 0 write the app"), approver=approve_all)
    for i in range(1, 6):
        h.run(big(f"prompt {i}"))
    summary = h.provider.requests[-1].messages[0]
    assert "Files changed in this session: src/app.py (write_file)" in summary.text


def test_irreducible_overflow_stops_before_any_request(tmp_path: Path) -> None:
    h = harness(tmp_path, [text("never sent")], context_window=WINDOW)
    end = h.run("x " * 20_000)  # one message larger than the whole capacity
    assert end.stop_reason == "context_overflow"
    assert h.provider.requests == []
    notice = h.of_type("notice")[-1].message
    assert "system prompt ~" in notice and "recent ~" in notice and "tool schemas ~" in notice
    assert "Remedies:" in notice and "send a shorter message" in notice
    assert h.of_type("turn_end")[-1].stop_reason == "context_overflow"


def test_pinned_turn_that_no_longer_fits_stops_with_unpin_remedy(tmp_path: Path) -> None:
    h = harness(tmp_path, [text("ok"), text("never sent")], context_window=32_000)
    h.run(big("huge pinned turn", 24_000))
    slash(h, "pin")
    h.session.context_window = WINDOW  # e.g. the user switched to a smaller model
    end = h.run("next")
    assert end.stop_reason == "context_overflow"
    assert len(h.provider.requests) == 1
    assert "unpin turns (/unpin)" in h.of_type("notice")[-1].message


def test_provider_context_overflow_triggers_one_compaction_and_one_retry(tmp_path: Path) -> None:
    script = [text(big(f"answer {i}", 800)) for i in range(3)]
    script += [
        error("context_length", "prompt is too long: 9000 tokens > 8192 maximum"),
        text("fits now"),
    ]
    h = harness(tmp_path, script)
    for i in range(3):
        h.run(big(f"prompt {i}", 800))
    assert not h.of_type("compaction")  # the estimate said it fits
    end = h.run("one more")
    assert end.stop_reason == "end_turn" and end.text == "fits now"
    assert len(h.provider.requests) == 5
    assert [e.kind for e in h.of_type("error")] == ["context_length"]
    compaction = records(h.session.state)[-1]
    assert compaction["reason"] == "overflow"
    assert len(h.provider.requests[-1].messages) < len(h.provider.requests[-2].messages)
    assert h.provider.requests[-1].messages[-1].text == "one more"


def test_a_second_overflow_error_ends_the_turn(tmp_path: Path) -> None:
    script = [text(big(f"answer {i}", 800)) for i in range(3)]
    script += [
        error("context_length", "too long"),
        error("context_length", "still too long"),
        text("unused"),
    ]
    h = harness(tmp_path, script)
    for i in range(3):
        h.run(big(f"prompt {i}", 800))
    end = h.run("one more")
    assert end.stop_reason == "context_overflow"
    assert len(h.provider.requests) == 5  # three turns, then one try and one retry
    assert len(records(h.session.state)) == 1


def test_overflow_error_with_a_limit_lowers_the_capacity_for_the_session(tmp_path: Path) -> None:
    script = [text(big(f"answer {i}", 3000)) for i in range(3)]
    script += [
        error("context_length", "too long", context_limit=6000),
        text("ok"),
        text("ok again"),
    ]
    h = harness(tmp_path, script)
    for i in range(3):
        h.run(big(f"prompt {i}", 3000))
    assert h.run("go").stop_reason == "end_turn"
    budget = context_budget(h.session)
    assert budget.learned_capacity is not None and budget.capacity < 6000
    h.run("again")
    assert request_tokens(h, h.provider.requests[-1]) <= budget.capacity


def test_without_a_compactor_an_overflow_error_ends_the_turn(tmp_path: Path) -> None:
    h = harness(
        tmp_path,
        [error("context_length", "too long"), text("unused")],
        bundled=["context", "budget"],
    )
    end = h.run("hello")
    assert end.stop_reason == "context_overflow"
    assert len(h.provider.requests) == 1
