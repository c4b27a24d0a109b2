"""Claude-Code-style hooks through the real CLI: the JSON on stdin, the JSON a hook
prints, PreToolUse before the approval prompt, timeouts. Judged by effects (files
written or not) and by what the model received."""

from __future__ import annotations

import json
import time
from pathlib import Path

from ketch.testing import call, text
from tests.agents.conftest import Cli, clean
from tests.hooks.conftest import answer, hooks_config, pre_allow, pre_deny, py_hook, seen

RUN = ("--provider", "scripted", "--output-format", "stream-json")


def write(path: str, content: str = "x") -> dict[str, object]:
    return call("write_file", {"path": path, "content": content})


def outputs(result: object) -> list[str]:
    return [e["output"] for e in result.of_type("tool_result")]  # type: ignore[attr-defined]


def test_permission_decision_deny_blocks_and_the_reason_reaches_the_model(cli: Cli) -> None:
    cli.config(
        hooks_config(
            ("PreToolUse", "Write", py_hook(cli, "pre", answer(pre_deny("no writes on Fridays"))))
        )
    )
    result = cli("-p", "go", *RUN, "--profile", "full-access", script=[write("a.txt"), text("ok")])
    clean(result)
    assert not (cli.workspace / "a.txt").exists()
    (blocked,) = result.of_type("tool_result")
    assert blocked["outcome"] == "blocked" and "no writes on Fridays" in blocked["output"]
    assert "no writes on Fridays" in json.dumps(result.requests[-1]["messages"][-1])


def test_permission_decision_allow_spares_the_question_of_an_ask(cli: Cli) -> None:
    cli.config(
        hooks_config(
            (
                "PreToolUse",
                "write_file",
                py_hook(cli, "pre", answer(pre_allow("generated files are fine"))),
            )
        )
    )
    # manual + headless: the write would ask, and with no one to answer be denied
    result = cli("-p", "go", *RUN, script=[write("a.txt", "written"), text("ok")])
    clean(result)
    assert (cli.workspace / "a.txt").read_text() == "written"
    (decision,) = result.of_type("permission")
    assert decision["decision"] == "allow" and "generated files are fine" in decision["reason"]
    # control: without the hook the same call is not run
    cli.config("")
    control = cli("-p", "go", *RUN, script=[write("b.txt"), text("ok")])
    assert (
        not (cli.workspace / "b.txt").exists()
        and control.of_type("permission")[0]["approved"] is False
    )


def test_permission_decision_allow_does_not_override_a_deny_rule_or_a_hard_guard(cli: Cli) -> None:
    outside = cli.tmp / "outside.txt"
    cli.config(
        hooks_config(
            ("PreToolUse", "*", py_hook(cli, "pre", answer(pre_allow()))),
            extra='[permissions]\ndeny = ["write(secret.txt)"]\n',
        )
    )
    result = cli(
        "-p",
        "go",
        *RUN,
        "--profile",
        "full-access",
        script=[write("secret.txt"), write(str(outside)), text("ok")],
    )
    clean(result)
    assert not (cli.workspace / "secret.txt").exists() and not outside.exists()
    decisions = [(e["decision"], e.get("approved")) for e in result.of_type("permission")]
    assert decisions == [
        ("deny", None),
        ("ask", False),
    ]  # the rule denies; the guard's ask stays an ask
    planned = cli(
        "-p",
        "go",
        *RUN,
        "--profile",
        "full-access",
        "--mode",
        "plan",
        script=[write("planned.txt"), text("ok")],
    )
    clean(planned)
    assert not (
        cli.workspace / "planned.txt"
    ).exists()  # plan mode refuses it before any hook is asked
    assert planned.of_type("tool_result")[0]["outcome"] == "refused"
    assert [d["tool_input"]["path"] for d in seen(cli, "pre")] == [
        str(outside)
    ]  # a denied call never reaches hooks


