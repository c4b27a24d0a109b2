"""``Tool.preview``: what an approval shows before the person decides.

For write_file and edit_file it is the very diff the run then produces, worked out
without writing; for shell, the full command line, where it runs and whether it is
sandboxed. A declined call leaves the file as it was.
"""

from __future__ import annotations

from ketch_tools_testkit import Recorder

from ketch.policy import ApprovalAnswer


class DeclineChanges(Recorder):
    """Approves reads (so the write guard is satisfied), declines everything else."""

    async def __call__(self, request):  # type: ignore[no-untyped-def, override]
        self.requests.append(request)
        return ApprovalAnswer(approved=request.call.tool == "read_file")


def test_edit_preview_is_the_diff_the_run_writes_and_nothing_is_written_before(tools) -> None:
    seen: list[str] = []
    path_holder: dict[str, str] = {}

    def before(request) -> None:  # type: ignore[no-untyped-def]
        seen.append(request.preview or "")
        path_holder["content"] = (tools_session.workspace / "a.py").read_text()

    approver = Recorder(answer=True, before=before)
    tools_session = tools(approver=approver)
    path = tools_session.workspace / "a.py"
    path.write_text("def f():\n    return 1\n")
    tools_session.call("read_file", {"path": "a.py"})
    result = tools_session.call(
        "edit_file", {"path": "a.py", "old_string": "return 1", "new_string": "return 2"}
    )
    assert result.ok
    edit_preview = seen[-1]
    assert "-    return 1" in edit_preview and "+    return 2" in edit_preview
    assert edit_preview == result.diff  # one computation: run and preview cannot disagree
    assert path_holder["content"] == "def f():\n    return 1\n"  # unchanged while being asked
    assert path.read_text() == "def f():\n    return 2\n"


def test_declined_write_shows_its_diff_and_changes_nothing(tools) -> None:
    approver = DeclineChanges()
    session = tools(approver=approver)
    path = session.workspace / "notes.txt"
    path.write_text("old line\n")
    session.call("read_file", {"path": "notes.txt"})
    result = session.call("write_file", {"path": "notes.txt", "content": "new line\n"})
    assert not result.ok
    preview = approver.requests[-1].preview or ""
    assert "-old line" in preview and "+new line" in preview
    assert path.read_text() == "old line\n"


def test_preview_of_a_call_that_will_fail_says_so(tools) -> None:
    approver = Recorder(answer=False)
    session = tools(approver=approver)
    (session.workspace / "unread.txt").write_text("x\n")
    session.call("edit_file", {"path": "unread.txt", "old_string": "x", "new_string": "y"})
    preview = approver.requests[-1].preview or ""
    assert preview.startswith("(this call will fail:") and "have not read it" in preview


def test_new_file_preview_is_a_creation_diff(tools) -> None:
    approver = Recorder(answer=False)
    session = tools(approver=approver)
    session.call("write_file", {"path": "sub/new.txt", "content": "hello\n"})
    preview = approver.requests[-1].preview or ""
    assert "--- /dev/null" in preview and "+hello" in preview
    assert not (session.workspace / "sub").exists()


def test_shell_preview_shows_command_cwd_and_sandbox(tools) -> None:
    approver = Recorder(answer=False)
    session = tools(approver=approver)
    (session.workspace / "pkg").mkdir()
    marker = session.workspace / "ran"
    session.call("shell", {"command": f"touch {marker} && echo done", "cwd": "pkg"})
    preview = approver.requests[-1].preview or ""
    lines = preview.splitlines()
    assert lines[0] == f"$ touch {marker} && echo done"
    assert lines[1].startswith("in pkg (") and str(session.workspace / "pkg") in lines[1]
    assert "sandboxed" in lines[2]  # the sandbox plugin is not loaded here: it says NOT sandboxed
    assert lines[2].startswith("NOT sandboxed")
    assert not marker.exists()
