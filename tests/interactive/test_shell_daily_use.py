"""Issue 26: the shell after a week of daily use. Each test here failed on the shell
before the fix it names; all of them drive ``ketch`` in a real terminal (tmux)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from interactive_kit import message_texts, needs_tmux, no_traceback

pytestmark = [needs_tmux, pytest.mark.slow]


def _stops_within_a_second(term) -> float:  # type: ignore[no-untyped-def]
    """Run ``!sleep 100``, press Ctrl-C once it runs, and return how long it took to stop."""
    term.type("!sleep 100")
    term.wait_for("$ sleep 100")
    time.sleep(0.3)  # the command is running, no prompt is open
    pressed = time.monotonic()
    term.keys("C-c")
    term.wait_for("⏹ cancelled", timeout=10)
    took = time.monotonic() - pressed
    term.wait_idle()
    return took


def _waiting_turn(start, tmp_path: Path, *after: dict) -> tuple:  # type: ignore[no-untyped-def, type-arg]
    flag = tmp_path / "go"
    term = start(
        script=[{"tool_calls": [{"name": "wait_flag", "input": {"flag": str(flag)}}]}, *after]
    )
    term.type("wait for the flag")
    term.wait_for("Allow wait_flag?")
    term.keys("y")
    term.wait_for("running wait_flag")
    return term, flag


def test_ctrl_c_stops_a_bang_command_after_an_approval(start) -> None:  # type: ignore[no-untyped-def]
    # Item 1: the approval's prompt_toolkit application removed the shell's SIGINT handler.
    term = start(
        script=[
            {"tool_calls": [{"name": "mark", "input": {"name": "a.txt"}}]},
            {"text": "marked"},
        ]
    )
    term.type("mark a.txt")
    term.wait_for("Allow mark?")
    term.keys("y")
    term.wait_for("marked")
    term.wait_idle()
    assert _stops_within_a_second(term) < 1.0
    no_traceback(term.screen())


def test_ctrl_c_stops_a_bang_command_after_the_pager(start, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    old = "".join(f"value_{n} = {n}\n" for n in range(60))
    new = "".join(f"value_{n} = {n * 10}\n" for n in range(60))
    (tmp_path / "ws").mkdir(exist_ok=True)
    (tmp_path / "ws" / "main.py").write_text(old)
    term = start(
        plugins="interactive,fs,policy",
        width=80,
        height=24,
        script=[
            {"tool_calls": [{"name": "read_file", "input": {"path": "main.py"}}]},
            {
                "tool_calls": [
                    {
                        "name": "edit_file",
                        "input": {"path": "main.py", "old_string": old, "new_string": new},
                    }
                ]
            },
            {"text": "left it"},
        ],
    )
    term.type("multiply")
    term.wait_for("press v to see all of it")
    term.keys("v")
    term.wait_for("back to the question")
    term.keys("q")
    term.wait_for("press v to see all of it")
    term.keys("n")
    term.wait_for("left it")
    term.wait_idle()
    assert _stops_within_a_second(term) < 1.0


def test_a_command_approval_says_each_thing_once_and_fits_60_columns(start) -> None:  # type: ignore[no-untyped-def]
    # Item 8: the command three times, every sub-command (echo too) as "why it asks",
    # and at 60 columns the key hints of options 2 and 3 cut off.
    command = "echo hi && ls | wc -l > out.txt"
    term = start(
        plugins="interactive,shell,policy",
        width=60,
        script=[{"tool_calls": [{"name": "shell", "input": {"command": command}}]}, {"text": "ok"}],
    )
    term.type("count")
    term.wait_for("Allow shell?")
    screen = term.wait_for("5. No, and tell")
    assert screen.count(command) == 2  # the call line, and the box's "$ COMMAND"
    box = screen.split("Allow shell?")[-1]
    assert "runs 'echo hi'" not in box and "the manual profile asks before every" in box
    options = [line for line in box.splitlines() if line.strip()[:2] in ("2.", "3.")]
    assert (
        len(options) == 2
        and options[0].rstrip().endswith("(s)")
        and options[1].rstrip().endswith("(a)")
    )
    assert "s/a remember:" in box  # the scope the cut labels stand for, in full
    term.keys("n")
    term.wait_for("ok")
    no_traceback(term.screen())


def test_a_long_code_line_in_an_answer_copies_as_one_line(start) -> None:  # type: ignore[no-untyped-def]
    # Item 8: code blocks were soft-wrapped and indented by the renderer, so copied code broke.
    line = "result = compute(" + ", ".join(f"argument_{n}" for n in range(20)) + ")"
    term = start(width=60, script=[{"text": f"Here:\n\n```python\n{line}\n```\n\nDone."}])
    term.type("show code")
    term.wait_for("── ")  # the turn is over: the answer is printed, not live
    screen = term.wait_idle()
    assert "\n" + line + "\n" in screen  # joined by tmux: the terminal wrapped it, not ketch


def test_a_call_that_will_fail_says_so_in_full_and_no_is_the_default(start, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # Item 3: the preview's warning was cut at the width, and "Yes, run it" was selected.
    (tmp_path / "ws").mkdir(exist_ok=True)
    (tmp_path / "ws" / "main.py").write_text("x = 1\n")
    term = start(
        plugins="interactive,fs,policy",
        width=60,
        script=[
            {
                "tool_calls": [
                    {
                        "name": "edit_file",
                        "input": {"path": "main.py", "old_string": "x = 1", "new_string": "x = 2"},
                    }
                ]
            },
            {"text": "gave up"},
        ],
    )
    term.type("edit without reading")
    screen = term.wait_for("5. No, and tell")
    box = " ".join(screen.split("Allow edit_file?")[-1].split())
    assert "this call will fail" in box and "then try again" in box  # the whole warning
    chosen = next(line for line in screen.splitlines() if "›" in line and ". " in line)
    assert "No" in chosen and "Yes" not in chosen
    term.keys("Enter")  # the default answer: no
    term.wait_for("gave up")
    assert (tmp_path / "ws" / "main.py").read_text() == "x = 1\n"


STORE = "interactive,store,crypto,context"


def test_cancelled_is_said_once(start, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # Item 11: "⏹ cancelled" printed twice (the tool's line and the turn's).
    term, _ = _waiting_turn(start, tmp_path, {"text": "x"})
    term.keys("C-c")
    term.wait_for("⏹ cancelled")
    screen = term.wait_idle()
    assert screen.count("⏹ cancelled") == 1, screen


def _big(label: str) -> str:
    return (label + " " + "word " * 3000)[:12000]


def test_compact_asks_the_model_and_its_numbers_print_once(start) -> None:  # type: ignore[no-untyped-def]
    # Items 11 and 12: /compact's numbers printed twice, and it never asked the model.
    summary = "## Goal\nfinish the parser\n## Decisions\nkeep the API\n## Open tasks\nbench it"
    term = start(
        plugins="interactive,compact",
        script=[
            {"text": "answer 1"},
            {"text": "answer 2"},
            {"text": "answer 3"},
            {"text": summary},
        ],
    )
    for n in (1, 2, 3):
        term.type(_big(f"prompt {n}"))
        term.wait_for(f"answer {n}")
        term.wait_idle()
    term.type("/compact")
    screen = term.wait_for("written by the model")
    assert "asking the model to summarize" in screen
    assert screen.count("context compacted") == 1 and " -> " not in screen
    assert "summarize" in term.requests()[-1]["system"].lower()


def test_the_meter_after_resume_agrees_with_context(start, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # Item 11: after /resume (or --continue) the meter said ~0% while /context said 3%:
    # the meter counted the messages only, /context the system prompt and tools too.
    (tmp_path / "ws").mkdir(exist_ok=True)
    (tmp_path / "ws" / "AGENTS.md").write_text("Always run the linter first.\n" * 400)
    term = start(plugins=STORE + ",fs,shell", script=[{"text": "first answer"}])
    term.type("hello")
    term.wait_for("── ")
    term.wait_idle()
    term.type("/exit")
    assert term.exit_code() == 0
    again = start(plugins=STORE + ",fs,shell", args=("--continue",), script=[])
    idle = again.wait_idle()
    meter = idle.strip().splitlines()[-1].rsplit("context ~", 1)[1].split("%")[0]
    again.type("/context")
    screen = again.wait_for("Next request ~")
    share = screen.split("Next request ~", 1)[1].split(": ", 1)[1].split("%")[0]
    assert meter == share and int(meter) >= 1


def test_no_save_is_not_read_back_to_the_person(start) -> None:  # type: ignore[no-untyped-def]
    # Item 11: "--no-save was given" right after typing --no-save.
    term = start(plugins=STORE, args=("--no-save",))
    assert "--no-save was given" not in term.screen()


def test_rewind_lists_prompts_not_steers_or_attachment_markup(start, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # Item 11: the /rewind list showed attachment markup and counted a steer as a turn.
    flag = tmp_path / "go"
    (tmp_path / "ws").mkdir(exist_ok=True)
    (tmp_path / "ws" / "notes.txt").write_text("the plan\n")
    term = start(
        plugins="interactive,store,crypto,checkpoints,attach,fs,policy",
        script=[
            {"text": "summarized"},
            {"tool_calls": [{"name": "wait_flag", "input": {"flag": str(flag)}}]},
            {"text": "steered"},
        ],
    )
    term.type("summarize @notes.txt")
    term.wait_for("summarized")
    term.wait_idle()
    term.type("wait for it")
    term.wait_for("Allow wait_flag?")
    term.keys("y")
    term.wait_for("running wait_flag")
    term.type("steer-words-77")
    term.wait_for("steer-words-77")
    flag.write_text("go")
    term.wait_for("steered")
    term.wait_idle()
    term.type("/rewind")
    screen = term.wait_for("Rewind to before which turn?")
    picker = screen.split("Rewind to before which turn?")[-1]
    assert "turn 1" in picker and "turn 2" in picker and "turn 3" not in picker
    line = next(x for x in picker.splitlines() if "turn 1" in x)
    assert "summarize @notes.txt" in line and "<" not in line and "the plan" not in line
    term.keys("Escape")


def test_a_command_file_added_during_the_session_works_without_a_restart(start) -> None:  # type: ignore[no-untyped-def]
    # Item 5: commands added to .ketch/commands during a session were unknown until a restart.
    term = start(plugins="interactive,commands", script=[{"text": "reviewed it"}])
    folder = term.workspace / ".ketch" / "commands"
    folder.mkdir(parents=True)
    (folder / "review.md").write_text("Review the code for review-canary-9.\n")
    term.type("/review")
    term.wait_for("reviewed it")
    assert "review-canary-9" in str(term.requests()[-1]["messages"])


def test_a_command_typed_during_a_turn_stays_in_the_line(start, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # Item 5: a slash command typed during a turn was thrown away.
    term, flag = _waiting_turn(start, tmp_path, {"text": "done"})
    term.type("/clear")
    term.wait_for("/clear runs once the turn is over")
    term.wait_for("↳ /clear")  # still in the steer line
    flag.write_text("go")
    term.wait_for("done")
    term.wait_for("❯ /clear")  # and in the prompt once the turn is over
    term.keys("Enter")
    term.wait_for("new session")


def test_a_running_command_shows_its_last_lines_live_and_ctrl_o_shows_all(start) -> None:  # type: ignore[no-untyped-def]
    # Item 4: a running shell call showed only a spinner, and afterwards
    # "first line (+N lines)" with no key to open the rest.
    command = "for i in 1 2 3 4; do echo live-line-$i; sleep 1; done; seq 100 130"
    term = start(
        plugins="interactive,shell",
        script=[
            {"tool_calls": [{"name": "shell", "input": {"command": command}}]},
            {"text": "ran"},
        ],
    )
    term.type("count slowly")
    term.wait_for("Allow shell?")
    term.keys("y")
    screen = term.wait_for("│ live-line-2")  # a line a second: shown while it runs
    assert "live-line-4" not in screen and "⎿" not in screen.split("Allow shell?")[-1]
    term.wait_for("ran")
    term.wait_idle()
    assert "│ live-line" not in term.visible()  # the live tail is gone once it finished
    assert "Ctrl-O shows all" in term.screen()
    term.keys("C-o")
    pager = term.wait_for("back to the prompt")
    assert "live-line-1" in pager
    term.keys("End")
    term.wait_for("130")
    term.keys("q")
    term.wait_idle()


def test_enter_during_a_turn_is_delivered_at_the_next_step(start, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    term, flag = _waiting_turn(start, tmp_path, {"text": "took it into account"})
    term.type("use tabs, not spaces")
    term.wait_for("↳ next step: use tabs, not spaces")  # shown as pending, not yet sent
    assert len(term.requests()) == 1
    flag.write_text("go")
    screen = term.wait_for("took it into account")
    assert "delivered to the model: use tabs, not spaces" in screen
    second = message_texts(term.requests()[1])
    assert second[-2] == ("tool", "flag seen") and second[-1] == ("user", "use tabs, not spaces")


def test_tab_queues_for_after_the_turn_and_up_takes_it_back(start, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    term, flag = _waiting_turn(start, tmp_path, {"text": "first done"}, {"text": "follow-up done"})
    term.type("a typo draft", enter=False)
    term.keys("Tab")
    term.wait_for("↳ after this turn: a typo draft")
    term.keys("Up")  # taken back into the line to edit
    term.wait_for("↳ a typo draft")
    term.keys("C-u")
    term.type("then update the docs", enter=False)
    term.keys("Tab")
    term.wait_for("↳ after this turn: then update the docs")
    flag.write_text("go")
    screen = term.wait_for("follow-up done")
    assert "a typo draft" not in screen.split("first done")[-1]
    requests = term.requests()
    assert len(requests) == 3
    assert ("user", "then update the docs") not in message_texts(requests[1])  # not mid-turn
    assert message_texts(requests[2])[-1] == ("user", "then update the docs")


def test_btw_answers_on_the_side_and_leaves_the_history_unchanged(start) -> None:  # type: ignore[no-untyped-def]
    term = start(
        script=[{"text": "first answer"}, {"text": "side answer 7"}, {"text": "second answer"}]
    )
    term.type("hello")
    term.wait_for("first answer")
    term.wait_idle()
    term.type("/btw what is a closure?")
    term.wait_for("side answer 7")
    term.wait_idle()
    side = term.requests()[1]
    assert side["tools"] == [] and "what is a closure?" in message_texts(side)[-1][1]
    term.type("go on")
    term.wait_for("second answer")
    after = message_texts(term.requests()[2])
    assert after == [("user", "hello"), ("assistant", "first answer"), ("user", "go on")]


def _raw_output(term) -> Path:  # type: ignore[no-untyped-def]
    """Everything ketch writes to its terminal, bytes as written (tmux pipe-pane)."""
    path = term.root / f"raw-{term.server}.out"
    term._tmux("pipe-pane", "-o", "-t", "main", f"cat >> {path}")
    return path


def _wait_bytes(path: Path, needle: bytes, timeout: float = 10) -> bytes:
    deadline = time.monotonic() + timeout
    data = b""
    while time.monotonic() < deadline:
        data = path.read_bytes() if path.exists() else b""
        if needle in data:
            return data
        time.sleep(0.05)
    raise AssertionError(f"{needle!r} never written; got {data[-400:]!r}")


def test_a_turn_ending_unfocused_rings_and_notifies(start, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # Issue 26: notifications. The terminal reports focus (CSI ?1004h); after it says it
    # lost focus (CSI O), the end of a turn writes a bell and an OSC 9 notification, and
    # the Notification hook runs; while focused, nothing is written.
    seen = tmp_path / "notified.json"
    config = tmp_path / "home" / "config"
    config.mkdir(parents=True)
    (config / "config.toml").write_text(
        f'[[hooks.Notification]]\ncommand = "cat > {seen}"\n', encoding="utf-8"
    )
    term = start(
        plugins="interactive,hooks",
        env={"TERM_PROGRAM": "iTerm.app"},
        script=[
            {"text": "focused answer"},
            {"text": "all done here"},
            {"tool_calls": [{"name": "mark", "input": {"name": "m.txt"}}]},
            {"text": "marked"},
        ],
    )
    raw = _raw_output(term)
    term.type("first")
    term.wait_for("focused answer")
    term.wait_idle()
    assert b"\x07" not in (raw.read_bytes() if raw.exists() else b"")  # focused: quiet
    term._tmux("send-keys", "-t", "main", "-H", "1b", "5b", "4f")  # CSI O: focus lost
    term.type("second")
    data = _wait_bytes(raw, b"\x1b]9;")
    assert b"\x07\x1b]9;ketch is done: all done here\x07" in data
    assert b"[O" not in term.screen().encode()  # the report was read, not typed
    hook = json.loads(_wait_text(seen))
    assert hook["hook_event_name"] == "Notification" and hook["notification_type"] == "idle_prompt"
    term.wait_idle()
    term.type("third")  # still unfocused: an approval waiting rings too
    _wait_bytes(raw, b"\x1b]9;ketch needs your approval: mark create m.txt\x07")
    term.keys("y")
    term.wait_for("marked")
    term.wait_idle()
    term.type("/exit")
    _wait_bytes(raw, b"\x1b[?1004l")  # focus reporting is switched off on the way out


def _wait_text(path: Path, timeout: float = 10) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return path.read_text()
        time.sleep(0.05)
    raise AssertionError(f"{path} was never written")


def test_init_drafts_agents_md_shown_as_a_diff_to_approve(start, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # Issue 26: /init drafts AGENTS.md from the repository, through the model, and the
    # write is shown as a diff to approve like any write.
    (tmp_path / "ws").mkdir(exist_ok=True)
    (tmp_path / "ws" / "README.md").write_text("# demo\nRun `make test`.\n")
    drafted = "# Agents\n\n- Run the tests with `make test`.\n"
    term = start(
        plugins="interactive,context,fs,policy",
        script=[
            {"tool_calls": [{"name": "read_file", "input": {"path": "README.md"}}]},
            {
                "tool_calls": [
                    {"name": "write_file", "input": {"path": "AGENTS.md", "content": drafted}}
                ]
            },
            {"text": "drafted AGENTS.md"},
        ],
    )
    term.type("/init")
    screen = term.wait_for("Allow write_file?")
    assert "↳ /init: sending its prompt" in screen
    question = screen.split("Allow write_file?")[-1]
    assert "+++ b/AGENTS.md" in question and "+- Run the tests with `make test`." in question
    assert not (term.workspace / "AGENTS.md").exists()  # nothing written while asking
    term.keys("y")
    term.wait_for("drafted AGENTS.md")
    assert (term.workspace / "AGENTS.md").read_text() == drafted
    first = term.requests()[0]
    assert "Write AGENTS.md for this repository" in message_texts(first)[-1][1]
    offered = {t["name"] for t in first["tools"]}
    assert {"read_file", "write_file"} <= offered and "shell" not in offered


def test_the_task_list_shows_in_the_footer_and_again_on_resume(start, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # Issue 26: the todo tool's list, printed when it changes and in the footer while
    # the turn runs; a resumed session shows it again.
    flag = tmp_path / "go"
    todos = [
        {"content": "Read the parser", "status": "completed"},
        {"content": "Fix the lexer", "status": "in_progress", "active_form": "Fixing the lexer"},
        {"content": "Run the tests", "status": "pending"},
    ]
    plugins = STORE + ",todo,policy"
    term = start(
        plugins=plugins,
        load="",
        script=[
            {"tool_calls": [{"name": "todo", "input": {"todos": todos}}]},
            {"tool_calls": [{"name": "wait_flag", "input": {"flag": str(flag)}}]},
            {"text": "lexer fixed"},
        ],
    )
    term.type("fix the lexer")
    term.wait_for("Allow wait_flag?")
    term.keys("y")
    screen = term.wait_for("tasks 1/3 · ▸ Fixing the lexer")  # the footer, while it runs
    assert "Tasks 1/3" in screen and "✔ Read the parser" in screen and "☐ Run the tests" in screen
    flag.write_text("go")
    term.wait_for("lexer fixed")
    term.wait_idle()
    term.type("/exit")
    assert term.exit_code() == 0
    again = start(plugins=plugins, args=("--continue",), script=[])
    assert "▸ Fix the lexer" in again.screen().split("resumed")[-1]