def test_updated_input_is_applied_and_checked_again(cli: Cli) -> None:
    outside = cli.tmp / "outside.txt"
    body = (
        "inp = dict(data['tool_input'])\n"
        f"inp['file_path'] = {str(cli.workspace / 'redirected.txt')!r} if inp['path'] == 'a.txt' else {str(outside)!r}\n"
        "inp['content'] = 'rewritten by the hook'\n"
        "del inp['path']\n"
        + answer(
            {
                "hookSpecificOutput": {
                    "hookEventName": "PreToolUse",
                    "permissionDecision": "allow",
                    "updatedInput": "INP",
                }
            }
        ).replace("'INP'", "inp")
    )
    cli.config(hooks_config(("PreToolUse", "Write", py_hook(cli, "pre", body))))
    result = cli(
        "-p",
        "go",
        *RUN,
        "--profile",
        "full-access",
        script=[write("a.txt"), write("b.txt"), text("ok")],
    )
    clean(result)
    assert (cli.workspace / "redirected.txt").read_text() == "rewritten by the hook"
    assert not (cli.workspace / "a.txt").exists() and not (cli.workspace / "b.txt").exists()
    assert (
        not outside.exists()
    )  # the rewritten input was voted on again: outside the workspace asks, headless denies
    started = result.of_type("tool_started")
    assert [s["input"]["path"] for s in started] == [str(cli.workspace / "redirected.txt")]


def test_a_hook_past_its_timeout_is_reported_and_the_turn_goes_on(cli: Cli) -> None:
    cli.config(
        '[[hooks.PreToolUse]]\nmatcher = "write_file"\ncommand = "sleep 30; echo never"\ntimeout = 1\n'
    )
    began = time.monotonic()
    result = cli(
        "-p", "go", *RUN, "--profile", "full-access", script=[write("a.txt", "ran"), text("ok")]
    )
    clean(result)
    assert time.monotonic() - began < 20
    assert result.returncode == 0 and (cli.workspace / "a.txt").read_text() == "ran"
    assert any(
        "timed out after 1 s" in n["message"] and "the turn goes on" in n["message"]
        for n in result.of_type("notice")
    )


def test_the_json_on_stdin_uses_claude_codes_field_names(cli: Cli) -> None:
    cli.config(
        hooks_config(("PreToolUse", "Write", py_hook(cli, "plain", "")))
        + f'\n[[hooks.PreToolUse]]\nmatcher = "Write"\ncommand = {json.dumps(py_hook(cli, "claude", ""))}\nclaude_names = true\n'
    )
    result = cli("-p", "go", *RUN, "--profile", "full-access", script=[write("a.txt"), text("ok")])
    clean(result)
    (data,) = seen(cli, "plain")
    session_id = result.of_type("session")[0]["session_id"]
    call_id = result.of_type("tool_call")[0]["id"]
    assert (
        data["session_id"] == session_id
        and data["cwd"] == str(cli.workspace)
        and data["hook_event_name"] == "PreToolUse"
    )
    assert data["permission_mode"] == "bypassPermissions" and data["tool_use_id"] == call_id
    assert data["tool_name"] == "write_file" and data["tool_input"]["path"] == "a.txt"
    assert (
        data["tool_input"]["file_path"] == str(cli.workspace / "a.txt")
        and data["tool_input"]["content"] == "x"
    )
    assert "transcript_path" not in data  # transcripts are encrypted, never a plain file
    (claude,) = seen(cli, "claude")
    assert claude["tool_name"] == "Write" and claude["ketch_tool_name"] == "write_file"


def test_matchers_use_claude_codes_or_ketchs_tool_names(cli: Cli) -> None:
    (cli.workspace / "a.txt").write_text("a\n")
    cli.config(
        hooks_config(
            ("PreToolUse", "Edit|Write", py_hook(cli, "edits", "")),
            ("PreToolUse", "Bash", py_hook(cli, "bash", "")),
            ("PreToolUse", "^read_.*$", py_hook(cli, "reads", "")),
        )
    )
    result = cli(
        "-p",
        "go",
        *RUN,
        "--profile",
        "full-access",
        script=[call("read_file", {"path": "a.txt"}), write("b.txt"), text("ok")],
    )
    clean(result)
    assert [d["tool_name"] for d in seen(cli, "edits")] == ["write_file"]
    assert [d["tool_name"] for d in seen(cli, "reads")] == ["read_file"]
    assert seen(cli, "bash") == []


