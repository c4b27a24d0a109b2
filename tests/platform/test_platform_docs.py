"""The plugin author's guide stays true: every hook documented with its signature, and
the tutorial plugin, built from the guide's own code blocks, passes its own tests and
is discovered when installed."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

from ketch import hookspecs as real_hookspecs
from ketch.testing import isolated_env
from ketch.testing.cli import run_cli
from ketch.testing.dists import write_distribution
from tests.platform import hookref

DOCS = hookref.DOCS


def docs_text() -> str:
    return DOCS.read_text(encoding="utf-8")


def load_module(path: Path, source: str) -> ModuleType:
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    spec = importlib.util.spec_from_file_location(f"platform_fake_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# --- the hook reference -------------------------------------------------------------


@pytest.mark.minimal
def test_every_hookspec_has_a_docstring_and_is_documented_with_its_signature() -> None:
    found = hookref.problems(real_hookspecs, docs_text())
    assert not found, "docs/plugins.md is out of step with hookspecs.py:\n  " + "\n  ".join(found)


@pytest.mark.minimal
def test_the_reference_covers_every_hook_the_plugin_manager_knows() -> None:
    """The checker's idea of "a hookspec" is pluggy's: nothing slips past it."""
    from ketch.plugins import PluginManager

    known = {name for name in dir(PluginManager().hook) if name.startswith("ketch_")}
    assert known == {spec.name for spec in hookref.hookspecs(real_hookspecs)}


@pytest.mark.minimal
def test_the_check_fails_for_a_hook_added_without_documentation(tmp_path: Path) -> None:
    """Prove the meta-test can fail: a hookspecs module with one new hook that has no
    docstring and is not in the docs."""
    source = Path(real_hookspecs.__file__).read_text(encoding="utf-8")
    source += textwrap.dedent(
        """

        # --- added without documentation ---------------------------------------------


        @hookspec
        def ketch_new_undocumented_hook(session: Session, payload: dict[str, Any]) -> str | None:
            pass
        """
    )
    module = load_module(tmp_path / "hookspecs_plus.py", source)
    found = hookref.problems(module, docs_text())
    assert any("ketch_new_undocumented_hook: the hookspec has no docstring" in f for f in found)
    assert any("ketch_new_undocumented_hook: not in the docs' hook reference" in f for f in found)
    assert len(found) == 2, found  # and nothing else is wrong


@pytest.mark.minimal
def test_the_check_fails_for_a_changed_signature_or_firstresult(tmp_path: Path) -> None:
    source = Path(real_hookspecs.__file__).read_text(encoding="utf-8")
    source = source.replace(
        "def ketch_stop(session: Session, event: TurnEndEvent, stop_hook_active: bool)",
        "def ketch_stop(session: Session, event: TurnEndEvent, reason: str, stop_hook_active: bool)",
    )
    source = source.replace(
        "@hookspec(firstresult=True)\ndef ketch_open_store(", "@hookspec\ndef ketch_open_store("
    )
    module = load_module(tmp_path / "hookspecs_changed.py", source)
    found = hookref.problems(module, docs_text())
    assert any(f.startswith("ketch_stop: the docs do not show its signature") for f in found), found
    assert any(
        f.startswith("ketch_open_store: the docs wrongly claim that it is firstresult")
        for f in found
    ), found


@pytest.mark.minimal
def test_the_check_fails_for_a_hook_documented_but_removed(tmp_path: Path) -> None:
    source = Path(real_hookspecs.__file__).read_text(encoding="utf-8")
    source = re.sub(r"@hookspec\ndef ketch_session_end\(.*?\n\n\n", "", source, flags=re.S)
    module = load_module(tmp_path / "hookspecs_fewer.py", source)
    assert "ketch_session_end: documented but not a hookspec any more" in hookref.problems(
        module, docs_text()
    )


# --- the tutorial ---------------------------------------------------------------------


def tutorial_files() -> dict[str, str]:
    """Each ```block preceded by <!-- file: PATH --> in the guide."""
    blocks = re.findall(r"<!-- file: (\S+) -->\n```\w*\n(.*?)```", docs_text(), flags=re.S)
    return dict(blocks)


@pytest.mark.minimal
def test_the_tutorial_plugin_passes_its_own_tests_with_the_installed_fixtures(
    tmp_path: Path,
) -> None:
    files = tutorial_files()
    assert {
        "ketch-todos/pyproject.toml",
        "ketch-todos/src/ketch_todos/__init__.py",
        "ketch-todos/src/ketch_todos/tools.py",
        "ketch-todos/tests/test_todos.py",
    } <= set(files)
    for rel, content in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(content, encoding="utf-8")
    project = tmp_path / "ketch-todos"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(project / "src"), os.environ.get("PYTHONPATH", "")]),
    }
    # Its own rootdir and config: the `ketch` pytest11 plugin supplies the fixtures.
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:randomly",
            "tests",
        ],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"\b3 passed\b", proc.stdout), proc.stdout


def test_the_tutorial_plugin_is_discovered_when_installed(tmp_path: Path) -> None:
    files = tutorial_files()
    site = tmp_path / "site"
    write_distribution(
        site,
        "ketch-todos",
        entry_points={"ketch": {"todos": "ketch_todos"}},
        modules={
            rel.removeprefix("ketch-todos/src/"): text
            for rel, text in files.items()
            if "/src/" in rel
        },
    )
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "main.py").write_text("print('hi')  # FIXME: say more\n")
    env = {
        **isolated_env(tmp_path / "home"),
        "KETCH_AUTOLOAD": "all",
        "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]),
    }
    listed = json.loads(run_cli(["plugins", "--json"], cwd=ws, env=env).stdout)
    todos = next(p for p in listed if p["name"] == "todos")
    assert (todos["status"], todos["distribution"], todos["provides"]) == (
        "ok",
        "ketch-todos",
        {"tools": ["find_todos"]},
    )
    # Plan mode offers it (read-only) and it runs in a real headless turn.
    script = [
        {"tool_calls": [{"name": "find_todos", "input": {"marker": "FIXME"}}]},
        {"text": "One FIXME."},
    ]
    run = run_cli(
        [
            "-p",
            "what is left?",
            "--provider",
            "scripted",
            "--mode",
            "plan",
            "--output-format",
            "stream-json",
        ],
        cwd=ws,
        env=env,
        script=script,
        scratch=tmp_path / "cli",
    )
    assert run.returncode == 0, run.stderr
    assert "find_todos" in [t["name"] for t in run.requests[0]["tools"]]
    [call] = run.of_type("tool_call")
    assert call["name"] == "find_todos"
