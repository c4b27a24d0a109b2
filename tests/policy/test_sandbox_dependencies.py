"""Issue 26 item 14: real projects' tests pass in the sandbox.

A project with an editable install outside the workspace (``pip install -e ../libs/mylib``,
made for real into the workspace's own virtualenv) runs the model's ``pytest`` under
assisted, sandboxed, and it passes: the library's directory is shown read-only (its
secrets masked like the workspace's). A command that fails on something the sandbox
hid says what and how to allow it; ``[sandbox] read_only`` then shows it.
"""

from __future__ import annotations

import subprocess
import sys
import sysconfig
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ketch.testing import Harness, approve_all, call, text
from ketch_sandbox.bwrap import probe
from ketch_sandbox.trees import forget

PROBE = probe()
pytestmark = [
    pytest.mark.skipif(not PROBE.available, reason=f"no working sandbox here: {PROBE.reason}"),
    pytest.mark.slow,
]

TEST = "from mylib import answer\n\n\ndef test_answer():\n    assert answer() == 42\n"


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Path]:
    """A workspace whose virtualenv has ``mylib`` installed editable from ../libs/mylib."""
    lib = tmp_path / "libs" / "mylib"
    (lib / "src" / "mylib").mkdir(parents=True)
    (lib / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=64"]\nbuild-backend = "setuptools.build_meta"\n'
        '[project]\nname = "mylib"\nversion = "0.1"\n'
        '[tool.setuptools.packages.find]\nwhere = ["src"]\n'
    )
    (lib / "src" / "mylib" / "__init__.py").write_text("def answer():\n    return 42\n")
    (lib / ".env").write_text("TOKEN=dep-root-canary\n")  # outside what Python imports
    (lib / "src" / "mylib" / ".env").write_text("TOKEN=dep-secret-canary\n")
    ws = tmp_path / "ws"
    (ws / "tests").mkdir(parents=True)
    (ws / "tests" / "test_it.py").write_text(TEST)
    venv = ws / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-deps"]
        + ["--no-index", "--prefix", str(venv), "-e", str(lib)],
        check=True,
        capture_output=True,
    )
    site = next((venv / "lib").glob("python3*/site-packages"))
    assert (site / "__editable__.mylib-0.1.pth").is_file()  # the real thing, made by pip
    # pytest itself from ketch's own environment (visible in the sandbox anyway).
    (site / "pytest-from-ketch.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    yield ws
    forget(ws.resolve())


def _run(ws: Path, command: str, **settings: Any) -> Any:
    h = Harness.create(
        ws.parent,
        script=[call("shell", {"command": command}), text("ran")],
        bundled=["shell", "sandbox", "policy"],
        settings={"profile": "assisted", **settings},
    )
    assert h.session.snapshot().facts.get("sandboxed") is True
    h.run("run it", approver=approve_all)
    (result,) = h.of_type("tool_result")
    return result


def test_the_models_pytest_passes_with_an_editable_install_outside(project: Path) -> None:
    # (ketch's own pytest plugin is in the environment pytest comes from: not loaded)
    command = (
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 .venv/bin/python -m pytest -q -p no:cacheprovider tests"
    )
    control = subprocess.run(command, shell=True, cwd=project, capture_output=True, text=True)
    assert control.returncode == 0, control.stdout  # it passes outside the sandbox
    result = _run(project, command)
    assert result.ok, result.output
    assert "1 passed" in result.output


def test_the_dependency_is_read_only_and_its_secrets_are_masked(project: Path) -> None:
    lib = project.parent / "libs" / "mylib"
    package = lib / "src" / "mylib"
    # The secrets are not named (an approved read of a named secret shows it, by design).
    read = "python3 -c \"import sys; print(open(sys.argv[1] + '/.e' + 'nv').read())\""
    result = _run(
        project,
        f"{read} {package}; {read} {lib}; touch {package}/planted && echo WROTE; "
        f"cat {package}/__init__.py",
    )
    assert "dep-secret-canary" not in result.output  # masked
    assert "dep-root-canary" not in result.output  # not shown at all: only src/ is imported
    assert "WROTE" not in result.output and not (package / "planted").exists()
    assert "return 42" in result.output  # the code itself is readable


def test_what_the_sandbox_hid_is_named_with_how_to_allow_it(project: Path) -> None:
    data = project.parent / "shared-data"
    data.mkdir()
    (data / "fixtures.csv").write_text("a,b\n1,2\n")
    failed = _run(project, f"cat {data}/fixtures.csv")
    assert not failed.ok
    assert f"could not see {data}/fixtures.csv" in failed.output
    assert "[sandbox] read_only" in failed.output
    allowed = _run(project, f"cat {data}/fixtures.csv", sandbox={"read_only": [str(data)]})
    assert allowed.ok and "1,2" in allowed.output