def test_post_tool_use_and_post_tool_use_failure(cli: Cli) -> None:
    (cli.workspace / "a.txt").write_text("a\n")
    post = py_hook(
        cli,
        "post",
        answer(
            {
                "decision": "block",
                "reason": "LINT: 2 problems",
                "hookSpecificOutput": {
                    "hookEventName": "PostToolUse",
                    "additionalContext": "CONTEXT: ran lint",
                },
            }
        ),
    )
    failure = py_hook(
        cli, "failure", "print('the read failed, as it should', file=sys.stderr); sys.exit(2)"
    )
    cli.config(hooks_config(("PostToolUse", "Read", post), ("PostToolUseFailure", "*", failure)))
    result = cli(
        "-p",
        "go",
        *RUN,
        script=[
            call("read_file", {"path": "a.txt"}),
            call("read_file", {"path": "missing.txt"}),
            text("ok"),
        ],
    )
    clean(result)
    (ok,) = seen(cli, "post")
    assert (
        ok["hook_event_name"] == "PostToolUse"
        and ok["tool_response"]["success"] is True
        and "a" in ok["tool_response"]["output"]
    )
    assert isinstance(ok["duration_ms"], int)
    (failed,) = seen(cli, "failure")
    assert (
        failed["hook_event_name"] == "PostToolUseFailure"
        and failed["error"]
        and failed["tool_input"]["path"] == "missing.txt"
    )
    first, second = outputs(result)
    assert first.endswith("LINT: 2 problems\nCONTEXT: ran lint") and second.endswith(
        "the read failed, as it should"
    )


def test_user_prompt_submit_blocks_adds_context_or_ends_the_turn(cli: Cli) -> None:
    body = (
        "p = data['prompt']\n"
        "if 'forbidden' in p: " + answer({"decision": "block", "reason": "not that"}) + "\n"
        "elif 'stop' in p: " + answer({"continue": False, "stopReason": "enough for today"}) + "\n"
        "else: "
        + answer(
            {
                "hookSpecificOutput": {
                    "hookEventName": "UserPromptSubmit",
                    "additionalContext": "CONTEXT: branch main",
                },
                "systemMessage": "hook says hi",
            }
        )
    )
    cli.config(hooks_config(("UserPromptSubmit", "*", py_hook(cli, "prompt", body))))
    blocked = cli("-p", "something forbidden", *RUN, script=[text("never")])
    clean(blocked)
    assert (
        blocked.returncode == 1
        and not blocked.requests
        and "not that" in blocked.of_type("error")[0]["message"]
    )
    stopped = cli("-p", "please stop", *RUN, script=[text("never")])
    assert not stopped.requests and any(
        "enough for today" in n["message"] for n in stopped.of_type("notice")
    )
    normal = cli("-p", "hello", *RUN, script=[text("hi")])
    assert "CONTEXT: branch main" in json.dumps(normal.requests[0]["messages"])
    assert any(n["message"] == "hook says hi" for n in normal.of_type("notice"))
    assert [d["prompt"] for d in seen(cli, "prompt")] == [
        "something forbidden",
        "please stop",
        "hello",
    ]


def test_session_start_adds_context_and_session_end_runs(cli: Cli) -> None:
    start = py_hook(cli, "start", "print('BRANCH-CONTEXT: feature/x')")
    end = py_hook(cli, "end", "")
    cli.config(hooks_config(("SessionStart", "*", start), ("SessionEnd", "*", end)))
    first = cli("-p", "hello", *RUN, script=[text("hi")])
    clean(first)
    assert "BRANCH-CONTEXT: feature/x" in json.dumps(first.requests[0]["messages"])
    again = cli("-p", "more", *RUN, "--continue", script=[text("hi again")])
    clean(again)
    assert [d["source"] for d in seen(cli, "start")] == ["startup", "resume"]
    ends = seen(cli, "end")
    assert [(d["hook_event_name"], d["reason"], d["ketch_reason"]) for d in ends] == [
        ("SessionEnd", "other", "exit")
    ] * 2


