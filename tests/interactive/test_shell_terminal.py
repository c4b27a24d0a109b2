"""The interactive shell in a real terminal (tmux): prompts, streaming, approvals,
Ctrl-C, steering, slash commands and encrypted prompt history (the first-run trust
offer: a command that declares a start offer)."""

from __future__ import annotations

from pathlib import Path

import pytest
from interactive_kit import Terminal, message_texts, needs_tmux, no_traceback

pytestmark = [needs_tmux, pytest.mark.slow]


def test_prompt_streams_the_answer_and_exit_quits(start) -> None:  # type: ignore[no-untyped-def]
    term = start(
        script=[{"text": "first line\nsecond line", "chunks": ["first ", "line\nsec", "ond line"]}]
    )
    term.type("hello there")
    screen = term.wait_for("second line")
    term.wait_for("── ")
    assert "first line\nsecond line" in screen
    assert [t for r, t in message_texts(term.requests()[0]) if r == "user"] == ["hello there"]
    term.wait_idle()
    term.type("/exit")
    assert term.exit_code() == 0
    no_traceback(term.screen())


def test_ctrl_c_clears_the_line_and_ctrl_d_quits(start) -> None:  # type: ignore[no-untyped-def]
    term = start()
    term.type("a draft I regret", enter=False)
    term.wait_for("❯ a draft I regret")
    term.keys("C-c")
    term.wait_idle()
    assert "(Ctrl-D or /exit quits)" not in term.screen()  # it cleared text: no hint needed
    term.keys("C-c")
    term.wait_for("(Ctrl-D or /exit quits)")
    term.wait_idle()
    term.keys("C-d")
    assert term.exit_code() == 0
    assert term.requests() == []


def test_alt_enter_adds_a_line_and_enter_sends_both(start) -> None:  # type: ignore[no-untyped-def]
    term = start(script=[{"text": "two lines received"}])
    term.type("line one", enter=False)
    term.keys("Escape", "Enter")
    term.type("line two")
    term.wait_for("two lines received")
    assert [t for r, t in message_texts(term.requests()[0]) if r == "user"] == [
        "line one\nline two"
    ]


def test_tool_call_approved_at_the_prompt(start) -> None:  # type: ignore[no-untyped-def]
    term = start(
        script=[
            {"tool_calls": [{"name": "mark", "input": {"name": "a.txt"}}]},
            {"text": "marked it"},
        ]
    )
    term.type("mark a.txt")
    screen = term.wait_for("Allow mark?")
    assert "● mark  create a.txt" in screen  # the call line, with the tool's own summary
    assert "create a.txt" in screen.split("Allow mark?")[1]  # the full summary in the question
    assert "why it asks: no policy plugin voted" in screen
    assert "Yes, make this change" in screen and "No, and tell the model" in screen
    assert "for this session" not in screen  # no scope, so no remembering offered
    assert not (term.workspace / "a.txt").exists()
    term.keys("y")
    screen = term.wait_for("marked it")
    assert "✓ approved" in screen
    assert "+marked" in screen  # the tool's diff
    assert (term.workspace / "a.txt").read_text() == "marked\n"


def test_tool_call_denied_with_a_note_for_the_model(start) -> None:  # type: ignore[no-untyped-def]
    term = start(
        script=[
            {"tool_calls": [{"name": "mark", "input": {"name": "b.txt"}}]},
            {"text": "understood"},
        ]
    )
    term.type("mark b.txt")
    term.wait_for("Allow mark?")
    term.keys("t")
    term.wait_for("note for the model:")
    term.type("use c.txt instead")
    screen = term.wait_for("understood")
    assert "✗ declined" in screen
    assert not (term.workspace / "b.txt").exists()
    tool_output = [t for r, t in message_texts(term.requests()[1]) if r == "tool"]
    assert (
        len(tool_output) == 1
        and "declined" in tool_output[0]
        and "use c.txt instead" in tool_output[0]
    )


def test_plain_no_refuses_the_call(start) -> None:  # type: ignore[no-untyped-def]
    term = start(
        script=[{"tool_calls": [{"name": "mark", "input": {"name": "n.txt"}}]}, {"text": "fine"}]
    )
    term.type("mark n.txt")
    term.wait_for("Allow mark?")
    term.keys("n")
    term.wait_for("fine")
    assert not (term.workspace / "n.txt").exists()


def test_yes_for_this_session_stops_asking_for_that_scope(start) -> None:  # type: ignore[no-untyped-def]
    term = start(
        load="shellpolicy=shelltest_policy",
        script=[
            {"tool_calls": [{"name": "mark", "input": {"name": "one.txt"}}]},
            {"tool_calls": [{"name": "mark", "input": {"name": "two.txt"}}]},
            {"text": "both marked"},
        ],
    )
    term.type("mark twice")
    screen = term.wait_for("Allow mark?")
    assert "Yes, and allow mark for this session" in screen
    assert "Always allow mark in this workspace" in screen
    term.keys("s")
    screen = term.wait_for("both marked")  # the second call did not ask
    assert screen.count("✓ approved") == 1
    assert (term.workspace / "one.txt").exists() and (term.workspace / "two.txt").exists()


