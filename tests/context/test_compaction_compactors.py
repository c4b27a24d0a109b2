"""The two compactors, the commands /compact /pin /unpin /context, and the last resort."""

from __future__ import annotations

from pathlib import Path

from ketch.testing import approve_all, call, error, text
from ketch_context_kit.compaction import origins, pinned, records
from tests.context.kit_context import MARKER, big, harness, slash

WINDOW = 8_000
MODEL_SUMMARY = (
    "## Goal\nShip the parser rewrite (codename BLUEJAY).\n"
    "## Decisions\nKeep the old API; use a table-driven lexer.\n"
    "## Files touched\nsrc/lexer.py\n"
    "## Open tasks\nRun the benchmarks."
)


def test_model_summarizer_writes_the_summary(tmp_path: Path) -> None:
    script = [text(big(f"answer {i}")) for i in range(3)] + [text(MODEL_SUMMARY), text("after")]
    h = harness(
        tmp_path, script, context_window=WINDOW, settings={"compaction": {"compactor": "model"}}
    )
    for i in range(4):
        h.run(big(f"prompt {i}"))
    assert h.of_type("compaction")[0].compactor == "model"
    summary_request = h.provider.requests[3]
    assert "summarize" in summary_request.system.lower() and not summary_request.tools
    asked = summary_request.messages[0].text
    assert "## Goal" in asked and "## Open tasks" in asked and "prompt 0" in asked
    final = h.provider.requests[4]
    assert "BLUEJAY" in final.messages[0].text and "written by the model" in final.messages[0].text
    assert (
        "Files changed in this session" in final.messages[0].text
    )  # the header stays deterministic
    assert MARKER in final.system
    assert h.of_type("turn_end")[-1].text == "after"


def test_model_summarizer_falls_back_on_a_provider_error(tmp_path: Path) -> None:
    script = [text(big(f"answer {i}")) for i in range(3)] + [error("server", "boom"), text("after")]
    h = harness(
        tmp_path, script, context_window=WINDOW, settings={"compaction": {"compactor": "model"}}
    )
    for i in range(4):
        h.run(big(f"prompt {i}"))
    assert h.of_type("compaction")[0].compactor.startswith("deterministic")
    assert any("model summary failed (boom)" in n.message for n in h.of_type("notice"))
    final = h.provider.requests[4]
    assert "## Earlier turns" in final.messages[0].text and "Turn 1" in final.messages[0].text
    assert h.of_type("turn_end")[-1].stop_reason == "end_turn"


def test_model_summarizer_falls_back_on_a_shapeless_answer(tmp_path: Path) -> None:
    script = [text(big(f"answer {i}")) for i in range(3)] + [
        text("sure, here you go"),
        text("after"),
    ]
    h = harness(
        tmp_path, script, context_window=WINDOW, settings={"compaction": {"compactor": "model"}}
    )
    for i in range(4):
        h.run(big(f"prompt {i}"))
    assert any("did not have the requested sections" in n.message for n in h.of_type("notice"))
    assert "## Earlier turns" in h.provider.requests[4].messages[0].text


def test_manual_compact_with_instructions(tmp_path: Path) -> None:
    h = harness(
        tmp_path,
        [text(big(f"answer {i}")) for i in range(2)] + [text("answer 2")],
        settings={"compaction": {"command_compactor": "deterministic"}},
    )
    for i in range(3):
        h.run(big(f"prompt {i}"))
    before = len(h.session.active)
    out = slash(h, "compact", "keep the database decisions")
    assert out.startswith("the older turns are listed, not summarized")
    assert len(h.session.active) < before
    summary = h.session.active[0]
    assert "focus on: keep the database decisions" in summary.text
    assert records(h.session.state)[-1]["reason"] == "command"
    assert h.of_type("compaction")[-1].after_tokens < h.of_type("compaction")[-1].before_tokens
    # The last turn stays; a second /compact finds nothing more to do.
    assert h.session.active[-1].text == "answer 2"
    assert slash(h, "compact").startswith("nothing to compact")


def test_compact_command_asks_the_model_and_says_so(tmp_path: Path) -> None:
    # Issue 26 item 12: /compact never asked the model, and nothing said so.
    script = [text(big(f"answer {i}")) for i in range(3)] + [text(MODEL_SUMMARY)]
    h = harness(tmp_path, script)
    for i in range(3):
        h.run(big(f"prompt {i}"))
    out = slash(h, "compact")
    assert "summarize" in h.provider.requests[-1].system.lower()  # the model was asked
    assert any("asking the model to summarize" in n.message for n in h.of_type("notice"))
    assert out == "the summary was written by the model (/context shows what is kept verbatim)"
    assert "BLUEJAY" in h.session.active[0].text
    # The numbers are the compaction event's alone (the shell printed them twice).
    assert "->" not in out and "tokens" not in out