def test_a_stop_hook_json_block_keeps_the_turn_going_until_it_sees_stop_hook_active(
    cli: Cli,
) -> None:
    """Claude Code's loop guard: the Stop hook runs again after its block, with
    ``stop_hook_active: true``; a hook written for Claude Code lets the turn end then."""
    guarded = (
        "if not data['stop_hook_active']:\n"
        + "    "
        + answer({"decision": "block", "reason": "run the tests first"})
    )
    cli.config(hooks_config(("Stop", "*", py_hook(cli, "stop", guarded))))
    result = cli("-p", "go", *RUN, script=[text("done"), text("tested and done")])
    clean(result)
    assert result.events[-1]["text"] == "tested and done"
    assert "run the tests first" in json.dumps(result.requests[1]["messages"][-1])
    assert len(result.requests) == 2
    first, second = seen(cli, "stop")
    assert first["stop_hook_active"] is False and first["last_assistant_message"] == "done"
    assert second["stop_hook_active"] is True
    assert second["last_assistant_message"] == "tested and done"


def test_a_stop_hook_that_always_blocks_is_cut_off_after_eight_continuations(cli: Cli) -> None:
    cli.config(
        hooks_config(
            ("Stop", "*", py_hook(cli, "stop", answer({"decision": "block", "reason": "again"})))
        )
    )
    result = cli("-p", "go", *RUN, script=[text(f"answer {n}") for n in range(12)])
    assert result.returncode == 0, result.stderr
    assert len(result.requests) == 9  # the first answer and eight continuations
    assert [d["stop_hook_active"] for d in seen(cli, "stop")] == [False] + [True] * 7
    assert any(
        "kept this turn going 8 times" in e.get("message", "") for e in result.of_type("notice")
    )


def test_continue_false_before_a_call_ends_the_turn(cli: Cli) -> None:
    cli.config(
        hooks_config(
            (
                "PreToolUse",
                "*",
                py_hook(cli, "pre", answer({"continue": False, "stopReason": "budget spent"})),
            )
        )
    )
    result = cli(
        "-p", "go", *RUN, "--profile", "full-access", script=[write("a.txt"), text("never asked")]
    )
    clean(result)
    assert not (cli.workspace / "a.txt").exists() and len(result.requests) == 1
    assert result.returncode == 0 and result.events[-1]["stop_reason"] == "end_turn"
    assert any("budget spent" in n["message"] for n in result.of_type("notice"))


def test_exit_2_output_and_long_output_are_capped(cli: Cli) -> None:
    cli.config(
        hooks_config(
            (
                "PreToolUse",
                "*",
                py_hook(
                    cli,
                    "loud",
                    "sys.stdout.write('x' * 3_000_000); sys.stderr.write('E' * 3_000_000); sys.exit(2)",
                ),
            )
        )
    )
    result = cli("-p", "go", *RUN, "--profile", "full-access", script=[write("a.txt"), text("ok")])
    clean(result)
    assert not (cli.workspace / "a.txt").exists()
    (blocked,) = result.of_type("tool_result")
    assert len(blocked["output"]) < 12_000 and "cut at 10000 characters" in blocked["output"]


