"""The shell's parts without a terminal: encrypted history, command parsing, rendering."""

from __future__ import annotations

import base64
import io
import os
from pathlib import Path
from typing import Any

import pytest
import shelltest_tools
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from prompt_toolkit.history import InMemoryHistory
from rich.console import Console

from ketch import hookimpl
from ketch.events import (
    ErrorEvent,
    PermissionEvent,
    TextDeltaEvent,
    ToolCallEvent,
    ToolResultEvent,
    TurnEndEvent,
    UsageEvent,
)
from ketch.storage import IntegrityError
from ketch.testing import Harness
from ketch_interactive import slash
from ketch_interactive.history import EncryptedPromptHistory, open_history
from ketch_interactive.render import Renderer, meter_for
from ketch_prompt_kit.history_file import HEADER, entry_aad


class KeyInHandCipher:
    """AES-GCM with a key in hand: the FieldCipher protocol, nothing more."""

    algorithm = "AES-256-GCM"

    def __init__(self, key: bytes | None = None) -> None:
        self.aead = AESGCM(key or os.urandom(32))
        self.encrypted = 0

    def encrypt(self, plaintext: bytes, aad: bytes) -> bytes:
        self.encrypted += 1
        nonce = os.urandom(12)
        return nonce + self.aead.encrypt(nonce, plaintext, aad)

    def decrypt(self, envelope: bytes, aad: bytes) -> bytes:
        try:
            return self.aead.decrypt(envelope[:12], envelope[12:], aad)
        except InvalidTag:
            raise IntegrityError("failed authentication") from None

    def index(self, value: str) -> str:
        return value


def _load(history: EncryptedPromptHistory) -> list[str]:
    return list(history.load_history_strings())


# --- encrypted history --------------------------------------------------------------------


def test_history_round_trips_newest_first_and_never_in_plaintext(tmp_path: Path) -> None:
    cipher = KeyInHandCipher()
    path = tmp_path / "state" / "prompt-history"
    history = EncryptedPromptHistory(path, cipher)
    for text in ("first canary-a", "second\nmulti-line canary-b", "third canary-c"):
        history.store_string(text)
    data = path.read_bytes()
    assert data.startswith(HEADER)
    assert b"canary" not in data
    assert path.stat().st_mode & 0o777 == 0o600
    again = EncryptedPromptHistory(path, cipher)
    assert _load(again) == ["third canary-c", "second\nmulti-line canary-b", "first canary-a"]
    assert again.skipped == 0


def test_entries_are_bound_to_their_position_and_purpose(tmp_path: Path) -> None:
    cipher = KeyInHandCipher()
    path = tmp_path / "prompt-history"
    history = EncryptedPromptHistory(path, cipher)
    for text in ("zero", "one", "two"):
        history.store_string(text)
    lines = path.read_bytes()[len(HEADER) :].splitlines()
    # Swap two entries: each now sits at another index, so both fail authentication.
    path.write_bytes(HEADER + b"\n".join([lines[1], lines[0], lines[2]]) + b"\n")
    reloaded = EncryptedPromptHistory(path, cipher)
    assert _load(reloaded) == ["two"]
    assert reloaded.skipped == 2
    # A ciphertext made for another purpose, even at the right index, is refused too.
    foreign = base64.b64encode(cipher.encrypt(b"smuggled", b"ketch/other-file/v1\x000"))
    path.write_bytes(HEADER + foreign + b"\n")
    assert _load(EncryptedPromptHistory(path, cipher)) == []
    assert cipher.decrypt(base64.b64decode(foreign), b"ketch/other-file/v1\x000") == b"smuggled"


def test_history_under_another_key_is_skipped_not_fatal(tmp_path: Path) -> None:
    path = tmp_path / "prompt-history"
    EncryptedPromptHistory(path, KeyInHandCipher()).store_string("old key")
    fresh = EncryptedPromptHistory(path, KeyInHandCipher())
    assert _load(fresh) == []
    assert fresh.skipped == 1
    fresh.store_string("new key")  # appends at the next index, readable under the new key
    assert _load(EncryptedPromptHistory(path, fresh.cipher)) == ["new key"]


def test_corrupt_lines_and_foreign_files_are_skipped(tmp_path: Path) -> None:
    cipher = KeyInHandCipher()
    path = tmp_path / "prompt-history"
    history = EncryptedPromptHistory(path, cipher)
    history.store_string("kept")
    with path.open("ab") as handle:
        handle.write(b"not base64 at all!!\n" + base64.b64encode(b"short") + b"\n")
    reloaded = EncryptedPromptHistory(path, cipher)
    assert _load(reloaded) == ["kept"]
    assert reloaded.skipped == 2
    path.write_text("plain text someone else wrote\n")
    assert _load(EncryptedPromptHistory(path, cipher)) == []


