"""Issue 26 item 3: the read guard follows a rewind of the conversation.

Before, the read records a rewound turn made stayed: after ``/rewind`` put the file
back, the model's identical edit was approved, then refused as "changed on disk
since you last read it" (the record was of the edited file)."""

from __future__ import annotations

from pathlib import Path

from ketch.testing import Harness, call, text
from ketch.testing.harness import _approve
from ketch_checkpoints.conversation import rewind


def _edit(old: str, new: str) -> dict:  # type: ignore[type-arg]
    return call("edit_file", {"path": "a.py", "old_string": old, "new_string": new})


def _edited_then_rewound(tmp_path: Path, second: str) -> tuple[Harness, Path]:
    """Read a.py (x = 1), set x = 2, then rewind the conversation to before the edit;
    the script's next call edits x = 1 into ``second``."""
    h = Harness.create(
        tmp_path,
        script=[
            call("read_file", {"path": "a.py"}),
            text("read it"),
            _edit("x = 1", "x = 2"),
            text("edited"),
            _edit("x = 1", second),
            text("done"),
        ],
        bundled=["fs"],
    )
    target = h.workspace / "a.py"
    target.write_text("x = 1\n")
    h.run("read a.py", approver=_approve)
    h.run("set x to 2", approver=_approve)
    assert target.read_text() == "x = 2\n"
    prompt = [m for m in h.session.transcript if m.role == "user" and not m.synthetic][1]
    rewind(h.session, prompt.id)  # the conversation, as /rewind does (ketch_checkpoints)
    return h, target


def test_after_a_rewind_restoring_the_file_the_same_edit_works(tmp_path: Path) -> None:
    h, target = _edited_then_rewound(tmp_path, "x = 2")
    target.write_text("x = 1\n")  # and the code, as /rewind's checkpoint restore does
    h.run("set x to 2", approver=_approve)
    result = h.of_type("tool_result")[-1]
    assert result.ok, result.output
    assert target.read_text() == "x = 2\n"


def test_a_conversation_only_rewind_makes_the_changed_file_stale_again(tmp_path: Path) -> None:
    h, target = _edited_then_rewound(tmp_path, "x = 3")  # the file keeps x = 2
    h.run("set x to 3", approver=_approve)
    result = h.of_type("tool_result")[-1]
    assert not result.ok and "changed on disk since you last read it" in result.output
    assert target.read_text() == "x = 2\n"