def test_hooks_import_brings_claude_code_hooks_over(cli: Cli) -> None:
    deny = py_hook(cli, "imported", answer(pre_deny("imported hook says no")))
    user_settings = {
        "hooks": {
            "PreToolUse": [
                {
                    "matcher": "Edit|Write|NotebookEdit",
                    "hooks": [{"type": "command", "command": deny, "timeout": 30}],
                },
                {"matcher": "NotebookEdit", "hooks": [{"type": "command", "command": "true"}]},
                {
                    "matcher": "Bash",
                    "hooks": [
                        {"type": "command", "command": "true", "if": "Bash(git *)"},
                        {"type": "http", "url": "http://127.0.0.1:9/hook"},
                    ],
                },
            ],
            "PermissionRequest": [{"hooks": [{"type": "command", "command": "true"}]}],
            "SessionStart": [
                {
                    "matcher": "startup",
                    "hooks": [
                        {"type": "command", "command": "echo", "args": ["started"], "async": True}
                    ],
                }
            ],
        }
    }
    (cli.home / ".claude").mkdir()
    (cli.home / ".claude" / "settings.json").write_text(json.dumps(user_settings))
    (cli.workspace / ".claude").mkdir()
    (cli.workspace / ".claude" / "settings.json").write_text(
        json.dumps({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "./check.sh"}]}]}})
    )
    dry = cli("hooks", "import", "--dry-run")
    clean(dry)
    assert (
        dry.returncode == 0
        and "would import 2 hook(s)" in dry.stdout
        and 'matcher = "edit_file|write_file"' in dry.stdout
    )
    assert not (cli.config_dir / "config.toml").exists() and not (cli.workspace / ".ketch").exists()
    done = cli("hooks", "import")
    clean(done)
    assert done.returncode == 0
    report = done.stdout
    for expected in (
        "imported 2 hook(s)",
        "imported 1 hook(s)",
        "NotebookEdit",
        "`if` conditions",
        "http handler",
        "PermissionRequest: ketch has no such event",
        "you trust them: `ketch trust` shows each one",
    ):
        assert expected in report, report
    user_config = (cli.config_dir / "config.toml").read_text()
    assert (
        "claude_names = true" in user_config
        and 'args = ["started"]' in user_config
        and "async = true" in user_config
    )
    assert "[[hooks.Stop]]" in (cli.workspace / ".ketch" / "config.toml").read_text()
    again = cli("hooks", "import")
    assert "imported 0 hook(s)" in again.stdout and "already there" in again.stdout
    # The imported hook works: it sees Claude Code's names and blocks the write.
    result = cli("-p", "go", *RUN, "--profile", "full-access", script=[write("a.txt"), text("ok")])
    clean(result)
    assert not (cli.workspace / "a.txt").exists() and "imported hook says no" in outputs(result)[0]
    assert seen(cli, "imported")[0]["tool_name"] == "Write"


def test_hooks_import_refuses_bad_json_and_writes_nothing(cli: Cli) -> None:
    (cli.workspace / ".claude").mkdir()
    (cli.workspace / ".claude" / "settings.json").write_text('{"hooks": {"Stop": [}')
    result = cli("hooks", "import", "--project")
    clean(result)
    assert result.returncode == 1 and "settings.json:1: not valid JSON" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and not (cli.workspace / ".ketch").exists()
    nothing = cli("hooks", "import", "--user")
    assert nothing.returncode == 1 and "no Claude Code settings found" in nothing.stderr


def test_imported_workspace_hooks_run_only_once_trusted(cli: Cli, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    (cli.workspace / ".claude").mkdir()
    hook = {
        "hooks": {
            "UserPromptSubmit": [{"hooks": [{"type": "command", "command": f"touch {marker}"}]}]
        }
    }
    (cli.workspace / ".claude" / "settings.json").write_text(json.dumps(hook))
    assert cli("hooks", "import", "--project").returncode == 0
    clean(cli("-p", "hello", *RUN, script=[text("hi")]))
    assert not marker.exists()
    listed = cli("trust")  # shows the imported hook; pins nothing without --yes
    assert listed.returncode == 1 and f"touch {marker}" in listed.stdout
    clean(cli("-p", "hello", *RUN, script=[text("hi")]))
    assert not marker.exists()
    assert cli("trust", "--yes").returncode == 0
    clean(cli("-p", "hello", *RUN, script=[text("hi")]))
    assert marker.exists()
