"""read_file: ranges, caps with notes, and hostile files (huge, binary, badly encoded)."""

from __future__ import annotations

import os
import time
from pathlib import Path


def numbered(output: str) -> list[str]:
    """The text of the numbered lines in a read_file output."""
    return [line.split("\t", 1)[1] for line in output.splitlines() if "\t" in line]


def test_reads_numbered_lines_and_ranges(tools) -> None:
    session = tools()
    (session.workspace / "a.txt").write_text("".join(f"line {n}\n" for n in range(1, 11)))
    whole = session.call("read_file", {"path": "a.txt"})
    assert whole.ok
    assert whole.output.splitlines()[0] == " 1\tline 1"
    assert numbered(whole.output) == [f"line {n}" for n in range(1, 11)]
    part = session.call("read_file", {"path": "a.txt", "offset": 4, "limit": 3})
    assert numbered(part.output) == ["line 4", "line 5", "line 6"]
    assert "[lines 4-6 of 10 shown; continue with offset=7]" in part.output
    past = session.call("read_file", {"path": "a.txt", "offset": 11})
    assert not past.ok and "past the end" in past.output and "10 lines" in past.output


def test_line_cap_and_char_cap_say_what_was_cut(tools) -> None:
    session = tools(
        settings={"read_file": {"max_lines": 50, "max_chars": 2000, "max_line_chars": 100}}
    )
    (session.workspace / "big.txt").write_text(
        "".join(f"{n:04d} " + "x" * 20 + "\n" for n in range(1, 1001))
    )
    result = session.call("read_file", {"path": "big.txt"})
    shown = numbered(result.output)
    assert 0 < len(shown) <= 50
    assert len(result.output) < 2300
    last = int(shown[-1][:4])
    assert f"of 1000 shown; continue with offset={last + 1}]" in result.output
    (session.workspace / "wide.txt").write_text("short\n" + "y" * 5000 + "\nend\n")
    wide = session.call("read_file", {"path": "wide.txt"})
    assert "line cut: 5000 bytes in all" in wide.output
    assert "[line(s) 2 are longer than 100 characters and were cut]" in wide.output
    assert numbered(wide.output)[2] == "end"


def test_a_50_mb_file_is_read_in_bounded_pages(tools) -> None:
    session = tools()
    path = session.workspace / "huge.log"
    line = b"0123456789" * 9 + b"abcdefghi\n"  # 100 bytes
    with path.open("wb") as handle:
        block = line * 10_000
        for _ in range(50):
            handle.write(block)  # 50 x 1 MB
    assert path.stat().st_size == 50_000_000
    started = time.monotonic()
    result = session.call("read_file", {"path": "huge.log", "offset": 250_000, "limit": 5})
    assert result.ok
    assert time.monotonic() - started < 20
    assert numbered(result.output) == [line.decode().rstrip("\n")] * 5
    assert "[lines 250000-250004 of 500000 shown; continue with offset=250005]" in result.output
    first = session.call("read_file", {"path": "huge.log"})
    assert len(first.output) <= 16_000 + 200  # the default character budget and its note


def test_a_single_50_mb_line_does_not_blow_up(tools) -> None:
    session = tools()
    path = session.workspace / "one-line.min.js"
    path.write_bytes(b"a" * 50_000_000)
    result = session.call("read_file", {"path": "one-line.min.js"})
    assert result.ok
    assert "line cut: 50000000 bytes in all" in result.output
    assert len(result.output) < 3000


def test_binary_file_is_refused_with_what_it_looks_like(tools) -> None:
    session = tools()  # (a PNG is an image now: read_file returns it as one, see tests/catalog)
    (session.workspace / "tool.bin").write_bytes(
        b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 10
    )
    result = session.call("read_file", {"path": "tool.bin"})
    assert not result.ok
    assert "binary file" in result.output and "ELF executable" in result.output
    assert "\x00" not in result.output


def test_invalid_utf8_is_shown_safely(tools) -> None:
    session = tools()
    (session.workspace / "mixed.txt").write_bytes(
        b"good line\nbad \xff\xfe bytes \xc3\n\xe2\x82\xac euro\n"
    )
    result = session.call("read_file", {"path": "mixed.txt"})
    assert result.ok
    lines = numbered(result.output)
    assert lines[0] == "good line"
    assert lines[1].startswith("bad ") and "\ufffd" in lines[1]
    assert lines[2] == "€ euro"


def test_latin1_and_utf16_files_are_decoded(tools) -> None:
    session = tools()
    (session.workspace / "latin1.txt").write_bytes(
        "Grüße aus Köln, déjà vu, señor años niño\n".encode("latin-1") * 3
    )
    latin = session.call("read_file", {"path": "latin1.txt"})
    assert numbered(latin.output)[0] == "Grüße aus Köln, déjà vu, señor años niño"
    assert "[encoding:" in latin.output
    (session.workspace / "utf16.txt").write_bytes("first\r\nsecond ✓\r\n".encode("utf-16"))
    wide = session.call("read_file", {"path": "utf16.txt"})
    assert numbered(wide.output) == ["first", "second ✓"]
    assert "UTF-16" in wide.output
    (session.workspace / "bom.txt").write_bytes(b"\xef\xbb\xbfhello\n")
    assert numbered(session.call("read_file", {"path": "bom.txt"}).output) == ["hello"]


def test_empty_missing_directory_and_fifo(tools) -> None:
    session = tools()
    ws = session.workspace
    (ws / "empty.txt").write_bytes(b"")
    assert "0 lines" in session.call("read_file", {"path": "empty.txt"}).output
    (ws / "config.yaml").write_text("x: 1\n")
    missing = session.call("read_file", {"path": "config.yml"})
    assert not missing.ok and "does not exist" in missing.output and "config.yaml" in missing.output
    (ws / "sub").mkdir()
    directory = session.call("read_file", {"path": "sub"})
    assert not directory.ok and "directory" in directory.output and "list_dir" in directory.output
    os.mkfifo(ws / "pipe")
    started = time.monotonic()
    fifo = session.call("read_file", {"path": "pipe"})
    assert not fifo.ok and "named pipe" in fifo.output
    assert time.monotonic() - started < 5  # opening a FIFO must not block


def test_crlf_lines_are_shown_without_carriage_returns(tools) -> None:
    session = tools()
    (session.workspace / "dos.txt").write_bytes(b"one\r\ntwo\r\n")
    result = session.call("read_file", {"path": "dos.txt"})
    assert numbered(result.output) == ["one", "two"]
    assert "\r" not in result.output


def test_schema_has_descriptions_and_read_is_not_mutating(tools) -> None:
    session = tools()
    tools_by_name = session.harness.kernel.tools
    for name in (
        "read_file",
        "write_file",
        "edit_file",
        "list_dir",
        "glob",
        "grep",
        "shell",
        "shell_job",
        "web_fetch",
    ):
        schema = tools_by_name[name].input_schema()
        for field, spec in schema["properties"].items():
            assert spec.get("description"), f"{name}.{field} has no description"
    mutating = {name for name, tool in tools_by_name.items() if tool.mutating}
    assert mutating == {"write_file", "edit_file", "shell"}


def test_paths_outside_are_shown_absolute(tools, tmp_path: Path) -> None:
    session = tools()
    other = tmp_path / "elsewhere.txt"
    other.write_text("x\n")
    missing = session.call("read_file", {"path": str(tmp_path / "nope.txt")})
    assert str(tmp_path / "nope.txt") in missing.output