def test_history_is_trimmed_when_it_grows_past_twice_the_limit(tmp_path: Path) -> None:
    cipher = KeyInHandCipher()
    path = tmp_path / "prompt-history"
    history = EncryptedPromptHistory(path, cipher, keep=3)
    for n in range(7):
        history.store_string(f"entry {n}")
    assert _load(EncryptedPromptHistory(path, cipher, keep=3)) == ["entry 6", "entry 5", "entry 4"]
    assert len(path.read_bytes()[len(HEADER) :].splitlines()) == 3  # rewritten, re-indexed
    assert _load(EncryptedPromptHistory(path, cipher, keep=10)) == ["entry 6", "entry 5", "entry 4"]


def test_trimming_never_destroys_entries_under_another_key(tmp_path: Path) -> None:
    path = tmp_path / "prompt-history"
    EncryptedPromptHistory(path, KeyInHandCipher()).store_string("under the old key")
    cipher = KeyInHandCipher()
    history = EncryptedPromptHistory(path, cipher, keep=2)
    for n in range(6):
        history.store_string(f"entry {n}")
    reloaded = EncryptedPromptHistory(path, cipher, keep=2)
    assert _load(reloaded) == ["entry 5", "entry 4"]
    assert reloaded.skipped == 1
    assert len(path.read_bytes()[len(HEADER) :].splitlines()) == 7  # nothing rewritten


def test_a_failing_cipher_never_leaves_plaintext(tmp_path: Path) -> None:
    class Broken(KeyInHandCipher):
        def encrypt(self, plaintext: bytes, aad: bytes) -> bytes:
            raise RuntimeError("keyring went away")

    path = tmp_path / "prompt-history"
    history = EncryptedPromptHistory(path, Broken())
    history.append_string("secret canary")
    history.append_string("another")
    assert history.write_error and "keyring went away" in history.write_error
    assert not path.exists()
    assert history.get_strings() == ["secret canary", "another"]  # still recallable in this run


class _CipherPlugin:
    def __init__(self, cipher: Any) -> None:
        self.cipher = cipher

    @hookimpl
    def ketch_field_cipher(self, settings: Any) -> Any:
        return self.cipher


def test_open_history_memory_only_without_a_cipher(tmp_path: Path) -> None:
    harness = Harness.create(tmp_path, bundled=False)
    history, note = open_history(harness.kernel)
    assert isinstance(history, InMemoryHistory)
    assert note and "memory only" in note and "no encryption plugin" in note


def test_open_history_memory_only_when_encryption_is_off(tmp_path: Path) -> None:
    harness = Harness.create(
        tmp_path,
        bundled=False,
        plugins=[("cipher", _CipherPlugin(KeyInHandCipher()))],
        config='[storage]\nencryption = "off"\n',
    )
    history, note = open_history(harness.kernel)
    assert isinstance(history, InMemoryHistory)
    assert note and "storage.encryption is off" in note


def test_open_history_encrypted_with_a_cipher(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KETCH_STATE_DIR", str(tmp_path / "state"))
    harness = Harness.create(
        tmp_path, bundled=False, plugins=[("cipher", _CipherPlugin(KeyInHandCipher()))]
    )
    history, note = open_history(harness.kernel)
    assert note is None
    assert isinstance(history, EncryptedPromptHistory)
    assert history.path == tmp_path / "state" / "prompt-history"


def test_open_history_with_a_locked_key_stays_in_memory_and_says_why(tmp_path: Path) -> None:
    class Locked(KeyInHandCipher):
        def unlock(self, *, create: bool) -> None:
            self.create = create
            raise IntegrityError("recovery-locked: the key is missing")

    cipher = Locked()
    harness = Harness.create(tmp_path, bundled=False, plugins=[("cipher", _CipherPlugin(cipher))])
    history, note = open_history(harness.kernel)
    assert isinstance(history, InMemoryHistory)
    assert note and "recovery-locked: the key is missing" in note
    assert cipher.create is True  # no store and no history file: minting a key is safe


def test_entry_aad_names_purpose_and_index() -> None:
    assert entry_aad(0) != entry_aad(1)
    assert entry_aad(12).startswith(b"ketch/prompt-history/v1")


# --- slash command lines -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "parsed"),
    [
        ("/help", ("help", "")),
        ("  /Model  gpt-4o  ", ("model", "gpt-4o")),
        (
            "/compact keep the API notes\nand the plan",
            ("compact", "keep the API notes\nand the plan"),
        ),
        ("/pin-last", ("pin-last", "")),
        ("/usr/bin/python is broken", None),
        ("/ leading space", None),
        ("//not a command", None),
        ("what does /help do", None),
        ("/9lives", None),
    ],
)
def test_slash_parse(line: str, parsed: tuple[str, str] | None) -> None:
    assert slash.parse(line) == parsed


