"""A canary in prompts, answers, reasoning, tool inputs and outputs and the workspace path
never reaches the disk in the clear: not in the database, its WAL or SHM, nor anywhere
else under the state and cache dirs."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ketch.testing import Harness, text
from ketch_context_kit.compaction import set_pinned
from tests.store import store_test_tools
from tests.store.conftest import STORE_PLUGINS, cli_env, run_ketch

CANARY = "KETCHCANARY7f3e9a"


def _script() -> list[dict[str, object]]:
    return [
        {
            "reasoning": f"thinking about {CANARY}-reasoning",
            "tool_calls": [{"name": "note", "input": {"text": f"{CANARY}-toolinput"}}],
        },
        text(f"the answer is {CANARY}-answer"),
    ]


def _leaks(*roots: Path) -> list[str]:
    needles = [CANARY.encode(), CANARY.encode("utf-16-le"), CANARY.lower().encode()]
    found: list[str] = []
    scanned = 0
    for root in roots:
        if not root.exists():
            continue
        for path in root.rglob("*"):
            if path.is_file():
                scanned += 1
                data = path.read_bytes()
                found += [f"{path}: {needle!r}" for needle in needles if needle in data]
            if CANARY in path.name:
                found.append(f"file name {path}")
    assert scanned, f"nothing to scan under {roots}"
    return found


def test_canary_never_reaches_disk_through_the_cli(tmp_path: Path) -> None:
    workspace = tmp_path / f"project-{CANARY}-path"
    workspace.mkdir()
    env = cli_env(tmp_path, _script(), STORE_TEST_TOOL_OUTPUT=f"{CANARY}-tooloutput")
    proc = run_ketch(
        "-p",
        f"please note {CANARY}-prompt",
        "--provider",
        "scripted",
        "--output-format",
        "json",
        cwd=workspace,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert f"{CANARY}-answer" in result["text"]
    # the session really holds the canaries (decrypted through ketch itself)
    shown = run_ketch("sessions", "show", result["session_id"], "--json", cwd=workspace, env=env)
    for marker in ("prompt", "answer", "reasoning", "toolinput", "tooloutput"):
        assert f"{CANARY}-{marker}" in shown.stdout, marker
    assert f"{CANARY}-path" in json.loads(shown.stdout)["workspace"]
    state, cache = Path(os.environ["KETCH_STATE_DIR"]), Path(os.environ["KETCH_CACHE_DIR"])
    assert (state / "sessions.db").exists()
    assert _leaks(state, cache) == []


def _in_process_session(root: Path, config: str | None = None) -> Harness:
    h = Harness.create(
        root,
        script=_script(),
        plugins=[("store_tools", store_test_tools)],
        bundled=STORE_PLUGINS,
        config=config,
    )
    h.run(f"please note {CANARY}-prompt")
    set_pinned(h.session.state, {h.session.transcript[0].id})
    h.session.state["note"] = f"{CANARY}-state"
    h.kernel.end(h.session)
    return h


def test_canary_never_reaches_disk_while_the_store_is_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In-process, with the connection still open, so the WAL and SHM files exist too."""
    monkeypatch.setenv("STORE_TEST_TOOL_OUTPUT", f"{CANARY}-tooloutput")
    h = _in_process_session(tmp_path / f"home-{CANARY}")
    store = h.kernel.store
    assert store is not None
    store.rename_session(h.session.id, f"{CANARY}-name")
    store.add_approval(str(h.workspace), f"note:{CANARY}-scope")
    state = Path(h.environ["KETCH_STATE_DIR"])
    names = {p.name for p in state.iterdir()}
    assert {"sessions.db", "sessions.db-wal", "sessions.db-shm"} <= names, names
    record = store.load_session(h.session.id)
    assert (
        f"{CANARY}-prompt" in record.transcript[0].text
        and record.state["note"] == f"{CANARY}-state"
    )
    # the state dir sits under a path holding the canary: scan the files' contents
    leaks = [
        leak
        for leak in _leaks(state, Path(h.environ["KETCH_CACHE_DIR"]))
        if not leak.startswith("file name")
    ]
    assert leaks == []


def test_the_scan_finds_the_canary_when_encryption_is_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The control: the same session with storage.encryption = "off" is found by the scan."""
    monkeypatch.setenv("STORE_TEST_TOOL_OUTPUT", f"{CANARY}-tooloutput")
    h = _in_process_session(tmp_path, config='[storage]\nencryption = "off"\n')
    leaks = "\n".join(_leaks(Path(h.environ["KETCH_STATE_DIR"])))
    for marker in ("prompt", "answer", "toolinput", "tooloutput", "state"):
        assert f"{CANARY}-{marker}" in _all_text(Path(h.environ["KETCH_STATE_DIR"])), marker
    assert leaks


def _all_text(root: Path) -> str:
    return "".join(
        p.read_bytes().decode("utf-8", "replace") for p in root.rglob("*") if p.is_file()
    )
