"""ketch-notes with implementers loaded in-process (the plugin author's kit)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ketch.api import hookimpl
from ketch.testing import Harness, text

import ketch_notes


class Source:
    @hookimpl(optionalhook=True)
    def notes_sources(self, kernel: Any) -> list[str]:
        return [f"the workspace is {Path(kernel.workspace).name}"]


class Messy:
    @hookimpl(optionalhook=True)
    def notes_sources(self, kernel: Any) -> list[str]:
        return ["  two\n lines  ", "", "   "]


class Raising:
    @hookimpl(optionalhook=True)
    def notes_sources(self, kernel: Any) -> list[str]:
        raise RuntimeError("no notes today")


class WrongType:
    @hookimpl(optionalhook=True)
    def notes_sources(self, kernel: Any) -> str:
        return "a string, not a list"


def harness(tmp_path: Path, *plugins: tuple[str, Any]) -> Harness:
    return Harness.create(
        tmp_path,
        script=[text("ok")],
        plugins=[("notes", ketch_notes), *plugins],
        bundled=["guards"],
    )


def test_the_hook_is_declared_by_this_plugin(tmp_path: Path) -> None:
    h = harness(tmp_path)
    assert h.kernel.pm.hook.notes_sources.spec is not None


def test_the_notes_reach_the_system_prompt(tmp_path: Path) -> None:
    h = harness(tmp_path, ("source", Source()))
    h.run("hi")
    [request] = h.provider.requests
    assert "Notes about this workspace" in request.system
    assert "- the workspace is ws" in request.system


def test_without_sources_the_prompt_has_no_notes(tmp_path: Path) -> None:
    h = harness(tmp_path)
    h.run("hi")
    assert "Notes about this workspace" not in h.provider.requests[0].system


def test_notes_are_one_line_each_and_blank_ones_dropped(tmp_path: Path) -> None:
    h = harness(tmp_path, ("messy", Messy()))
    assert ketch_notes.collect(h.kernel) == [("messy", "two lines")]


@pytest.mark.parametrize("bad", [Raising(), WrongType()], ids=["raises", "wrong-type"])
def test_a_failing_source_is_reported_once_and_the_others_still_count(
    tmp_path: Path, bad: Any
) -> None:
    h = harness(tmp_path, ("bad", bad), ("source", Source()))
    for _ in range(3):
        assert ketch_notes.collect(h.kernel) == [("source", "the workspace is ws")]
    [failure] = [f for f in h.kernel.pm.failures if f.hook == "notes_sources"]
    assert failure.plugin == "bad" and failure.count == 3


def test_ketch_notes_lists_each_note_with_its_plugin(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    h = harness(tmp_path, ("source", Source()), ("messy", Messy()))
    command = h.kernel.commands["notes"]
    assert command.cli and command.run is not None
    assert command.run(h.kernel, None) == 0
    out = capsys.readouterr().out.splitlines()
    assert sorted(out) == ["messy: two lines", "source: the workspace is ws"]


def test_ketch_notes_says_when_there_are_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    h = harness(tmp_path)
    assert h.kernel.commands["notes"].run(h.kernel, None) == 0  # type: ignore[misc]
    assert capsys.readouterr().out.startswith("no notes")
