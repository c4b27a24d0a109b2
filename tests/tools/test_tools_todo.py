"""The todo tool (ketch_todo): the model's task list, kept in the session's state,
sent as a ``todo`` event, allowed in every profile and in plan mode, shown again on
resume."""

from __future__ import annotations

from pathlib import Path

from ketch.testing import Harness, call, text

PLAN = [
    {"content": "Read the parser", "status": "completed"},
    {"content": "Fix the lexer", "status": "in_progress", "active_form": "Fixing the lexer"},
    {"content": "Run the tests", "status": "pending"},
]


def test_the_list_is_kept_sent_and_allowed_in_plan_mode(tmp_path: Path) -> None:
    h = Harness.create(
        tmp_path,
        script=[call("todo", {"todos": PLAN}), text("planned")],
        bundled=["todo", "policy"],
        settings={"mode": "plan"},
    )
    h.run("plan the fix")  # no approver: it must be allowed outright
    (result,) = h.of_type("tool_result")
    assert result.ok and result.output.splitlines() == [
        "1/3 done",
        "✔ Read the parser",
        "▸ Fix the lexer",
        "☐ Run the tests",
    ]
    (event,) = h.of_type("todo")
    assert [t["content"] for t in event.todos] == [p["content"] for p in PLAN]
    assert h.session.state["todo"]["todos"][1]["active_form"] == "Fixing the lexer"


def test_two_tasks_in_progress_is_an_error_the_model_can_fix(tmp_path: Path) -> None:
    doing = [{"content": "a", "status": "in_progress"}, {"content": "b", "status": "in_progress"}]
    h = Harness.create(
        tmp_path, script=[call("todo", {"todos": doing}), text("ok")], bundled=["todo", "policy"]
    )
    h.run("go")
    (result,) = h.of_type("tool_result")
    assert not result.ok and "one in_progress at a time" in result.output
    assert not h.of_type("todo") and "todo" not in h.session.state
