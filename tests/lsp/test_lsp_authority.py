"""Authority: a workspace's own server waits for trust by content; servers run in the
sandbox (judged by what the server could see and reach); a shell command's changes are
checked too; without any server nothing changes; ``ketch lsp status`` and ``/lsp``."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest

from ketch.commands import SlashContext
from ketch.testing import Harness, call, text
from ketch.testing.cli import run_cli
from ketch.testing.harness import isolated_env
from tests.lsp.kit import (
    PASSPHRASE,
    PLUGINS,
    fake_config,
    fake_script,
    notices,
    results,
    sandboxed,
)

QUICK = "diagnostics_timeout = 20\nstart_timeout = 20\nrequest_timeout = 20"


def _harness(tmp_path: Path, script: list[dict[str, Any]], config: str, **kw: Any) -> Harness:
    if not sandboxed():
        config = config.replace("[lsp]\n", "[lsp]\nunsandboxed = true\n", 1)
    return Harness.create(
        tmp_path,
        script=script,
        bundled=[*PLUGINS, "trust"],
        config=config,
        settings={"profile": "full-access"},
        env={"KETCH_PASSPHRASE": PASSPHRASE},
        **kw,
    )


def _write_bad(name: str = "x.fk") -> list[dict[str, Any]]:
    return [call("write_file", {"path": name, "content": "fine\nBAD here\n"}), text("done")]


def test_a_workspace_server_starts_only_once_trusted_by_content(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    script = fake_script(ws)
    command = json.dumps([sys.executable, "tools/fake_server.py", "ok"])
    (ws / ".ketch").mkdir(parents=True)
    (ws / ".ketch" / "config.toml").write_text(
        f'[lsp.servers.fake]\ncommand = {command}\npatterns = ["*.fk"]\n'
    )
    user = f"[lsp]\n{QUICK}\n"
    env = {**isolated_env(tmp_path), "KETCH_PASSPHRASE": PASSPHRASE}

    def turn(name: str) -> Harness:
        harness = _harness(tmp_path, _write_bad(name), user)
        assert asyncio.run(harness.turn("write")).stop_reason == "end_turn"
        harness.kernel.end(harness.session)
        return harness

    held = turn("one.fk")
    assert "[lsp]" not in results(held.events, "write_file")[0].output

    listed = run_cli(["trust", "--yes"], cwd=ws, env=env, timeout=60)
    assert listed.returncode == 0, listed.stdout + listed.stderr
    assert "language server fake" in listed.stdout
    trusted = turn("two.fk")
    output = results(trusted.events, "write_file")[0].output
    assert "two.fk:2:1: error: BAD is not allowed here (fake)" in output

    # The command names a workspace script: its content is part of what was trusted.
    script.write_text(script.read_text() + "\n# changed after it was trusted\n")
    changed = turn("three.fk")
    assert "[lsp]" not in results(changed.events, "write_file")[0].output


def test_a_builtin_found_only_in_the_workspace_virtualenv_needs_trust(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    fake = fake_script(ws)
    program = ws / ".venv" / "bin" / "gopls"
    program.parent.mkdir(parents=True)
    (ws / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    program.write_text(f"#!/bin/sh\nexec {sys.executable} {fake} ok\n")
    program.chmod(0o755)
    harness = _harness(tmp_path, _write_bad("main.go"), f"[lsp]\n{QUICK}\n")
    from ketch_lsp.runtime import manager
    from ketch_lsp.servers import resolve, venv_items

    gopls = next(s for s in resolve(harness.kernel) if s.name == "gopls")
    assert gopls.argv is not None and gopls.argv[0] == str(program)
    assert gopls.origin == "workspace virtualenv" and gopls.item is not None
    assert not manager(harness.kernel).allowed(gopls)
    items = venv_items(harness.kernel)
    assert [(i.kind, i.name, i.source) for i in items] == [
        ("language server", "gopls", ".venv/bin/gopls")
    ]
    assert asyncio.run(harness.turn("write")).stop_reason == "end_turn"
    assert "[lsp]" not in results(harness.events, "write_file")[0].output
    said = notices(harness.events, "language server gopls")
    assert len(said) == 1 and "not trusted yet" in said[0], said
    assert "language server gopls (.venv/bin/gopls)" in said[0]
    harness.kernel.end(harness.session)


@pytest.mark.skipif(not sandboxed(), reason="no working bwrap sandbox here")
def test_a_server_runs_in_the_sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    canary = "KETCHLSPCANARY7f3e"
    (ws / ".env").write_text(f"API_TOKEN={canary}\n")
    outside = tmp_path / "outside" / "notes.txt"
    outside.parent.mkdir()
    outside.write_text(canary)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(5)
    listener.settimeout(0.2)
    contacted: list[Any] = []

    def watch() -> None:
        while not stopped.is_set():
            try:
                contacted.append(listener.accept())
            except OSError:
                continue

    stopped = threading.Event()
    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    monkeypatch.setenv("LSP_TEST_SECRET_VALUE", canary)
    extra = (
        "[lsp.servers.fake.env]\n"
        f'FAKE_PROBE_FILE = "{ws / ".env"}"\n'
        f'FAKE_PROBE_HOME = "{outside}"\n'
        f'FAKE_PROBE_PORT = "{listener.getsockname()[1]}"\n'
    )
    config = fake_config("probe", ws, lsp=QUICK, extra=extra)
    harness = _harness(tmp_path, _write_bad(), config)
    try:
        assert asyncio.run(harness.turn("write")).stop_reason == "end_turn"
        harness.kernel.end(harness.session)
    finally:
        stopped.set()
        watcher.join()
        listener.close()
    output = results(harness.events, "write_file")[0].output
    probe = next(line for line in output.splitlines() if "probe" in line)
    assert canary not in output
    assert "file=" in probe and canary not in probe  # .env is masked: empty
    assert "home-visible=False" in probe
    assert "network=blocked" in probe
    assert "secret-env=False" in probe
    assert contacted == []


def test_a_shell_command_that_changes_files_gets_their_new_problems(tmp_path: Path) -> None:
    script = [
        call("shell", {"command": "printf 'ok\\nBAD\\n' > made.fk"}),
        text("done"),
    ]
    harness = _harness(tmp_path, script, fake_config("ok", tmp_path / "ws", lsp=QUICK))
    assert asyncio.run(harness.turn("make")).stop_reason == "end_turn"
    harness.kernel.end(harness.session)
    shell = results(harness.events, "shell")[0]
    assert shell.ok, shell.output
    assert "[lsp] 1 new problem in made.fk after this change:" in shell.output
    assert "made.fk:2:1: error: BAD is not allowed here (fake)" in shell.output


def test_without_any_server_nothing_changes(tmp_path: Path) -> None:
    """No server found: no tool is offered, no result changes, pygls is never imported."""
    probe = textwrap.dedent(
        f"""
        import asyncio, json, sys
        from pathlib import Path
        import ketch_lsp.servers as servers
        servers.find_program = lambda *a, **k: None      # nothing installed anywhere
        from ketch.testing import Harness, call, text
        h = Harness.create(Path({str(tmp_path)!r}), script=[
            call("write_file", {{"path": "a.py", "content": "x: int = 'no'\\n"}}), text("ok")],
            bundled={[*PLUGINS]!r}, settings={{"profile": "full-access"}},
            env={{"KETCH_PASSPHRASE": {PASSPHRASE!r}}})
        asyncio.run(h.turn("write"))
        h.kernel.end(h.session)
        out = [e.output for e in h.events if e.type == "tool_result"]
        offered = [t.name for t in h.provider.requests[0].tools]
        print(json.dumps({{"out": out, "offered": offered,
            "imported": sorted(m for m in sys.modules if m.split(".")[0] in ("pygls", "lsprotocol")),
            "lsp": sorted(m for m in sys.modules if m.startswith("ketch_lsp."))}}))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parents[2],
        env={**os.environ, **isolated_env(tmp_path)},
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["out"] and seen["out"][0].startswith("Created a.py")
    assert not any("[lsp]" in o for o in seen["out"])
    lsp_tools = {"definition", "references", "hover", "symbols", "diagnostics", "rename"}
    assert not lsp_tools & set(seen["offered"]) and "write_file" in seen["offered"]
    assert seen["imported"] == []
    assert "ketch_lsp.runtime" in seen["lsp"]  # looked, found nothing
    assert "ketch_lsp.client" not in seen["lsp"]


