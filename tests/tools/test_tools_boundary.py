"""The workspace boundary: hostile paths are declared to the policy, never slip through."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from ketch_tools_testkit import Recorder

from ketch.testing import deny_all


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    secret = tmp_path / "outside" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("top secret\n")
    return secret


def test_dotdot_path_is_declared_outside_and_asks(tools, outside: Path) -> None:
    recorder = Recorder(answer=False)
    session = tools(approver=recorder)
    result = session.call("read_file", {"path": "../outside/secret.txt"})
    assert not result.ok and "top secret" not in result.output
    assert recorder.targets == [str(outside.resolve())]
    (permission,) = session.events("permission")
    assert permission.decision == "ask" and permission.approved is False


def test_absolute_path_outside_asks_and_runs_only_when_approved(tools, outside: Path) -> None:
    session = tools(approver=deny_all)
    denied = session.call("read_file", {"path": str(outside)})
    assert not denied.ok and "declined" in denied.output
    recorder = Recorder(answer=True)
    approved = session.call("read_file", {"path": str(outside)}, approver=recorder)
    assert approved.ok and "top secret" in approved.output
    assert recorder.targets == [str(outside.resolve())]


def test_inside_paths_need_no_guard(tools) -> None:
    recorder = Recorder(answer=True)
    session = tools(approver=recorder)
    (session.workspace / "a.txt").write_text("hello\n")
    assert session.call("read_file", {"path": "a.txt"}).ok
    assert session.call("read_file", {"path": "sub/../a.txt"}).ok
    assert session.call("read_file", {"path": str(session.workspace / "a.txt")}).ok
    # All three name the same file inside the workspace: no guard reason to ask.
    assert set(recorder.targets) == {str((session.workspace / "a.txt").resolve())}
    assert all("outside" not in e.reason for e in session.events("permission"))


def test_symlink_to_outside_read_is_declared_as_its_target(tools, outside: Path) -> None:
    recorder = Recorder(answer=False)
    session = tools(approver=recorder)
    os.symlink(outside, session.workspace / "link.txt")
    result = session.call("read_file", {"path": "link.txt"})
    assert not result.ok and "top secret" not in result.output
    assert recorder.targets == [str(outside.resolve())]
    assert session.events("permission")[-1].decision == "ask"


def test_symlink_to_outside_write_is_declared_and_refused_when_declined(
    tools, outside: Path
) -> None:
    recorder = Recorder(answer=False)
    session = tools(approver=recorder)
    os.symlink(outside, session.workspace / "link.txt")
    result = session.call("write_file", {"path": "link.txt", "content": "pwned\n"})
    assert not result.ok
    assert outside.read_text() == "top secret\n"
    assert recorder.targets == [str(outside.resolve())]
    assert "writes outside the workspace" in session.events("permission")[-1].reason


def test_symlinked_directory_cannot_smuggle_a_write_out(tools, tmp_path: Path) -> None:
    recorder = Recorder(answer=False)
    session = tools(approver=recorder)
    (tmp_path / "elsewhere").mkdir()
    os.symlink(tmp_path / "elsewhere", session.workspace / "dir")
    result = session.call("write_file", {"path": "dir/new.txt", "content": "x\n"})
    assert not result.ok
    assert not (tmp_path / "elsewhere" / "new.txt").exists()
    assert recorder.targets == [str((tmp_path / "elsewhere" / "new.txt").resolve())]


def test_prefix_sibling_directory_is_outside(tools, tmp_path: Path) -> None:
    recorder = Recorder(answer=False)
    session = tools(approver=recorder)
    sibling = tmp_path / "ws-evil"  # the workspace is tmp_path/ws
    sibling.mkdir()
    (sibling / "x.txt").write_text("evil\n")
    for path in ("../ws-evil/x.txt", str(sibling / "x.txt")):
        result = session.call("read_file", {"path": path})
        assert not result.ok and "evil" not in result.output
    write = session.call("write_file", {"path": "../ws-evil/y.txt", "content": "y"})
    assert not write.ok and not (sibling / "y.txt").exists()
    assert all(e.decision == "ask" and e.approved is False for e in session.events("permission"))
    assert "writes outside the workspace" in session.events("permission")[-1].reason
    assert all(target.startswith(str(sibling.resolve())) for target in recorder.targets)


@pytest.mark.parametrize(
    "tool,field",
    [
        ("read_file", "path"),
        ("write_file", "path"),
        ("edit_file", "path"),
        ("list_dir", "path"),
        ("grep", "path"),
    ],
)
def test_nul_byte_in_path_is_refused_with_a_clear_error(tools, tool: str, field: str) -> None:
    recorder = Recorder(answer=True)
    session = tools(approver=recorder)
    inputs = {
        "read_file": {},
        "write_file": {"content": "x"},
        "edit_file": {"old_string": "a", "new_string": "b"},
        "list_dir": {},
        "grep": {"pattern": "x"},
    }[tool]
    result = session.call(tool, {**inputs, field: "a.txt\x00../../etc/passwd"})
    assert not result.ok
    assert "NUL byte" in result.output and "Traceback" not in result.output
    assert recorder.requests == []  # refused before any policy question


def test_control_characters_and_empty_paths_are_refused(tools) -> None:
    session = tools()
    assert "control character" in session.call("read_file", {"path": "a\nb"}).output
    assert "empty" in session.call("read_file", {"path": "  "}).output


def test_symlink_swapped_in_after_approval_is_not_followed(tools, outside: Path) -> None:
    """The path is checked when the call is proposed; a symlink planted while the user
    reads the approval prompt must not redirect the write."""
    ws_file = None

    def swap(_request: object) -> None:
        assert ws_file is not None
        ws_file.unlink()
        os.symlink(outside, ws_file)

    recorder = Recorder(answer=True, before=swap)
    session = tools(approver=recorder)
    ws_file = session.workspace / "target.txt"
    ws_file.write_text("original\n")
    session.call(
        "read_file", {"path": "target.txt"}, approver=None
    )  # denied (no approver): no record
    result = session.call("write_file", {"path": "target.txt", "content": "new\n"})
    assert not result.ok
    assert "changed" in result.output
    assert outside.read_text() == "top secret\n"


def test_planted_symlink_at_final_component_is_refused_at_write_time(
    tmp_path: Path, outside: Path
) -> None:
    """Below the tool: the write primitive itself never follows a symlink."""
    from ketch_tool_kit.paths import PathProblem
    from ketch_tool_kit.writing import write_atomic

    target = tmp_path / "ws2" / "file.txt"
    target.parent.mkdir()
    os.symlink(outside, target)
    with pytest.raises(PathProblem):
        write_atomic(target, b"pwned", previous=None)
    link_dir = tmp_path / "ws2" / "d"
    os.symlink(outside.parent, link_dir)
    with pytest.raises(PathProblem):
        write_atomic(link_dir / "secret.txt", b"pwned", previous=None)
    assert outside.read_text() == "top secret\n"


def test_home_relative_path_is_outside(tools) -> None:
    recorder = Recorder(answer=False)
    session = tools(approver=recorder)
    session.call("read_file", {"path": "~/.bashrc"})
    assert recorder.targets == [str(Path(os.path.expanduser("~/.bashrc")).resolve())]
