"""ketch-pyproject-notes on its own: its notes, and that it loads without ketch-notes."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from ketch.testing import Harness, text

import ketch_pyproject_notes
from ketch_pyproject_notes.project import notes


@pytest.mark.parametrize(
    ("text_", "expected"),
    [
        (
            '[project]\nname = "demo"\nrequires-python = ">=3.11"\n[tool.pytest.ini_options]\n',
            [
                "a Python project named 'demo' (Python >=3.11)",
                "its tests run with pytest (configured in pyproject.toml)",
            ],
        ),
        ('[project]\nname = "demo"\n', ["a Python project named 'demo'"]),
        (
            "[tool.pytest.ini_options]\n",
            ["its tests run with pytest (configured in pyproject.toml)"],
        ),
        ('project = "not a table"\ntool = 3\n', []),
        ("[build-system]\nrequires = []\n", []),
    ],
    ids=["full", "name-only", "pytest-only", "wrong-types", "nothing-to-say"],
)
def test_the_notes_say_what_the_project_is(tmp_path: Path, text_: str, expected: list[str]) -> None:
    (tmp_path / "pyproject.toml").write_text(text_)
    assert notes(tmp_path) == expected


def test_no_pyproject_no_notes(tmp_path: Path) -> None:
    assert notes(tmp_path) is None
    (tmp_path / "pyproject.toml").mkdir()
    assert notes(tmp_path) is None


def test_a_broken_file_raises_for_the_hook_policy_to_report(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[project\n")
    with pytest.raises(tomllib.TOMLDecodeError):
        notes(tmp_path)


def test_it_loads_without_the_plugin_that_declares_the_hook(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "pyproject.toml").write_text('[project]\nname = "demo"\n')
    h = Harness.create(
        tmp_path,
        script=[text("ok")],
        plugins=[("pyproject_notes", ketch_pyproject_notes)],
        bundled=["guards"],
    )
    [info] = [p for p in h.kernel.pm.infos.values() if p.name == "pyproject_notes"]
    assert info.status == "ok" and info.error in ("", None)
    assert h.run("hi").text == "ok"
    assert "demo" not in h.provider.requests[0].system  # nobody asked it for notes