def test_lsp_status_and_slash(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    env = {**isolated_env(tmp_path), "KETCH_PASSPHRASE": PASSPHRASE}
    config_dir = Path(env["KETCH_CONFIG_DIR"])
    config_dir.mkdir(parents=True)
    config = fake_config("crash", ws, lsp=QUICK)
    if not sandboxed():
        config = config.replace("[lsp]\n", "[lsp]\nunsandboxed = true\n", 1)
    (config_dir / "config.toml").write_text(config)
    listed = run_cli(["lsp", "status"], cwd=ws, env=env, timeout=60)
    assert listed.returncode == 0, listed.stderr
    assert "fake  not started  [your config]" in listed.stdout
    assert "pyright" not in listed.stdout  # switched off in that config
    checked = run_cli(["lsp", "status", "--check", "--json"], cwd=ws, env=env, timeout=60)
    assert checked.returncode == 1, checked.stdout + checked.stderr
    rows = json.loads(checked.stdout)["servers"]
    fake = next(r for r in rows if r["name"] == "fake")
    assert fake["state"] == "failed"
    assert "exited with code 3" in fake["last_error"]
    assert "cannot start (configuration broken)" in fake["last_error"]

    harness = _harness(
        tmp_path,
        [call("write_file", {"path": "x.fk", "content": "BAD\n"}), text("ok")],
        config.replace(', "crash"]', ', "ok"]'),
    )
    assert asyncio.run(harness.turn("write")).stop_reason == "end_turn"
    shown: list[str] = []
    harness.kernel.commands["lsp"].slash_run(
        SlashContext(
            kernel=harness.kernel, session=harness.session, argument="", print=shown.append
        )
    )
    harness.kernel.end(harness.session)
    text_shown = "\n".join(shown)
    assert "fake  ready  [your config]" in text_shown, text_shown
    assert "started 1×" in text_shown and "1 open files" in text_shown
    assert notices(harness.events, "language server fake") == []
