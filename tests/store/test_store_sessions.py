"""Sessions through the kernel: the journal a real turn writes, resume, compaction, recovery."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

import ketch_budget
import ketch_compact
from ketch import hookimpl
from ketch.errors import KetchError
from ketch.events import MessageEvent, ToolResultEvent, ToolStartedEvent
from ketch.messages import Message
from ketch.storage import IntegrityError
from ketch.testing import Harness, call, text
from ketch.testing.harness import patched_environ
from ketch.testing.keyring_backend import LockedKeyring
from ketch_context_kit.compaction import (
    CompactionRequest,
    CompactionResult,
    pinned,
    records,
    set_pinned,
)
from ketch_policy_kit.approvals import session_approvals
from ketch_store.store import SqliteStore
from ketch_store_kit.record import NOT_RUN
from tests.store import store_test_tools
from tests.store.conftest import STORE_PLUGINS


def harness(root: Path, script: list[dict[str, Any]], **kw: Any) -> Harness:
    plugins = [("store_tools", store_test_tools), *kw.pop("plugins", [])]
    return Harness.create(root, script=script, plugins=plugins, bundled=STORE_PLUGINS, **kw)


def store_of(h: Harness) -> SqliteStore:
    with patched_environ({k: v for k, v in h.environ.items() if k.startswith(("KETCH_", "XDG_"))}):
        store = h.kernel.store
    assert isinstance(store, SqliteStore)
    return store


def journal(store: SqliteStore, session_id: str) -> list[tuple[int, str]]:
    return [(seq, kind) for seq, kind, _, _ in store.entries(session_id)]


def test_a_turn_is_journaled_completely(tmp_path: Path) -> None:
    h = harness(
        tmp_path,
        [
            {"reasoning": "let me think", "text": "", **call("note", {"text": "remember this"})},
            text("all done"),
        ],
    )
    end = h.run("please take a note")
    assert end.stop_reason == "end_turn"
    store = store_of(h)
    record = store.load_session(h.session.id)
    assert [m.model_dump() for m in record.transcript] == [
        m.model_dump() for m in h.session.transcript
    ]
    assert record.transcript[1].parts[0].type == "reasoning"
    assert record.usage == h.session.usage and record.usage.input_tokens == 20
    assert (
        record.workspace == str(h.workspace)
        and record.model == "scripted-model"
        and record.provider == "scripted"
    )
    kinds = [kind for _, kind in journal(store, h.session.id)]
    assert kinds[0] == "session" and "turn_end" in kinds
    assert kinds.index("tool_started") < kinds.index("tool_result")
    seqs = [seq for seq, _ in journal(store, h.session.id)]
    assert seqs == list(range(1, len(seqs) + 1))
    loaded = store.history(h.session.id)
    assert [(op.name, op.status, op.output) for op in loaded.operations] == [
        ("note", "succeeded", "noted: remember this")
    ]
    summary = store.list_sessions(str(h.workspace))
    assert [s.id for s in summary] == [h.session.id] and summary[0].title == "please take a note"
    assert summary[0].messages == len(record.transcript)
    assert store.list_sessions("/some/other/workspace") == []
    assert store.latest_session_id(str(h.workspace)) == h.session.id


def test_the_same_event_twice_is_journaled_once(tmp_path: Path) -> None:
    h = harness(tmp_path, [text("hi")])
    h.run("hello")
    store = store_of(h)
    before = journal(store, h.session.id)
    event = MessageEvent(message=Message.user("again"))
    h.kernel.emit(h.session, event)
    h.kernel.emit(h.session, event)
    after = journal(store, h.session.id)
    assert after == before + [(before[-1][0] + 1, "message")]


def test_resume_restores_knowledge_and_resets_authority(tmp_path: Path) -> None:
    first = harness(
        tmp_path,
        [call("note", {"text": "a"}), text("first answer")],
        settings={"profile": "full-access", "mode": "plan"},
    )
    first.run("first question")
    session = first.session
    set_pinned(session.state, {session.transcript[0].id})
    session.state["store_tools"] = {"counter": 3}
    first.kernel.end(session)
    assert session.profile == "full-access"

    second = harness(tmp_path, [text("second answer")])
    resumed = second.resume(None)  # --continue: the latest session of this workspace
    assert resumed.id == session.id and resumed.resumed
    assert [m.model_dump() for m in resumed.transcript] == [
        m.model_dump() for m in session.transcript
    ]
    assert resumed.mode == "plan" and resumed.profile == "manual"
    assert session_approvals(resumed) == []
    assert pinned(resumed.state) == {session.transcript[0].id}
    assert resumed.state["store_tools"] == {"counter": 3}
    assert resumed.usage == session.usage
    second.run("second question")
    request = second.provider.requests[-1]
    assert [m.text for m in request.messages if m.role == "user"] == [
        "first question",
        "second question",
    ]
    third = store_of(second).load_session(session.id)
    assert [m.text for m in third.transcript if m.role == "assistant"][-2:] == [
        "first answer",
        "second answer",
    ]


def test_resume_elsewhere_is_refused(tmp_path: Path) -> None:
    first = harness(tmp_path / "a", [text("x")])
    first.run("hello")
    other = harness(
        tmp_path / "b", [text("y")], env={"KETCH_STATE_DIR": first.environ["KETCH_STATE_DIR"]}
    )
    with pytest.raises(KetchError, match="never rebound silently"):
        other.resume(first.session.id)


class Summarizer:
    """Keeps the last message; everything before becomes one summary message."""

    @hookimpl(optionalhook=True)
    def compact_compactor(self, request: CompactionRequest) -> CompactionResult:
        summary = Message.user("[summary] earlier talk", synthetic=True)
        kept = request.messages[-1:]
        replaced = [m.id for m in request.messages[:-1]]
        return CompactionResult(
            messages=(summary, *kept),
            before_tokens=0,
            after_tokens=10,
            compactor="test",
            summary="earlier talk",
            record=[{"replaced": replaced, "by": summary.id, "how": "summary"}],
        )


def test_compaction_keeps_the_transcript_and_saves_the_active_context(tmp_path: Path) -> None:
    big = "word " * 900
    h = harness(
        tmp_path,
        [text("one"), text("two"), text("three")],
        plugins=[
            ("summarizer", Summarizer()),
            ("compact", ketch_compact),
            ("budget", ketch_budget),
        ],
        context_window=6000,
    )
    h.run("first " + big)
    h.run("second " + big)
    h.run("third " + big)
    assert h.of_type("compaction"), "the test needs a compaction to happen"
    session = h.session
    assert len(session.active) < len(session.transcript)
    h.kernel.end(session)
    record = store_of(h).load_session(session.id)
    assert [m.model_dump() for m in record.transcript] == [
        m.model_dump() for m in session.transcript
    ]
    assert record.active is not None
    assert [m.model_dump() for m in record.active] == [m.model_dump() for m in session.active]
    compactions = records(record.state)
    assert compactions and compactions[-1]["compactor"] == "test"
    assert compactions[-1]["record"][0]["how"] == "summary"
    resumed = harness(tmp_path, []).resume(session.id)
    assert [m.id for m in resumed.active] == [m.id for m in session.active]
    assert len(resumed.transcript) == len(session.transcript)


def _dispatch_without_result(h: Harness) -> str:
    """Journal a tool call as dispatched and "crash": no result, owner lock dropped."""
    h.run("start")
    session = h.session
    message = Message(
        role="assistant",
        parts=({"type": "tool_call", "id": "call_crash", "name": "touch", "input": {"path": "x"}},),
    )
    session.append(message)
    h.kernel.emit(session, MessageEvent(message=message))
    h.kernel.emit(
        session, ToolStartedEvent(tool_call_id="call_crash", name="touch", input={"path": "x"})
    )
    store = store_of(h)
    store.close()  # the process "dies": its owner lock goes with it
    return session.id


def test_recovery_marks_in_flight_operations_unknown_and_resume_says_so(tmp_path: Path) -> None:
    session_id = _dispatch_without_result(harness(tmp_path, [text("ok")]))
    second = harness(tmp_path, [text("I will check x first")])
    store = store_of(second)
    assert len(store.recovered) == 1
    assert store.history(session_id).operations[0].status == "unknown_outcome"
    resumed = second.resume(session_id)
    last = resumed.transcript[-1]
    assert last.role == "tool" and last.synthetic
    assert "outcome of this call is unknown" in last.tool_results[0].output
    record = store.load_session(session_id)
    assert [u["tool_call_id"] for u in record.unknown_outcomes] == ["call_crash"]
    second.run("what happened?")
    sent = second.provider.requests[-1].messages
    assert any("outcome of this call is unknown" in r.output for m in sent for r in m.tool_results)
    kinds = [kind for _, kind in journal(store, session_id)]
    assert "recovery" in kinds
    # opening again finds nothing more to recover
    again = SqliteStore.open(store.path, store.fields.cipher)
    assert again.recovered == []
    again.close()


def test_a_live_process_keeps_its_operations(tmp_path: Path) -> None:
    h = harness(tmp_path, [text("ok")])
    h.run("start")
    h.kernel.emit(
        h.session, ToolStartedEvent(tool_call_id="call_live", name="touch", input={"path": "y"})
    )
    store = store_of(h)
    other = SqliteStore.open(store.path, store.fields.cipher)  # e.g. a second ketch meanwhile
    assert other.recovered == []
    assert other.history(h.session.id).operations[0].status == "dispatched"
    other.close()
    h.kernel.emit(
        h.session, ToolResultEvent(tool_call_id="call_live", name="touch", ok=True, output="done")
    )
    assert store.history(h.session.id).operations[0].status == "succeeded"


def test_calls_that_never_started_or_finished_before_the_crash(tmp_path: Path) -> None:
    h = harness(tmp_path, [text("ok")])
    h.run("start")
    session = h.session
    parts = [
        {"type": "tool_call", "id": f"call_{n}", "name": "note", "input": {"text": str(n)}}
        for n in range(3)
    ]
    message = Message(role="assistant", parts=tuple(parts))
    session.append(message)
    h.kernel.emit(session, MessageEvent(message=message))
    h.kernel.emit(
        session, ToolStartedEvent(tool_call_id="call_0", name="note", input={"text": "0"})
    )
    h.kernel.emit(
        session, ToolResultEvent(tool_call_id="call_0", name="note", ok=True, output="noted: 0")
    )
    h.kernel.emit(
        session, ToolStartedEvent(tool_call_id="call_1", name="note", input={"text": "1"})
    )
    store_of(h).close()
    record = harness(tmp_path, []).resume(session.id)
    results = record.transcript[-1].tool_results
    assert [r.tool_call_id for r in results] == ["call_0", "call_1", "call_2"]
    assert results[0].ok and results[0].output == "noted: 0"
    assert "unknown" in results[1].output and not results[1].ok
    assert results[2].output == NOT_RUN


def test_rename_delete_and_prefixes(tmp_path: Path) -> None:
    h = harness(tmp_path, [text("a")])
    h.run("hello")
    store = store_of(h)
    sid = h.session.id
    store.rename_session(sid[:12], "  my   session ")
    assert store.load_session(sid).name == "my session"
    assert store.list_sessions()[0].name == "my session"
    with pytest.raises(KetchError, match="no session"):
        store.load_session("ses_nope")
    store.delete_session(sid)
    assert store.list_sessions() == [] and store.entries(sid) == []
    with pytest.raises(KetchError):
        store.delete_session(sid)


def test_a_locked_store_leaves_the_session_running_unsaved(tmp_path: Path) -> None:
    import keyring

    first = harness(tmp_path, [text("saved")])
    first.run("one")
    store_of(first).close()
    keyring.set_keyring(LockedKeyring())
    second = harness(tmp_path, [text("not saved")])
    end = second.run("two")
    assert end.stop_reason == "end_turn"
    notices = [e.message for e in second.of_type("notice")]
    assert any("not being saved" in n and "recovery-locked" in n for n in notices)
    assert second.types()[0] == "session"  # the notice comes after, never before
    with pytest.raises(KetchError, match="recovery-locked"):
        harness(tmp_path, []).resume(None)


def test_encryption_off_says_so(tmp_path: Path) -> None:
    h = harness(tmp_path, [text("plain")], config='[storage]\nencryption = "off"\n')
    h.run("hello")
    assert any("saved unencrypted" in e.message for e in h.of_type("notice"))
    assert not store_of(h).encrypted


def test_a_store_that_cannot_write_stops_the_tool(tmp_path: Path) -> None:
    h = harness(tmp_path, [text("warm"), call("touch", {"path": "made.txt"}), text("done")])
    h.run("warm up")  # opens the store
    store_of(h).conn.close()  # the database goes away underneath
    end = h.run("make a file")  # the turn ends, with an error the frontend sees; no traceback
    assert end.stop_reason == "error"
    assert any("could not record" in e.message for e in h.of_type("error"))
    assert not (h.workspace / "made.txt").exists()


def test_tool_started_is_committed_before_the_effect(tmp_path: Path) -> None:
    seen: list[str] = []
    h = harness(tmp_path, [call("touch", {"path": "f.txt"}), text("done")])
    original = store_test_tools.Touch.run

    async def checking_run(self: Any, args: Any, ctx: Any) -> Any:
        # a separate connection sees the dispatch committed while the effect runs
        import sqlite3

        raw = sqlite3.connect(store_of(h).path)
        seen.extend(row[0] for row in raw.execute("SELECT status FROM operations"))
        raw.close()
        return await original(self, args, ctx)

    store_test_tools.Touch.run = checking_run  # type: ignore[method-assign]
    try:
        h.run("touch it")
    finally:
        store_test_tools.Touch.run = original  # type: ignore[method-assign]
    assert seen == ["dispatched"]


def test_integrity_errors_surface_on_resume(tmp_path: Path) -> None:
    import sqlite3

    h = harness(tmp_path, [text("x")])
    h.run("hello")
    store = store_of(h)
    raw = sqlite3.connect(store.path, isolation_level=None)
    raw.execute("DROP TRIGGER journal_append_only")
    raw.execute(
        "UPDATE journal SET payload = substr(payload, 1, length(payload) - 1) WHERE seq = 2"
    )
    raw.close()
    with pytest.raises(IntegrityError):
        harness(tmp_path, []).resume(h.session.id)


def test_events_from_a_tool_thread_are_serialized(tmp_path: Path) -> None:
    h = harness(tmp_path, [text("x")])
    h.run("hello")
    session = h.session

    async def many() -> None:
        def emit(n: int) -> None:
            h.kernel.emit(session, MessageEvent(message=Message.user(f"thread {n}")))

        await asyncio.gather(*(asyncio.to_thread(emit, n) for n in range(20)))

    asyncio.run(many())
    entries = journal(store_of(h), session.id)
    assert [seq for seq, _ in entries] == list(range(1, len(entries) + 1))
    assert sum(1 for _, kind in entries if kind == "message") == len(session.transcript) + 20


def test_a_session_with_nothing_said_is_not_kept(tmp_path: Path) -> None:
    h = harness(tmp_path, [text("x")])
    session = h.session  # started, but no prompt
    store = store_of(h)
    assert store.has_session(session.id)
    h.kernel.end(session)
    assert not store.has_session(session.id)
    h2 = harness(tmp_path, [text("kept")])
    h2.run("something")
    h2.kernel.end(h2.session)
    assert store_of(h2).has_session(h2.session.id)


def test_a_reused_call_id_is_recovered_and_kept_apart(tmp_path: Path) -> None:
    """Some local models send the same call id every step: history and recovery cope."""
    h = harness(tmp_path, [text("ok")])
    h.run("start")
    session = h.session
    for step in range(2):
        message = Message(
            role="assistant",
            parts=(
                {"type": "tool_call", "id": "call_0", "name": "note", "input": {"text": str(step)}},
            ),
        )
        session.append(message)
        h.kernel.emit(session, MessageEvent(message=message))
        h.kernel.emit(
            session, ToolStartedEvent(tool_call_id="call_0", name="note", input={"text": str(step)})
        )
        if step == 0:
            h.kernel.emit(
                session,
                ToolResultEvent(tool_call_id="call_0", name="note", ok=True, output="noted: 0"),
            )
            result = Message(
                role="tool",
                parts=(
                    {
                        "type": "tool_result",
                        "tool_call_id": "call_0",
                        "name": "note",
                        "ok": True,
                        "output": "noted: 0",
                    },
                ),
            )
            session.append(result)
            h.kernel.emit(session, MessageEvent(message=result))
    store_of(h).close()
    store = store_of(harness(tmp_path, []))
    operations = store.history(session.id).operations
    assert [(op.input, op.status) for op in operations] == [
        ({"text": "0"}, "succeeded"),
        ({"text": "1"}, "unknown_outcome"),
    ]
    assert [u["input"] for u in store.load_session(session.id).unknown_outcomes] == [{"text": "1"}]


def test_a_reused_call_id_crashing_twice_is_recovered_twice(tmp_path: Path) -> None:
    h = harness(tmp_path, [text("ok")])
    h.run("start")
    session_id = h.session.id
    for attempt in range(2):
        live = h if attempt == 0 else harness(tmp_path, [])
        session = live.session if attempt == 0 else live.resume(session_id)
        message = Message(
            role="assistant",
            parts=(
                {
                    "type": "tool_call",
                    "id": "call_0",
                    "name": "touch",
                    "input": {"path": str(attempt)},
                },
            ),
        )
        session.append(message)
        live.kernel.emit(session, MessageEvent(message=message))
        live.kernel.emit(
            session,
            ToolStartedEvent(tool_call_id="call_0", name="touch", input={"path": str(attempt)}),
        )
        store_of(live).close()
    store = store_of(harness(tmp_path, []))
    assert [op.status for op in store.history(session_id).operations] == [
        "unknown_outcome",
        "unknown_outcome",
    ]
