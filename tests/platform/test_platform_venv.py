"""Each contrib plugin installs into a fresh virtualenv from its folder, is discovered,
passes its own tests there, and works in a real turn: nothing else to do.

The virtualenv is new and empty; ketch goes into it as a wheel built from this
checkout, the plugin with ``pip install FOLDER`` (both ``--no-deps``, offline). Their
dependencies (pydantic, httpx, pytest...) come from the environment running the tests,
through a ``.pth`` line, as ``--system-site-packages`` would give them if that
environment were not itself a virtualenv. Only the metadata and modules installed into
the new virtualenv make ketch or a plugin importable and discoverable there.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from ketch.testing import isolated_env
from ketch.testing.cli import run_cli
from tests.platform.openai_stub import Answer, OpenAIStub
from tests.platform.venvs import CONTRIB, IGNORE, fresh_venv, pip, plugins_in

pytestmark = pytest.mark.slow


def install_plugin(tmp_path: Path, ketch_wheel: Path, name: str, entry: str) -> tuple[Path, Path]:
    """A fresh venv with ketch, then ``pip install`` of a copy of contrib/NAME. Returns
    (python, the project copy without its src/ — only the installed package remains)."""
    python = fresh_venv(tmp_path / "venv")
    pip("--python", str(python), "install", str(ketch_wheel))
    before = plugins_in(python, tmp_path / "home", tmp_path)
    assert "guards" in before and before["guards"]["distribution"] == "ketch"
    assert entry not in before, (
        f"{name} is already visible before installing it (installed in the test environment?)"
    )

    project = tmp_path / name
    shutil.copytree(CONTRIB / name, project, ignore=IGNORE)
    pip("--python", str(python), "install", str(project))
    shutil.rmtree(project / "src")
    return python, project


def run_own_tests(python: Path, project: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "KETCH_PLUGINS")}
    proc = subprocess.run(
        [str(python), "-m", "pytest", "-q", "-rs", "-p", "no:randomly"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert re.search(r"\d+ passed", proc.stdout) and "skipped" not in proc.stdout, proc.stdout[
        -1500:
    ]


def test_ketch_git_installs_is_discovered_and_works(tmp_path: Path, ketch_wheel: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    python, project = install_plugin(tmp_path, ketch_wheel, "ketch-git", "git")
    ws = tmp_path / "ws"
    ws.mkdir()
    listed = plugins_in(python, tmp_path / "home", ws)
    git = listed["git"]
    assert (git["status"], git["distribution"]) == ("ok", "ketch-git")
    assert git["provides"] == {
        "tools": ["git_status", "git_diff", "git_log", "git_show", "git_blame"]
    }
    assert (
        str(tmp_path / "venv")
        in subprocess.run(
            [str(python), "-c", "import ketch_git; print(ketch_git.__file__)"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    run_own_tests(python, project)

    # A real headless turn with every bundled plugin: the policy allows the in-workspace read.
    subprocess.run(["git", "init", "-q", "-b", "trunk"], cwd=ws, check=True)
    (ws / "todo.txt").write_text("x\n")
    env = {**isolated_env(tmp_path / "home"), "KETCH_AUTOLOAD": "all"}
    script = [
        {"tool_calls": [{"name": "git_status", "input": {}}]},
        {"text": "One untracked file."},
    ]
    run = run_cli(
        ["-p", "what changed?", "--provider", "scripted", "--output-format", "stream-json"],
        cwd=ws,
        env=env,
        script=script,
        python=str(python),
        scratch=tmp_path / "cli",
    )
    assert run.returncode == 0, run.stderr
    [result] = run.of_type("tool_result")
    assert result["ok"] and result["output"].splitlines() == [
        "## No commits yet on trunk",
        "?? todo.txt",
    ]
    assert run.of_type("turn_end")[0]["text"] == "One untracked file."


def test_ketch_router_installs_is_discovered_and_routes_over_http(
    tmp_path: Path, ketch_wheel: Path
) -> None:
    python, project = install_plugin(tmp_path, ketch_wheel, "ketch-router", "router")
    listed = plugins_in(python, tmp_path / "home", tmp_path)
    router = listed["router"]
    assert (router["status"], router["distribution"]) == ("ok", "ketch-router")
    assert router["provides"] == {"providers": ["router"]}
    run_own_tests(python, project)

    # Two routes to a real OpenAI-compatible server: the first is overloaded (503), the
    # router falls back to the second, and the turn answers.
    with OpenAIStub(
        Answer(status=503, error="overloaded, try later"),
        Answer(text="Hello from the second route."),
    ) as stub:
        home = tmp_path / "home"
        config_dir = Path(isolated_env(home)["KETCH_CONFIG_DIR"])
        config_dir.mkdir(parents=True, exist_ok=True)
        (config_dir / "config.toml").write_text(
            f'''
[providers.primary]
kind = "openai"
base_url = "{stub.base_url}"
api_key_env = "ROUTER_TEST_KEY"
model = "primary-model"

[providers.backup]
kind = "openai"
base_url = "{stub.base_url}"
api_key_env = "ROUTER_TEST_KEY"
model = "backup-model"

[providers.router]
kind = "router"

[[providers.router.routes]]
provider = "primary"

[[providers.router.routes]]
provider = "backup"
name = "safe"
'''
        )
        env = {**isolated_env(home), "KETCH_AUTOLOAD": "all", "ROUTER_TEST_KEY": "sk-router-test"}
        run = run_cli(
            ["-p", "hi", "--provider", "router", "--output-format", "json"],
            cwd=tmp_path,
            env=env,
            python=str(python),
        )
        assert run.returncode == 0, run.stderr
        assert json.loads(run.stdout)["text"] == "Hello from the second route."
        assert [r["model"] for r in stub.requests] == ["primary-model", "backup-model"]
        assert "sk-router-test" not in run.stdout + run.stderr

        models = run_cli(
            ["models", "--provider", "router"], cwd=tmp_path, env=env, python=str(python)
        )
        assert models.returncode == 0, models.stderr
        assert models.stdout.split() == ["primary", "safe"]