def test_yes_for_this_session_reaches_the_policy_plugin(start) -> None:  # type: ignore[no-untyped-def]
    """The bundled policy keeps the session's approvals (the kernel keeps none): the
    shell's "for this session" answer reaches it, and the same call no longer asks."""
    term = start(
        plugins="interactive,policy",
        script=[
            {"tool_calls": [{"name": "mark", "input": {"name": "one.txt"}}]},
            {"tool_calls": [{"name": "mark", "input": {"name": "one.txt"}}]},
            {"text": "marked twice"},
        ],
    )
    term.type("mark it twice")
    screen = term.wait_for("Allow mark?")
    assert "for this session" in screen
    term.keys("s")
    screen = term.wait_for("marked twice")
    assert screen.count("✓ approved") == 1 and screen.count("Allow mark?") == 0
    assert (term.workspace / "one.txt").exists()


def test_ctrl_c_cancels_a_slow_turn_and_the_shell_stays_usable(start) -> None:  # type: ignore[no-untyped-def]
    term = start(script=[{"text": "too late", "delay": 120}, {"text": "second answer"}])
    term.type("take your time")
    term.wait_for("Ctrl-C cancels")
    term.keys("C-c")
    term.wait_for("⏹ cancelled")
    term.wait_idle()
    term.type("again")
    screen = term.wait_for("second answer")
    assert "too late" not in screen
    no_traceback(screen)