# --- rendering -----------------------------------------------------------------------------------


def _renderer(tmp_path: Path) -> tuple[Renderer, io.StringIO, Harness]:
    harness = Harness.create(tmp_path, bundled=False, plugins=[("shelltest", shelltest_tools)])
    harness.kernel.configure()
    out = io.StringIO()
    console = Console(
        file=out, width=100, force_terminal=False, highlight=False, markup=False, soft_wrap=True
    )
    return Renderer(console, harness.kernel), out, harness


def test_streaming_markdown_prints_finished_blocks_once_and_keeps_the_last_live(
    tmp_path: Path,
) -> None:
    renderer, out, _ = _renderer(tmp_path)
    renderer.on_event(TextDeltaEvent(text="# Ti"))
    renderer.on_event(TextDeltaEvent(text="tle\n\nSome **bo"))
    assert out.getvalue() == ""  # a block is known to be finished once the next one has a line
    assert "Title" in renderer.live_ansi(80, 10) and "#" not in renderer.live_ansi(80, 10)
    renderer.on_event(TextDeltaEvent(text="ld** text\nand a second line"))
    assert "Title" in out.getvalue() and "#" not in out.getvalue()  # the heading block is done
    assert renderer.live == "Some **bold** text\nand a second line"
    assert "bold" not in out.getvalue()  # the paragraph is still the live block
    live = renderer.live_ansi(80, 10)
    assert "bold text" in live and "**" not in live
    renderer.on_event(
        TurnEndEvent(text="…", stop_reason="end_turn", input_tokens=12, output_tokens=3)
    )
    text = out.getvalue()
    assert text.count("Title") == 1  # printed once, never re-rendered
    lines = [line.rstrip() for line in text.splitlines()]
    assert (
        "Some bold text" in lines and "and a second line" in lines
    )  # a newline stays a line break
    assert "in 12 · out 3" in text
    assert renderer.live == ""


def test_tool_call_line_uses_the_tool_summary_and_results_show_diff_and_errors(
    tmp_path: Path,
) -> None:
    renderer, out, _ = _renderer(tmp_path)
    renderer.on_event(ToolCallEvent(id="c1", name="mark", input={"name": "x.txt"}))
    renderer.on_event(
        ToolResultEvent(
            tool_call_id="c1",
            name="mark",
            ok=True,
            output="created",
            diff="--- a\n+++ b\n@@ -1 +1 @@\n-old\n+new\n",
        )
    )
    renderer.on_event(ToolCallEvent(id="c2", name="unknown_tool", input={"cmd": "ls -la"}))
    renderer.on_event(
        ToolResultEvent(
            tool_call_id="c2",
            name="unknown_tool",
            ok=False,
            output="[ketch] There is no tool named 'unknown_tool'.",
            outcome="refused",
        )
    )
    renderer.on_event(ToolCallEvent(id="c3", name="mark", input={"name": "y.txt"}))
    renderer.on_event(PermissionEvent(tool_call_id="c3", decision="deny", reason="rule says no"))
    renderer.on_event(
        ToolResultEvent(
            tool_call_id="c3",
            name="mark",
            ok=False,
            output="[ketch] Permission denied",
            outcome="refused",
        )
    )
    text = out.getvalue()
    assert "● mark  create x.txt" in text
    assert "  -old\n  +new" in text
    assert '● unknown_tool  {"cmd": "ls -la"}' in text
    assert "✗ [ketch] There is no tool named" in text
    assert "✗ denied: rule says no" in text
    assert "Permission denied" not in text  # the permission line already said it


def test_retry_errors_start_a_countdown_and_usage_feeds_the_meter(tmp_path: Path) -> None:
    renderer, out, harness = _renderer(tmp_path)
    renderer.on_event(
        ErrorEvent(kind="rate_limit", retryable=True, message="slow down", retry_in=5.0)
    )
    assert "⚠ rate_limit: slow down · retrying in 5.0s" in out.getvalue()
    assert "rate_limit: retrying in" in renderer.status()
    renderer.on_event(TextDeltaEvent(text="ok"))
    assert "retrying" not in renderer.status()
    session = harness.session
    assert meter_for(session, None).estimated
    renderer.on_event(
        UsageEvent(
            input_tokens=900,
            output_tokens=100,
            context_utilization=0.9,
            context_tokens=1000,
            effective_capacity=1111,
        )
    )
    meter = meter_for(session, renderer.last_usage)
    assert (meter.band, meter.tokens, meter.estimated) == ("orange", 1000, False)
    assert meter.label() == "context 90%"