def test_compaction_that_would_grow_the_context_changes_nothing(tmp_path: Path) -> None:
    h = harness(tmp_path, [text("a"), text("b")])
    h.run("hi")
    h.run("again")
    active = h.session.active
    assert slash(h, "compact").startswith("nothing to compact")
    assert h.session.active == active and not h.of_type("compaction")


def test_repeated_compactions_fold_earlier_summaries_in(tmp_path: Path) -> None:
    h = harness(tmp_path, [text(big(f"answer {i}")) for i in range(4)])
    for i in range(2):
        h.run(big(f"prompt {i}"))
    slash(h, "compact")
    for i in range(2, 4):
        h.run(big(f"prompt {i}"))
    slash(h, "compact")
    summary = h.session.active[0]
    assert (
        "Turn 1" in summary.text
        and "Turn 3" in summary.text
        and summary.text.count("[ketch] Summary") == 1
    )
    stands = origins(records(h.session.state))
    how, ids = stands[summary.id]
    transcript = [m.id for m in h.session.transcript]
    assert how == "summary" and set(ids) == set(transcript[:6])  # turns 1-3, from the transcript


def test_pin_and_unpin(tmp_path: Path) -> None:
    h = harness(tmp_path, [text(big(f"answer {i}")) for i in range(3)])
    for i in range(3):
        h.run(big(f"prompt {i}"))
    assert "pinned turn 3" in slash(h, "pin")
    assert "pinned turn 1" in slash(h, "pin", "1")
    assert "there is no turn 9" in slash(h, "pin", "9")
    second = h.session.transcript[2].id
    assert "pinned turn 2" in slash(h, "pin", second[:12])  # an id prefix
    assert len(pinned(h.session.state)) == 3
    assert "unpinned turn 2" in slash(h, "unpin", "2")
    assert "unpinned turn 3" in slash(h, "unpin")
    slash(h, "compact")
    # Turn 2 is summarized; the pinned turn 1 follows the summary verbatim, then turn 3.
    summary, first = h.session.active[0], h.session.active[1]
    assert (
        summary.text.startswith("[ketch] Summary")
        and "Turn 2" in summary.text
        and "Turn 1 " not in summary.text
    )
    assert first == h.session.transcript[0]
    assert "already compacted" in slash(h, "pin", "2")
    assert "unpinned 1 turn" in slash(h, "unpin", "all")
    assert slash(h, "unpin") == "no turn is pinned"


def test_context_command_reports_breakdown_and_turn_states(tmp_path: Path) -> None:
    script = [
        call("read_blob", {"name": "b", "size": 3000}),
        text("a0"),
        text("a1"),
        text("a2"),
        text("a3"),
    ]
    h = harness(tmp_path, script, tools=True)
    h.run("prompt 0", approver=approve_all)
    for i in range(1, 4):
        h.run(f"prompt {i}")
    slash(h, "pin", "2")
    slash(h, "compact")
    report = slash(h, "context")
    assert "effective capacity 115,200" in report
    assert (
        "system prompt ~" in report
        and "AGENTS.md (workspace) ~" in report
        and "tool schemas  ~" in report
    )
    assert "verbatim    2, 4" in report
    assert "pinned      2" in report
    assert "summarized  1, 3" in report
    assert "excluded    none" in report


def test_last_resort_prunes_the_current_turn_but_never_its_latest_step(tmp_path: Path) -> None:
    script = [call("read_blob", {"name": f"step{i}", "size": 6000}) for i in range(4)] + [
        text("done")
    ]
    h = harness(tmp_path, script, tools=True, context_window=WINDOW)
    end = h.run("read four big blobs", approver=approve_all)
    assert end.stop_reason == "end_turn" and end.text == "done"
    record = [item for c in records(h.session.state) for item in c["record"]]
    assert record and all(item["how"] == "pruned" and item.get("last_resort") for item in record)
    assert any(
        "current turn alone nearly fills the context" in n.message for n in h.of_type("notice")
    )
    last = h.provider.requests[-1].messages
    outputs = [r.output for m in last for r in m.tool_results]
    assert not outputs[-1].startswith("[ketch]")  # the latest step is intact
    assert outputs[0].startswith("[ketch] Output pruned")
    assert last[0].text == "read four big blobs"  # the prompt itself is never touched
