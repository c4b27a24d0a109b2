"""Crash loop: a writer process killed with SIGKILL at random moments, again and again.

The writer is a forked child that drives the real recorder through a real kernel
session (resumed each round), and reports on a pipe every write it has seen
acknowledged (the hook returned, so the transaction committed). After each kill the
parent checks, with the writer dead:

* ``PRAGMA integrity_check`` is ok;
* every acknowledged message is in the transcript;
* every acknowledged outcome is recorded, and every operation whose outcome was not
  acknowledged is either recorded as finished (it committed just before the kill) or
  ``unknown_outcome`` after the recovery pass; none is left ``dispatched``.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import sqlite3
import sys
import time
from pathlib import Path

import pytest

import ketch_crypto
import ketch_store
from ketch.events import MessageEvent, ToolResultEvent, ToolStartedEvent, TurnEndEvent, UsageEvent
from ketch.kernel import Kernel
from ketch.messages import Message, TextPart, ToolCallPart, ToolResultPart
from ketch.testing.scripted import ScriptedProvider
from ketch_crypto.keys import load_data_key
from ketch_store.store import SqliteStore

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")

KILLS = 60


def _boot(workspace: Path) -> Kernel:
    return Kernel.boot(
        workspace=workspace,
        autoload=False,
        plugins=[("store", ketch_store), ("crypto", ketch_crypto)],
    )


def _writer(workspace: Path, session_id: str | None, out: int, seed: int) -> None:
    """Runs in the child until it is killed. Writes ack lines to ``out``."""
    rng = random.Random(seed)

    def ack(line: str) -> None:
        os.write(out, (line + "\n").encode())

    kernel = _boot(workspace)
    provider = ScriptedProvider([])
    if session_id is None:
        session = kernel.new_session(provider=provider)
    else:
        session = kernel.resume_session(session_id, provider=provider)
    ack(f"S {session.id}")
    emit = kernel.emit
    step = 0
    while True:
        step += 1
        tag = f"{os.getpid()}-{step}"
        user = Message.user(f"prompt {tag}")
        session.append(user)
        emit(session, MessageEvent(message=user))
        ack(f"M {user.id}")
        calls = [
            ToolCallPart(id=f"call-{tag}-{n}", name="work", input={"n": n})
            for n in range(rng.randint(1, 3))
        ]
        assistant = Message(role="assistant", parts=(TextPart(text=f"answer {tag}"), *calls))
        session.append(assistant)
        emit(session, MessageEvent(message=assistant))
        ack(f"M {assistant.id}")
        results = []
        for call in calls:
            emit(session, ToolStartedEvent(tool_call_id=call.id, name=call.name, input=call.input))
            ack(f"D {call.id}")
            time.sleep(rng.random() * 0.004)  # the effect
            emit(
                session,
                ToolResultEvent(
                    tool_call_id=call.id, name=call.name, ok=True, output=f"did {call.id}"
                ),
            )
            ack(f"F {call.id}")
            results.append(
                ToolResultPart(
                    tool_call_id=call.id, name=call.name, ok=True, output=f"did {call.id}"
                )
            )
        tool = Message(role="tool", parts=tuple(results))
        session.append(tool)
        emit(session, MessageEvent(message=tool))
        ack(f"M {tool.id}")
        emit(session, UsageEvent(input_tokens=10, output_tokens=5, context_utilization=0.1))
        emit(session, TurnEndEvent(text="", stop_reason="end_turn"))


def _run_child(workspace: Path, session_id: str | None, seed: int, kill_after: float) -> list[str]:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the writer
        code = 0
        try:
            os.close(read)
            _writer(workspace, session_id, write, seed)
        except BaseException as exc:  # noqa: BLE001 - report, never return into pytest
            with contextlib.suppress(Exception):
                os.write(write, f"E {type(exc).__name__}: {exc}\n".encode())
            code = 1
        finally:
            os._exit(code)
    os.close(write)
    buffer = b""
    first_ack: float | None = None
    started = time.monotonic()
    os.set_blocking(read, False)
    while True:
        with contextlib.suppress(BlockingIOError):
            chunk = os.read(read, 65536)
            if not chunk:
                break
            buffer += chunk
        if first_ack is None and b"\nM " in b"\n" + buffer:
            first_ack = time.monotonic()
        if first_ack is not None and time.monotonic() - first_ack >= kill_after:
            break
        if time.monotonic() - started > 20:
            break
        time.sleep(0.0005)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    os.set_blocking(read, True)
    while chunk := os.read(read, 65536):
        buffer += chunk
    os.close(read)
    lines = buffer.decode().splitlines()
    errors = [line for line in lines if line.startswith("E ")]
    assert not errors, errors
    return [
        line for line in lines if line.endswith(tuple("0123456789abcdef"))
    ]  # a torn last line is no ack


def test_sigkill_loop_loses_no_acknowledged_write(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    load_data_key(create=True)  # in the parent's memory keyring, so every child inherits it
    rng = random.Random(os.environ.get("STORE_CRASH_SEED", "ketch"))
    session_id: str | None = None
    acked_messages: set[str] = set()
    dispatched: set[str] = set()
    finished: set[str] = set()
    unknown_seen = 0
    path: Path | None = None
    for round_ in range(KILLS):
        lines = _run_child(
            workspace, session_id, rng.randrange(1 << 30), kill_after=rng.uniform(0.0, 0.06)
        )
        for line in lines:
            kind, _, value = line.partition(" ")
            if kind == "S":
                session_id = value
            elif kind == "M":
                acked_messages.add(value)
            elif kind == "D":
                dispatched.add(value)
            elif kind == "F":
                finished.add(value)
        assert session_id is not None, f"round {round_}: the writer never started"
        path = Path(os.environ["KETCH_STATE_DIR"]) / "sessions.db"
        raw = sqlite3.connect(path)
        assert raw.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        raw.close()
        kernel = _boot(workspace)
        store = kernel.store
        assert isinstance(store, SqliteStore)
        loaded = store.history(session_id)
        ids = {m.id for m in loaded.record.transcript}
        missing = acked_messages - ids
        assert not missing, f"round {round_}: acknowledged messages lost: {sorted(missing)[:3]}"
        status = {op.tool_call_id: op.status for op in loaded.operations}
        assert all(status.get(c) == "succeeded" for c in finished), (
            f"round {round_}: acknowledged outcome lost"
        )
        for call_id in dispatched - finished:
            assert status.get(call_id) in ("unknown_outcome", "succeeded"), (
                round_,
                call_id,
                status.get(call_id),
            )
        assert "dispatched" not in status.values(), (
            f"round {round_}: an operation is left dispatched"
        )
        unknown_seen = sum(1 for s in status.values() if s == "unknown_outcome")
        with sqlite3.connect(path) as raw:
            assert raw.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        store.close()
    # The loop must really have caught operations in flight, not only idle moments.
    assert unknown_seen >= 3, (
        f"only {unknown_seen} kills landed during an operation; the test is not biting"
    )
    assert len(acked_messages) > KILLS
    print(
        f"{KILLS} kills, {len(acked_messages)} acknowledged messages, {unknown_seen} unknown outcomes",
        file=sys.stderr,
    )
