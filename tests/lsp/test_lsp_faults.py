"""Servers that misbehave (fake servers speaking real LSP through pygls's server): one
that crashes on start, one that never answers, one that floods diagnostics. Each is
reported once, and the turn goes on within the deadline."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from ketch.testing import Harness, call, text
from tests.lsp.kit import PASSPHRASE, PLUGINS, fake_config, notices, results, sandboxed

# Short deadlines: an edit waits at most DIAG seconds for diagnostics (servers that
# answer get longer ones: a fake server takes a second or two to import pygls).
DIAG = 2.0
DEADLINES = (
    f"diagnostics_timeout = {DIAG}\nstart_timeout = 3\nrequest_timeout = 3\nmax_restarts = 2"
)
PATIENT = "diagnostics_timeout = 30\nstart_timeout = 30\nrequest_timeout = 30"


def _edits(count: int) -> list[dict]:
    script = [call("write_file", {"path": "x.fk", "content": "BAD 0\n"})]
    for n in range(1, count):
        script.append(call("write_file", {"path": "x.fk", "content": f"BAD {n}\nok\n"}))
    # write_file needs a full read before overwriting: read in between
    out: list[dict] = []
    for step in script:
        out.append(step)
        out.append(call("read_file", {"path": "x.fk"}))
    return [*out, text("done")]


def _run(
    tmp_path: Path, mode: str, edits: int = 3, deadlines: str = DEADLINES
) -> tuple[Harness, float, list[Any]]:
    config = fake_config(mode, tmp_path / "ws", lsp=deadlines)
    if not sandboxed():
        config = config.replace("[lsp]\n", "[lsp]\nunsandboxed = true\n", 1)
    harness = Harness.create(
        tmp_path,
        script=_edits(edits),
        bundled=PLUGINS,
        config=config,
        settings={"profile": "full-access"},
        env={"KETCH_PASSPHRASE": PASSPHRASE},
    )
    started = time.monotonic()
    end = asyncio.run(harness.turn("edit x.fk"))
    took = time.monotonic() - started
    assert end.stop_reason == "end_turn"
    from ketch_lsp.runtime import existing

    servers = list(existing(harness.kernel, harness.workspace).servers.values())
    harness.kernel.end(harness.session)
    return harness, took, servers


def _edit_seconds(harness: Harness) -> list[float]:
    """How long each write_file call took, from its start to its result (the events'
    own times): the tool, the checkpoints and the wait for diagnostics."""
    started = {e.tool_call_id: e.ts for e in harness.events if e.type == "tool_started"}
    return [e.ts - started[e.tool_call_id] for e in results(harness.events, "write_file")]


def test_a_server_that_crashes_on_start_is_reported_once(tmp_path: Path) -> None:
    harness, took, servers = _run(tmp_path, "crash")
    said = notices(harness.events, "language server fake")
    assert len(said) == 1, said
    assert "exited with code 3" in said[0] and "cannot start (configuration broken)" in said[0]
    writes = results(harness.events, "write_file")
    assert len(writes) == 3 and all(w.ok for w in writes)
    assert not any("[lsp]" in w.output for w in writes)
    assert (
        len(servers) == 1 and servers[0].starts <= 3
    )  # the first start and at most max_restarts more
    assert max(_edit_seconds(harness)) < DIAG + 3


def test_a_server_that_never_answers_costs_each_edit_at_most_the_deadline(tmp_path: Path) -> None:
    harness, took, servers = _run(tmp_path, "hang")
    said = notices(harness.events, "language server fake")
    assert len(said) == 1, said
    assert "did not answer initialize within 3 s" in said[0]
    writes = results(harness.events, "write_file")
    assert len(writes) == 3 and all(w.ok for w in writes)
    assert not any("[lsp]" in w.output for w in writes)
    # Three edits, each waiting at most the diagnostics deadline (and a little more).
    assert max(_edit_seconds(harness)) < DIAG + 3, _edit_seconds(harness)


def test_a_flood_of_diagnostics_is_capped_and_said_once(tmp_path: Path) -> None:
    harness, took, servers = _run(tmp_path, "flood", edits=2, deadlines=PATIENT)
    said = notices(harness.events, "sent 5000 diagnostics")
    assert len(said) == 1, said
    first = results(harness.events, "write_file")[0]
    lines = first.output.splitlines()
    head = next(line for line in lines if line.startswith("[lsp]"))
    assert head.startswith("[lsp] 2000 new problems in x.fk"), head
    shown = [line for line in lines if line.startswith("  x.fk:")]
    assert len(shown) == 20  # [lsp] max_diagnostics
    assert lines[-1] == "  ... and 1980 more (the diagnostics tool lists them all)"


def test_a_well_behaved_fake_server_reports_only_new_problems(tmp_path: Path) -> None:
    harness, _, servers = _run(tmp_path, "ok", deadlines=PATIENT)
    # It stopped with the session: its process (bwrap's, in the sandbox) is gone.
    assert len(servers) == 1 and servers[0].pid and servers[0].state == "stopped"
    assert not Path(f"/proc/{servers[0].pid}").exists()
    first, second, third = results(harness.events, "write_file")
    assert "[lsp] 1 new problem in x.fk after this change:" in first.output
    assert "x.fk:1:1: error: BAD is not allowed here (fake)" in first.output
    # The same problem, still there (on line 1): not new.
    assert "[lsp]" not in second.output and "[lsp]" not in third.output


@pytest.mark.skipif(not sandboxed(), reason="no working bwrap sandbox here")
def test_without_a_sandbox_servers_do_not_start_unless_allowed(tmp_path: Path) -> None:
    config = fake_config("ok", tmp_path / "ws", lsp=DEADLINES) + "[sandbox]\nenabled = false\n"
    harness = Harness.create(
        tmp_path,
        script=_edits(2),
        bundled=PLUGINS,
        config=config,
        settings={"profile": "full-access"},
        env={"KETCH_PASSPHRASE": PASSPHRASE},
    )
    end = asyncio.run(harness.turn("edit"))
    assert end.stop_reason == "end_turn"
    said = notices(harness.events, "language server fake")
    assert len(said) == 1 and "no sandbox is in force here" in said[0], said
    assert not any("[lsp]" in w.output for w in results(harness.events, "write_file"))
    from ketch_lsp.runtime import existing

    server = next(iter(existing(harness.kernel, harness.workspace).servers.values()))
    assert server.starts == 0