def test_a_rendering_failure_never_reaches_the_loop(tmp_path: Path) -> None:
    renderer, _, _ = _renderer(tmp_path)

    def broken(event: Any) -> None:
        raise ValueError("bad glyph")

    renderer._on_text_delta = broken  # type: ignore[method-assign]
    renderer.on_event(TextDeltaEvent(text="x"))  # must not raise
    assert renderer.failed


# --- the approval list, keys fed through a pipe ------------------------------------------------------


def _request(scope: str | None, summary: str = "rm -rf build") -> Any:
    from ketch.policy import ApprovalRequest, ProposedCall
    from ketch.tools import Effect

    call = ProposedCall(
        id="c1",
        tool="shell",
        input={"command": summary},
        effects=frozenset({Effect.EXECUTE}),
        mutating=True,
    )
    return ApprovalRequest(call=call, reason="running programs asks", summary=summary, scope=scope)


def _answer(request: Any, keys: str) -> Any:
    import asyncio

    from prompt_toolkit.application import create_app_session
    from prompt_toolkit.input import create_pipe_input
    from prompt_toolkit.output import DummyOutput

    from ketch_interactive.approval import ask_approval

    async def note(message: str) -> str:
        from prompt_toolkit import PromptSession

        return await PromptSession().prompt_async(message)

    with create_pipe_input() as pipe, create_app_session(input=pipe, output=DummyOutput()):
        pipe.send_text(keys)
        return asyncio.run(ask_approval(request, note))


@pytest.mark.parametrize(
    ("keys", "approved", "remember"),
    [
        ("y", True, "once"),
        ("s", True, "session"),
        ("a", True, "always"),
        ("n", False, "once"),
        ("\x1b", False, "once"),
        ("\r", True, "once"),
    ],
)
def test_approval_keys_map_to_answers(keys: str, approved: bool, remember: str) -> None:
    answer = _answer(_request("shell:rm"), keys)
    assert (answer.approved, answer.remember, answer.message) == (approved, remember, None)


def test_approval_without_a_scope_offers_no_remembering() -> None:
    from ketch_interactive.approval import approval_message

    answer = _answer(_request(None), "say")  # "s" and "a" are not options here: they do nothing
    assert (answer.approved, answer.remember) == (True, "once")
    text = "".join(t for _, t in approval_message(_request(None))[0])
    assert "rm -rf build" in text and "running programs asks" in text


def test_approval_note_goes_to_the_model() -> None:
    answer = _answer(_request("shell:rm"), "tuse make clean instead\r")
    assert (answer.approved, answer.message) == (False, "use make clean instead")


def test_a_long_summary_is_not_squeezed_into_the_list() -> None:
    from ketch_interactive.approval import approval_message, summary_is_long

    long = _request(None, "\n".join(f"echo {i}" for i in range(40)))
    assert summary_is_long(long) and not summary_is_long(_request(None))
    text = "".join(t for _, t in approval_message(long)[0])
    assert "shown above" in text and "echo 39" not in text


def test_completion_offers_commands_and_at_paths(tmp_path: Path) -> None:
    from prompt_toolkit.completion import CompleteEvent
    from prompt_toolkit.document import Document

    from ketch_interactive.completion import ShellCompleter

    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "main.py").write_text("")
    (tmp_path / "src" / "my notes.txt").write_text("")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".env").write_text("")
    completer = ShellCompleter(
        tmp_path,
        lambda: [("/review", "[path] review code (project .ketch/commands)"), ("/help", "help")],
    )

    def complete(text: str) -> list[tuple[str, int]]:
        return [
            (c.text, c.start_position)
            for c in completer.get_completions(Document(text), CompleteEvent())
        ]

    assert complete("/re") == [("/review", -3)]
    assert complete("look at @sr") == [("src/", -2)]
    assert complete("look at @src/ma") == [("main.py", -2)]
    assert complete("@src/my") == [('"src/my notes.txt"', -6)]
    assert complete("@") == [("src/", 0)]  # no hidden entries, never .git
    assert complete("@.") == [(".env", -1)]
    assert complete("mail me@x") == [] and complete("plain words") == []