def test_ctrl_c_cancels_a_running_tool(start, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    flag = tmp_path / "never"
    term = start(
        script=[
            {"tool_calls": [{"name": "wait_flag", "input": {"flag": str(flag)}}]},
            {"text": "next"},
        ]
    )
    term.type("wait")
    term.wait_for("Allow wait_flag?")
    term.keys("y")
    term.wait_for("running wait_flag")
    term.keys("C-c")
    screen = term.wait_for("⏹ cancelled")
    term.wait_idle()
    assert "flag seen" not in screen and "flag never appeared" not in screen
    assert len(term.requests()) == 1  # cancelled before the result went back to the model


def test_ctrl_c_at_the_approval_cancels_the_turn(start) -> None:  # type: ignore[no-untyped-def]
    term = start(
        script=[{"tool_calls": [{"name": "mark", "input": {"name": "c.txt"}}]}, {"text": "after"}]
    )
    term.type("mark c.txt")
    term.wait_for("Allow mark?")
    term.keys("C-c")
    term.wait_for("⏹ cancelled")
    term.wait_idle()
    assert not (term.workspace / "c.txt").exists()
    term.type("next")
    term.wait_for("after")


def test_a_steer_typed_during_a_turn_reaches_the_next_request(start, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    flag = tmp_path / "go"
    term = start(
        script=[
            {"tool_calls": [{"name": "wait_flag", "input": {"flag": str(flag)}}]},
            {"text": "saw the steer"},
        ]
    )
    term.type("wait for the flag")
    term.wait_for("Allow wait_flag?")
    term.keys("y")
    term.wait_for("running wait_flag")
    term.type("steer-canary-41")
    term.wait_for("↳ next step: steer-canary-41")  # pending while the tool still runs
    flag.write_text("go")
    screen = term.wait_for("saw the steer")
    assert "delivered to the model: steer-canary-41" in screen
    requests = term.requests()
    assert len(requests) == 2
    second = message_texts(requests[1])
    assert second[-1] == ("user", "steer-canary-41")  # after the tool result, in the same turn
    assert ("tool", "flag seen") in second


def test_help_lists_builtin_and_plugin_commands_and_dispatches(start) -> None:  # type: ignore[no-untyped-def]
    term = start(load="shellcmds=shelltest_commands")
    term.type("/help")
    screen = term.wait_for("Ctrl-D quits", count=2)
    for name in ("/help", "/exit", "/clear", "/model", "/status", "/ping", "/boom"):
        assert name in screen
    assert "answer pong" in screen
    term.wait_idle()
    term.type("/ping hi there")
    term.wait_for("pong: hi there")
    term.wait_idle()
    term.type("/boom")
    screen = term.wait_for("/boom failed: RuntimeError: kaboom")
    term.wait_idle()
    term.type("/nosuch")
    term.wait_for("unknown command /nosuch")
    term.wait_idle()
    assert term.requests() == []  # no command went to the model
    no_traceback(term.screen())


def test_status_model_switch_and_clear(start) -> None:  # type: ignore[no-untyped-def]
    term = start(
        script=[{"text": "one"}, {"text": "two"}], plugins="interactive,policy"
    )  # policy: its modes and profiles
    term.type("/status")
    screen = term.wait_for("(?m)^history    ", regex=True)
    first_id = screen.split("session    ")[1].split()[0]
    assert first_id.startswith("ses_")
    assert "model      scripted-model via scripted" in screen
    assert "mode       build · profile manual" in screen
    assert "context    ~0%" in screen
    term.wait_idle()
    term.type("/model other-model")
    term.wait_for("model: other-model via scripted")
    term.wait_idle()
    term.type("hi")
    term.wait_for("one")
    assert term.requests()[0]["model"] == "other-model"
    term.wait_idle()
    term.type("/clear")
    term.wait_for("new session")
    term.wait_idle()
    term.type("/status")
    screen = term.wait_for("(?m)^history    ", count=2, regex=True)
    second_id = screen.split("session    ")[-1].split()[0]
    assert second_id != first_id
    assert "model      other-model via scripted" in screen.split("new session")[1]


def _files_containing(root: Path, needle: bytes) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and needle in p.read_bytes()]


def test_prompt_history_is_encrypted_at_rest_and_recalled(
    tmp_path: Path, terminals: list[Terminal]
) -> None:
    canary = "history-canary-7f3a"
    term = Terminal(tmp_path, plugins="interactive,crypto", script=[{"text": "noted"}])
    terminals.append(term)
    term.ready()
    term.type(f"remember {canary}")
    term.wait_for("noted")
    term.wait_idle()
    term.keys("C-d")
    assert term.exit_code() == 0
    history = term.home / "state" / "prompt-history"
    assert history.exists() and history.stat().st_mode & 0o077 == 0
    assert _files_containing(tmp_path / "home", canary.encode()) == []
    # A new shell with the same key recalls it: it was stored, just not in plaintext.
    again = Terminal(tmp_path, plugins="interactive,crypto")
    terminals.append(again)
    again.ready()
    again.keys("Up")
    again.wait_for(f"❯ remember {canary}")


def test_prompt_history_stays_in_memory_without_a_cipher(
    tmp_path: Path, terminals: list[Terminal]
) -> None:
    canary = "memory-canary-19c2"
    term = Terminal(tmp_path, plugins="interactive", script=[{"text": "ok"}])
    terminals.append(term)
    screen = term.ready()
    assert "prompt history is kept in memory only" in screen
    term.type(canary)
    term.wait_for("ok")
    term.wait_idle()
    term.keys("Up")
    term.wait_for(f"❯ {canary}")  # recall works within the run
    term.keys("C-u", "C-d")
    assert term.exit_code() == 0
    assert not (term.home / "state" / "prompt-history").exists()
    assert _files_containing(tmp_path / "home", canary.encode()) == []


def test_continue_shows_where_the_session_left_off(
    tmp_path: Path, terminals: list[Terminal]
) -> None:
    plugins = "interactive,crypto,store"
    first = Terminal(
        tmp_path, plugins=plugins, script=[{"text": "the answer is 42"}, {"text": "still here"}]
    )
    terminals.append(first)
    first.ready()
    first.type("what is the answer")
    first.wait_for("the answer is 42")
    first.wait_idle()
    first.keys("C-d")
    assert first.exit_code() == 0
    second = Terminal(tmp_path, plugins=plugins, args=("--continue",))
    terminals.append(second)
    screen = second.ready()
    assert "resumed ses_" in screen
    assert "you: what is the answer" in screen and "model: the answer is 42" in screen
    second.type("and now")
    second.wait_for("still here")
    texts = [t for r, t in message_texts(second.requests()[-1]) if r in ("user", "assistant")]
    assert texts == ["what is the answer", "the answer is 42", "and now"]


def test_every_bundled_plugin_together_keeps_typed_text_off_the_disk(start, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    canary = "system-canary-5d1e"
    term = start(plugins=None, script=[{"text": "all plugins fine"}])
    term.type("/help")
    term.wait_for("Ctrl-D quits", count=2)
    term.wait_idle()
    term.type(f"hello {canary}")
    term.wait_for("all plugins fine")
    term.wait_idle()
    term.type("/exit")
    assert term.exit_code() == 0
    no_traceback(term.screen())
    # The store, the history and every other plugin wrote under home: none of it in plaintext.
    assert (term.home / "state" / "prompt-history").exists()
    assert _files_containing(tmp_path / "home", canary.encode()) == []


def test_a_command_that_declares_a_start_offer_runs_when_the_shell_starts(start) -> None:  # type: ignore[no-untyped-def]
    # The trust plugin's first-run offer reaches the shell this way (issue 25: a
    # capability on the command, never its name); here no trust plugin is loaded.
    term = start(load="shelloffer=shelltest_offer")
    screen = term.wait_for("Ctrl-D quits")
    assert "offered at start with: --offer quietly" in screen
    assert screen.index("offered at start") < screen.index("Ctrl-D quits")
    no_traceback(screen)
