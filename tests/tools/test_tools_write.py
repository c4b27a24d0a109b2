"""write_file / edit_file: the read-coverage guard, diffs, encodings and line endings kept."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest


def make_file(session, name: str, lines: int) -> Path:
    path = session.workspace / name
    path.write_text("".join(f"line {n}\n" for n in range(1, lines + 1)))
    return path


# --- the read-coverage guard -----------------------------------------------------------


def test_unread_existing_file_is_refused(tools) -> None:
    session = tools()
    path = make_file(session, "a.txt", 3)
    for tool, extra in (
        ("write_file", {"content": "new\n"}),
        ("edit_file", {"old_string": "line 2", "new_string": "two"}),
    ):
        result = session.call(tool, {"path": "a.txt", **extra})
        assert not result.ok
        assert "have not read it" in result.output and "read_file" in result.output
    assert path.read_text() == "line 1\nline 2\nline 3\n"


def test_partially_read_file_is_refused_until_every_line_was_seen(tools) -> None:
    session = tools(settings={"read_file": {"max_lines": 10}})
    path = make_file(session, "a.txt", 25)
    session.call("read_file", {"path": "a.txt"})  # lines 1-10
    session.call("read_file", {"path": "a.txt", "offset": 16, "limit": 5})  # 16-20
    refused = session.call(
        "edit_file", {"path": "a.txt", "old_string": "line 3\n", "new_string": "three\n"}
    )
    assert not refused.ok
    assert "lines 11-15, 21-25" in refused.output
    session.call("read_file", {"path": "a.txt", "offset": 11})  # 11-20
    still = session.call("write_file", {"path": "a.txt", "content": "x\n"})
    assert not still.ok and "21-25" in still.output
    session.call("read_file", {"path": "a.txt", "offset": 21})
    done = session.call(
        "edit_file", {"path": "a.txt", "old_string": "line 3\n", "new_string": "three\n"}
    )
    assert done.ok, done.output
    assert path.read_text().splitlines()[2] == "three"


def test_fully_read_file_can_be_edited_and_then_edited_again(tools) -> None:
    session = tools()
    path = make_file(session, "a.txt", 5)
    session.call("read_file", {"path": "a.txt"})
    first = session.call(
        "edit_file", {"path": "a.txt", "old_string": "line 2", "new_string": "LINE TWO"}
    )
    assert first.ok
    # The tool's own write counts as a read of the result.
    second = session.call(
        "edit_file", {"path": "a.txt", "old_string": "line 4", "new_string": "LINE FOUR"}
    )
    assert second.ok
    assert path.read_text() == "line 1\nLINE TWO\nline 3\nLINE FOUR\nline 5\n"


def test_file_changed_after_read_is_refused(tools) -> None:
    session = tools()
    path = make_file(session, "a.txt", 3)
    session.call("read_file", {"path": "a.txt"})
    path.write_text("line 1\nsomeone else changed this\nline 3\n")
    refused = session.call(
        "edit_file", {"path": "a.txt", "old_string": "line 1", "new_string": "one"}
    )
    assert not refused.ok and "changed on disk" in refused.output
    overwrite = session.call("write_file", {"path": "a.txt", "content": "mine\n"})
    assert not overwrite.ok and "changed on disk" in overwrite.output
    assert "someone else" in path.read_text()
    session.call("read_file", {"path": "a.txt"})
    assert session.call(
        "edit_file", {"path": "a.txt", "old_string": "line 1", "new_string": "one"}
    ).ok


def test_same_size_change_is_caught_by_the_hash(tools) -> None:
    session = tools()
    path = make_file(session, "a.txt", 3)
    session.call("read_file", {"path": "a.txt"})
    before = path.stat()
    path.write_text("line 1\nline X\nline 3\n")  # same size
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # and the same mtime
    refused = session.call("write_file", {"path": "a.txt", "content": "x\n"})
    assert not refused.ok and "content is different" in refused.output


def test_touch_without_change_is_not_a_change(tools) -> None:
    session = tools()
    path = make_file(session, "a.txt", 3)
    session.call("read_file", {"path": "a.txt"})
    later = time.time() + 100
    os.utime(path, (later, later))
    assert session.call(
        "edit_file", {"path": "a.txt", "old_string": "line 1", "new_string": "one"}
    ).ok


def test_new_file_needs_no_read_and_creates_directories(tools) -> None:
    session = tools()
    result = session.call("write_file", {"path": "src/pkg/new.py", "content": "print('hi')\n"})
    assert result.ok, result.output
    assert (session.workspace / "src/pkg/new.py").read_text() == "print('hi')\n"
    assert result.diff.startswith("--- /dev/null\n+++ b/src/pkg/new.py\n")
    assert "+print('hi')" in result.diff


def test_a_read_that_cut_a_long_line_does_not_count_for_that_line(tools) -> None:
    session = tools(settings={"read_file": {"max_line_chars": 100}})
    path = session.workspace / "long.txt"
    path.write_text("short\n" + "z" * 500 + "\n")
    session.call("read_file", {"path": "long.txt"})
    refused = session.call("write_file", {"path": "long.txt", "content": "x\n"})
    assert not refused.ok and "lines 2 were never shown to you in full" in refused.output


def test_guard_record_lives_in_plugin_state(tools) -> None:
    session = tools()
    make_file(session, "a.txt", 2)
    session.call("read_file", {"path": "a.txt"})
    record = session.state["fs"]["reads"][str((session.workspace / "a.txt").resolve())]
    assert record["lines"] == 2 and record["covered"] == [[1, 2]] and len(record["sha256"]) == 64


# --- edits -----------------------------------------------------------------------------


def test_edit_whose_target_matches_twice_is_refused(tools) -> None:
    session = tools()
    path = session.workspace / "dup.py"
    path.write_text("x = 1\ny = 2\nx = 1\n")
    session.call("read_file", {"path": "dup.py"})
    refused = session.call(
        "edit_file", {"path": "dup.py", "old_string": "x = 1", "new_string": "x = 3"}
    )
    assert not refused.ok
    assert "occurs 2 times" in refused.output and "lines 1, 3" in refused.output
    assert path.read_text() == "x = 1\ny = 2\nx = 1\n"
    unique = session.call(
        "edit_file", {"path": "dup.py", "old_string": "y = 2\nx = 1", "new_string": "y = 2\nx = 3"}
    )
    assert unique.ok and path.read_text() == "x = 1\ny = 2\nx = 3\n"
    every = session.call(
        "edit_file",
        {"path": "dup.py", "old_string": "x = ", "new_string": "z = ", "replace_all": True},
    )
    assert every.ok and "2 occurrences" in every.output
    assert path.read_text() == "z = 1\ny = 2\nz = 3\n"


def test_edit_not_found_points_to_the_closest_line(tools) -> None:
    session = tools()
    path = session.workspace / "a.py"
    path.write_text("def main():\n    return compute_total(items)\n")
    session.call("read_file", {"path": "a.py"})
    result = session.call(
        "edit_file",
        {"path": "a.py", "old_string": "return compute_totals(items)", "new_string": "pass"},
    )
    assert not result.ok and "not found" in result.output and "closest line is 2" in result.output
    numbered = session.call(
        "edit_file",
        {"path": "a.py", "old_string": "2\t    return compute_total(items)", "new_string": "pass"},
    )
    assert not numbered.ok and "leave them out" in numbered.output


def test_crlf_file_edited_stays_crlf(tools) -> None:
    session = tools()
    path = session.workspace / "win.txt"
    path.write_bytes(b"alpha\r\nbeta\r\ngamma\r\n")
    session.call("read_file", {"path": "win.txt"})
    result = session.call(
        "edit_file",
        {"path": "win.txt", "old_string": "beta\ngamma", "new_string": "BETA\nnew line\ngamma"},
    )
    assert result.ok, result.output
    assert path.read_bytes() == b"alpha\r\nBETA\r\nnew line\r\ngamma\r\n"
    assert "\r" not in result.diff and "+BETA" in result.diff
    overwrite = session.call("write_file", {"path": "win.txt", "content": "one\ntwo\n"})
    assert overwrite.ok and path.read_bytes() == b"one\r\ntwo\r\n"


def test_mixed_line_endings_are_left_alone(tools) -> None:
    session = tools()
    path = session.workspace / "mixed.txt"
    path.write_bytes(b"a\nb\r\nc\n")
    session.call("read_file", {"path": "mixed.txt"})
    assert session.call("edit_file", {"path": "mixed.txt", "old_string": "c", "new_string": "C"}).ok
    assert path.read_bytes() == b"a\nb\r\nC\n"


@pytest.mark.parametrize(
    "encoding,prefix",
    [("utf-8-sig", b"\xef\xbb\xbf"), ("utf-16", None), ("cp1252", None)],
)
def test_encoding_is_preserved(tools, encoding: str, prefix: bytes | None) -> None:
    session = tools()
    path = session.workspace / "enc.txt"
    path.write_bytes("café = 1\nnaïve = 2\n".encode(encoding))
    original = path.read_bytes()
    session.call("read_file", {"path": "enc.txt"})
    result = session.call(
        "edit_file",
        {"path": "enc.txt", "old_string": "naïve = 2", "new_string": "naïve = 3 # déjà"},
    )
    assert result.ok, result.output
    data = path.read_bytes()
    assert data == "café = 1\nnaïve = 3 # déjà\n".encode(encoding)
    assert data[:2] == original[:2]
    if prefix:
        assert data.startswith(prefix)


def test_unencodable_character_is_refused_not_mangled(tools) -> None:
    session = tools()
    path = session.workspace / "latin.txt"
    path.write_bytes("prix: 5 €, café crème brûlée\n".encode("cp1252"))
    session.call("read_file", {"path": "latin.txt"})
    result = session.call(
        "edit_file", {"path": "latin.txt", "old_string": "5", "new_string": "5 → 6 ✓"}
    )
    assert not result.ok and "cannot hold" in result.output
    assert path.read_bytes() == "prix: 5 €, café crème brûlée\n".encode("cp1252")


def test_invalid_utf8_bytes_survive_an_edit_elsewhere(tools) -> None:
    session = tools()
    path = session.workspace / "broken.txt"
    path.write_bytes(b"keep \xff\xfe these \xe9 bytes \xe2\x82\xac\nchange me\n")
    session.call("read_file", {"path": "broken.txt"})
    result = session.call(
        "edit_file", {"path": "broken.txt", "old_string": "change me", "new_string": "changed"}
    )
    assert result.ok, result.output
    assert path.read_bytes() == b"keep \xff\xfe these \xe9 bytes \xe2\x82\xac\nchanged\n"


def test_binary_files_are_not_written_over_or_edited(tools) -> None:
    session = tools()
    path = session.workspace / "data.bin"
    path.write_bytes(b"\x00\x01\x02binary")
    assert "binary" in session.call("write_file", {"path": "data.bin", "content": "text"}).output
    assert (
        "binary"
        in session.call(
            "edit_file", {"path": "data.bin", "old_string": "binary", "new_string": "x"}
        ).output
    )
    assert path.read_bytes() == b"\x00\x01\x02binary"


def test_edit_keeps_file_mode_and_reports_a_numbered_snippet(tools) -> None:
    session = tools()
    path = session.workspace / "run.sh"
    path.write_text("#!/bin/sh\necho one\necho two\n")
    path.chmod(0o754)
    session.call("read_file", {"path": "run.sh"})
    result = session.call(
        "edit_file", {"path": "run.sh", "old_string": "echo two", "new_string": "echo 2\necho 3"}
    )
    assert stat.S_IMODE(path.stat().st_mode) == 0o754
    assert "3\techo 2" in result.output and "4\techo 3" in result.output
    assert "+1 -0" not in result.output and "(+2 -1 lines)" in result.output
    assert not [p for p in session.workspace.iterdir() if p.name.endswith(".tmp")]


def test_every_write_event_carries_a_unified_diff(tools) -> None:
    session = tools()
    make_file(session, "a.txt", 3)
    session.call("read_file", {"path": "a.txt"})
    session.call("edit_file", {"path": "a.txt", "old_string": "line 2", "new_string": "line two"})
    session.call("write_file", {"path": "a.txt", "content": "replaced\n"})
    writes = [e for e in session.events("tool_result") if e.name in ("edit_file", "write_file")]
    assert [e.ok for e in writes] == [True, True]
    assert writes[0].diff.splitlines()[:2] == ["--- a/a.txt", "+++ b/a.txt"]
    assert "-line 2" in writes[0].diff and "+line two" in writes[0].diff
    assert "+replaced" in writes[1].diff and "-line 1" in writes[1].diff


def test_writing_identical_content_changes_nothing(tools) -> None:
    session = tools()
    path = make_file(session, "a.txt", 2)
    session.call("read_file", {"path": "a.txt"})
    mtime = path.stat().st_mtime_ns
    result = session.call("write_file", {"path": "a.txt", "content": "line 1\nline 2\n"})
    assert result.ok and "nothing changed" in result.output and not result.diff
    assert path.stat().st_mtime_ns == mtime
