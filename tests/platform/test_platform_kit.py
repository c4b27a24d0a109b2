"""The plugin author's kit (``ketch.testing``): its fixtures arrive in any pytest run
through the ``ketch`` pytest11 entry point, and each does what the guide says."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ketch import hookimpl
from ketch.testing import Harness, isolated_env, text
from ketch.testing.cli import run_cli

BARE_SUITE = """
import json

from ketch.testing import approve_all, call, text


def test_env_and_workspace(ketch_env, ketch_workspace, tmp_path):
    assert ketch_env["KETCH_AUTOLOAD"] == "bundled"
    assert ketch_env["KETCH_CONFIG_DIR"].startswith(str(tmp_path))
    assert ketch_workspace.is_dir() and not any(ketch_workspace.iterdir())


def test_harness_runs_a_scripted_turn(ketch_harness, ketch_workspace):
    (ketch_workspace / "a.txt").write_text("alpha")
    harness = ketch_harness(script=[text("hi there")], bundled=["guards"])
    assert harness.workspace == ketch_workspace
    end = harness.run("hello", approver=approve_all)
    assert (end.stop_reason, end.text) == ("end_turn", "hi there")
    assert harness.provider.requests[0].messages[-1].text == "hello"
    assert harness.types()[0] == "session" and harness.types()[-1] == "turn_end"


def test_cli_runs_the_real_command(ketch_cli):
    run = ketch_cli("-p", "x", "--provider", "scripted", "--output-format", "stream-json", script=[text("from the cli")])
    assert run.returncode == 0, run.stderr
    assert run.of_type("turn_end")[0]["text"] == "from the cli"
    assert run.requests[0]["messages"][0]["parts"][0]["text"] == "x"
    listed = json.loads(ketch_cli("plugins", "--json").stdout)
    assert any(p["name"] == "guards" for p in listed)
"""


def test_fixtures_arrive_in_a_bare_pytest_run_through_the_entry_point(tmp_path: Path) -> None:
    """No conftest, no -p option, no config: only `pip install ketch`."""
    (tmp_path / "test_bare.py").write_text(textwrap.dedent(BARE_SUITE))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
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
            "test_bare.py",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-1000:]
    assert re.search(r"\b3 passed\b", proc.stdout), proc.stdout


def test_ketch_store_uses_a_throwaway_key_and_the_harness_saves_to_it(
    ketch_store: Any, ketch_keyring: Any, ketch_harness: Callable[..., Harness], tmp_path: Path
) -> None:
    harness = ketch_harness(script=[text("the password is swordfish")])
    harness.run("what is the password?")
    [summary] = ketch_store.list_sessions()
    assert summary.id == harness.session.id
    record = ketch_store.load_session(summary.id)
    assert record.transcript[-1].text == "the password is swordfish"
    assert list(ketch_keyring.values), "the data key was minted in the throwaway keyring"
    stored = b"".join(p.read_bytes() for p in tmp_path.rglob("sessions.db*") if p.is_file())
    assert stored and b"swordfish" not in stored  # encrypted at rest with that key


def test_an_allow_list_in_the_environment_selects_the_build_under_test(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KETCH_PLUGINS", "fs")
    assert isolated_env(tmp_path)["KETCH_PLUGINS"] == "fs"

    class Extra:
        @hookimpl
        def ketch_register_tools(self, register: Any) -> None:
            pass

    harness = Harness.create(tmp_path, plugins=[("extra", Extra())])
    loaded = {i.name for i in harness.kernel.pm.loaded()}
    # Bundled plugins outside the allow-list are not loaded; those a test passes in are.
    assert {"guards", "extra", "scripted"} <= loaded
    assert "fs" in loaded or "fs" not in harness.kernel.pm.infos
    assert not loaded & {"shell", "web", "store", "policy"}


def test_explicit_ketch_load_modules_ignore_the_allow_list_but_not_a_disable(
    tmp_path: Path,
) -> None:
    env = {**isolated_env(tmp_path / "home"), "KETCH_PLUGINS": "headless"}
    run = run_cli(
        ["-p", "hi", "--provider", "scripted"],
        cwd=tmp_path,
        env=env,
        script=[text("scripted answer")],
    )
    assert run.returncode == 0 and run.stdout.strip() == "scripted answer", run.stderr
    run = run_cli(
        ["-p", "hi", "--provider", "scripted", "--no-plugin", "scripted_plugin"],
        cwd=tmp_path,
        env=env,
        script=[text("x")],
    )
    assert run.returncode == 2 and "unknown provider kind 'scripted'" in run.stderr