def test_turn_footer_shows_cost_when_the_turn_has_one(tmp_path: Path) -> None:
    """The footer shows the turn's own total (turn_end.cost_usd), which is None when any
    response had no known price: a partial sum is never shown as the cost."""
    from types import SimpleNamespace

    renderer, out, _ = _renderer(tmp_path)
    usage = {
        "input_tokens": 10,
        "output_tokens": 5,
        "cached_tokens": 0,
        "context_utilization": 0.1,
        "context_tokens": 100,
        "effective_capacity": 1000,
    }
    renderer.on_event(SimpleNamespace(type="usage", cost_usd=0.0125, **usage))  # type: ignore[arg-type]
    renderer.on_event(SimpleNamespace(type="usage", cost_usd=0.0025, **usage))  # type: ignore[arg-type]
    renderer.on_event(
        TurnEndEvent(
            text="", stop_reason="end_turn", input_tokens=20, output_tokens=10, cost_usd=0.015
        )
    )
    assert "in 20 · out 10 · $0.0150" in out.getvalue()
    renderer.on_event(SimpleNamespace(type="usage", cost_usd=0.5, **usage))  # type: ignore[arg-type]
    renderer.on_event(
        TurnEndEvent(text="", stop_reason="end_turn", input_tokens=1, output_tokens=1)
    )
    assert (
        "in 1 · out 1 · context" in out.getvalue() and "$0.5" not in out.getvalue()
    )  # no total: no cost shown


def test_a_subagents_progress_is_folded_under_its_call(tmp_path: Path) -> None:
    """A child's calls are one indented line each, named by the agent; its streamed text
    is not shown (its answer comes back as the agent call's result)."""
    from ketch.events import ToolCallEvent, ToolResultEvent
    from ketch_agents.events import SubagentEvent

    renderer, out, _ = _renderer(tmp_path)
    renderer.on_event(
        ToolCallEvent(id="c1", name="agent", input={"description": "look", "prompt": "p"})
    )
    renderer.on_event(
        SubagentEvent(
            status="started",
            subagent_id="ag_1",
            name="explore",
            description="find the parser",
            tool_call_id="c1",
        )
    )
    renderer.on_event(
        ToolCallEvent(id="k1", name="read_file", input={"path": "src/parse.py"}, agent_id="ag_1")
    )
    renderer.on_event(TextDeltaEvent(text="CHILD-TEXT-NOT-SHOWN", agent_id="ag_1"))
    renderer.on_event(
        ToolResultEvent(
            tool_call_id="k2", name="grep", ok=False, output="no such dir", agent_id="ag_1"
        )
    )
    renderer.on_event(
        SubagentEvent(
            status="finished",
            subagent_id="ag_1",
            name="explore",
            stop_reason="end_turn",
            files_changed=[],
        )
    )
    screen = out.getvalue()
    assert "⎿ explore started: find the parser" in screen
    assert "      explore ● read_file" in screen and "src/parse.py" in screen
    assert "      explore ✗ no such dir" in screen and "CHILD-TEXT-NOT-SHOWN" not in screen
    assert "⎿ explore finished (end_turn)" in screen


def test_a_retry_that_withdraws_partial_output_is_marked(tmp_path: Path) -> None:
    from ketch.events import RetryEvent

    renderer, out, _ = _renderer(tmp_path)
    renderer.on_event(TextDeltaEvent(text="PARTIAL answer\n\n"))
    renderer.on_event(RetryEvent(attempt=1, discard=True, reason="connection broke"))
    assert "trying again (the partial answer above is discarded)" in out.getvalue()


def test_notification_escapes_follow_the_terminal() -> None:
    from ketch_interactive.notify import Focus, escape_for, sequence, should_notify

    assert escape_for("auto", {"TERM_PROGRAM": "WezTerm"}) == "osc9"
    assert escape_for("auto", {"VTE_VERSION": "7600"}) == "osc777"
    assert escape_for("auto", {"TERM_PROGRAM": "tmux"}) == "bell"
    assert escape_for("osc777", {}) == "osc777"
    assert sequence("done\x1b]0;evil\x07", "osc9") == "\x07\x1b]9;done ]0;evil \x07"
    assert sequence("x", "osc777") == "\x07\x1b]777;notify;ketch;x\x07"
    focus = Focus()
    assert not should_notify("auto", focus)  # the terminal never said: no noise
    focus.focused = False
    assert should_notify("auto", focus) and not should_notify("off", focus)
    focus.focused = True
    assert not should_notify("auto", focus) and should_notify("always", focus)
