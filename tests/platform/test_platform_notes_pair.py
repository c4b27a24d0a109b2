"""A plugin that declares a hook, and another that implements it: contrib/ketch-notes
declares ``notes_sources`` (``ketch_add_hookspecs``) and calls it; contrib/
ketch-pyproject-notes implements it (``@hookimpl(optionalhook=True)``) and imports
nothing from it. Both are installed with a real ``pip install`` into a fresh
virtualenv, and ketch runs as a subprocess (issue 25 item 1).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ketch.testing import isolated_env
from ketch.testing.cli import CliResult, run_cli
from tests.platform.venvs import CONTRIB, IGNORE, fresh_venv, pip, plugins_in

pytestmark = pytest.mark.slow

PROJECT = '[project]\nname = "demo"\nrequires-python = ">=3.11"\n'
NOTE = "a Python project named 'demo' (Python >=3.11)"
SCRIPT = [
    {"tool_calls": [{"name": "list_dir", "input": {"path": "."}}]},
    {"text": "looked"},
]


def install(python: Path, tmp_path: Path, name: str) -> None:
    copy = tmp_path / "projects" / name
    shutil.copytree(CONTRIB / name, copy, ignore=IGNORE)
    pip("--python", str(python), "install", str(copy))
    shutil.rmtree(copy)  # only what was installed into the venv remains


def test_the_call_reaches_the_implementer_only_where_the_hook_is_declared(
    tmp_path: Path, ketch_wheel: Path
) -> None:
    python = fresh_venv(tmp_path / "venv")
    pip("--python", str(python), "install", str(ketch_wheel))
    home, ws = tmp_path / "home", tmp_path / "ws"
    ws.mkdir()
    (ws / "pyproject.toml").write_text(PROJECT)
    env = {**isolated_env(home), "KETCH_AUTOLOAD": "all"}
    traced = {**env, "KETCH_TRACE_PLUGINS": "1"}
    runs = iter(range(100))

    def ketch(args: list[str], environ: dict[str, str], script: bool = False) -> CliResult:
        result = run_cli(
            args,
            cwd=ws,
            env=environ,
            script=SCRIPT if script else None,
            python=str(python),
            scratch=tmp_path / f"cli-{next(runs)}",
        )
        assert "Traceback" not in result.stderr or environ is traced, result.stderr
        return result

    def ask(environ: dict[str, str], *extra: str) -> CliResult:
        result = ketch(["-p", "look", "--provider", "scripted", *extra], environ, script=True)
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip().endswith("looked")
        return result

    # The implementer alone: it loads, and nothing calls it (the hook does not exist).
    install(python, tmp_path, "ketch-pyproject-notes")
    listed = plugins_in(python, home, ws)
    assert listed["pyproject_notes"]["status"] == "ok" and "notes" not in listed
    alone = ask(traced)
    assert "notes_sources" not in alone.stderr
    assert all(NOTE not in r["system"] for r in alone.requests)

    # With the plugin that declares it: every request's system prompt carries the note,
    # and `ketch notes` says which plugin gave it.
    install(python, tmp_path, "ketch-notes")
    listed = plugins_in(python, home, ws)
    assert listed["notes"]["status"] == "ok" and listed["notes"]["provides"] == {
        "commands": ["notes"]
    }
    assert listed["pyproject_notes"]["status"] == "ok"
    both = ask(traced)
    assert "notes_sources [pyproject_notes]" in both.stderr
    assert [f"- {NOTE}" in r["system"] for r in both.requests] == [True, True]
    listing = ketch(["notes"], env)
    assert listing.returncode == 0 and listing.stdout.splitlines() == [f"pyproject_notes: {NOTE}"]

    # The declaring plugin disabled: the implementer is loaded and again not called.
    disabled = ask(traced, "--no-plugin", "notes")
    assert "notes_sources" not in disabled.stderr
    assert all(NOTE not in r["system"] for r in disabled.requests)

    # A raising implementation (its pyproject.toml is not TOML): the spec's policy
    # reports it once, in one line, and the turn goes on without its notes.
    (ws / "pyproject.toml").write_text("[project\n")
    broken = ask(env)
    failed = [line for line in broken.stderr.splitlines() if "notes_sources" in line]
    assert len(failed) == 1 and len(broken.requests) == 2, broken.stderr
    assert failed[0].startswith("ketch: plugin 'pyproject_notes' failed in notes_sources:")
    assert "continuing without it" in failed[0]
    assert all("Notes about this workspace" not in r["system"] for r in broken.requests)
    listing = ketch(["notes"], env)
    assert listing.returncode == 0 and listing.stdout.startswith("no notes")
    assert "plugin 'pyproject_notes' failed in notes_sources" in listing.stderr
