"""Markdown commands and skills, through a real kernel: discovery and precedence, the
expansion rules ($ARGUMENTS, positional, !`cmd` only when trusted), allowed-tools that
only narrows, and skills whose body stays out of the system prompt until used."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from ketch.commands import PromptRequest, SlashContext
from ketch.policy import ApprovalAnswer
from ketch.testing import Harness, call, text
from ketch_prompt_kit.allowed_tools import narrowing
from ketch_prompt_kit.arguments import expand_arguments

PLUGINS = ["commands", "skills", "fs", "shell", "policy"]


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home-dir"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("KETCH_CONFIG_DIR", str(tmp_path / "config"))  # as the harness sets it
    return home


def write(path: Path, content: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content, encoding="utf-8")
    return path


def make(tmp_path: Path, script: list[dict[str, Any]] | None = None, **kw: Any) -> Harness:
    kw.setdefault("bundled", PLUGINS)
    return Harness.create(tmp_path, script=script or [text("ok")], **kw)


def run_slash(h: Harness, name: str, argument: str = "") -> tuple[list[PromptRequest], list[str]]:
    submitted: list[PromptRequest] = []
    printed: list[str] = []
    command = h.kernel.commands[name]
    ctx = SlashContext(
        kernel=h.kernel,
        session=h.session,
        argument=argument,
        print=printed.append,
        submit=submitted.append,
    )
    result = command.slash_run(ctx)  # type: ignore[misc]
    if asyncio.iscoroutine(result):
        asyncio.run(result)
    return submitted, printed


async def approve(request: Any) -> ApprovalAnswer:
    return ApprovalAnswer(approved=True)


def test_arguments_are_substituted_as_claude_code_does() -> None:
    assert expand_arguments("Review $ARGUMENTS now", "src/ tests/") == "Review src/ tests/ now"
    assert (
        expand_arguments("PR $0 priority $1, rest: $ARGUMENTS[2]", '456 high "alice b"')
        == "PR 456 priority high, rest: alice b"
    )
    assert expand_arguments("costs \\$5 for $9", "a") == "costs $5 for "
    assert (
        expand_arguments("No placeholder here.", "extra words")
        == "No placeholder here.\n\nARGUMENTS: extra words"
    )
    assert expand_arguments("No placeholder here.", "") == "No placeholder here."


def test_project_and_claude_commands_expand_and_are_listed_with_their_source(
    tmp_path: Path, home: Path
) -> None:
    ws = tmp_path / "ws"
    write(
        ws / ".ketch/commands/review.md",
        '---\ndescription: Review some code\nargument-hint: "[path]"\n---\nReview the code in $ARGUMENTS carefully.\n',
    )
    write(ws / ".claude/commands/git/commit.md", "Write a commit message for $ARGUMENTS\n")
    write(home / ".claude/commands/review.md", "the user's own review, shadowed by the project's\n")
    write(home / ".claude/commands/tidy.md", "---\ndescription: Tidy up\n---\nTidy $0 then $1\n")
    h = make(tmp_path)
    commands = h.kernel.commands
    assert (
        commands["review"].help == "Review some code"
        and commands["review"].extra["argument_hint"] == "[path]"
    )
    assert commands["review"].extra["source"] == "project .ketch/commands: review.md"
    assert (
        commands["git:commit"].aliases == ("commit",)
        and "project .claude/commands" in commands["git:commit"].extra["source"]
    )
    assert "user ~/.claude/commands" in commands["tidy"].extra["source"]
    (request,), _ = run_slash(h, "review", "src/")
    assert request.text == "Review the code in src/ carefully." and request.source == "/review"
    (request,), _ = run_slash(h, "git:commit", "the fix")
    assert request.text == "Write a commit message for the fix"
    (request,), _ = run_slash(h, "tidy", "a.py b.py")
    assert request.text == "Tidy a.py then b.py"


def test_bang_lines_run_from_the_users_own_folder_or_once_trusted_and_not_after_a_change(
    tmp_path: Path, home: Path
) -> None:
    from tests.trust.pins import trust_all

    ws = tmp_path / "ws"
    write(ws / ".ketch/commands/status.md", "Status: !`echo project-$((40 + 2))`\n")
    write(ws / ".claude/commands/other.md", "Other: !`echo other-$((40 + 1))`\n")
    write(tmp_path / "config/commands/mine.md", "Mine: !`echo user-$((40 + 3))`\n")
    h = make(tmp_path, bundled=[*PLUGINS, "trust"])
    (request,), _ = run_slash(h, "status")
    assert "project-42" not in request.text and "was not run: not trusted" in request.text
    said = [e.message for e in h.of_type("notice")]
    assert any(".ketch/commands/status.md" in m and "ketch trust" in m for m in said), said
    (request,), _ = run_slash(h, "mine")
    assert request.text == "Mine: user-43"  # the person's own folder: always
    trust_all(h)  # what `ketch trust --yes` pins
    (request,), _ = run_slash(h, "status")
    assert request.text == "Status: project-42"
    # The line changes (by anyone): it does not run until trusted again; the other,
    # unchanged, keeps running.
    write(ws / ".ketch/commands/status.md", "Status: !`echo changed-$((40 + 2))`\n")
    h2 = make(tmp_path, bundled=[*PLUGINS, "trust"])
    (request,), _ = run_slash(h2, "status")
    assert "changed-42" not in request.text and "was not run" in request.text
    assert any("changed since you trusted it" in e.message for e in h2.of_type("notice"))
    (request,), _ = run_slash(h2, "other")
    assert request.text == "Other: other-41"


def test_allowed_tools_narrows_the_turn_and_never_approves(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write(
        ws / ".ketch/commands/look.md",
        "---\nallowed-tools: Read, Bash(git status:*)\n---\nLook at $ARGUMENTS\n",
    )
    h = make(
        tmp_path,
        script=[
            call("shell", {"command": "git status"}),
            call("shell", {"command": "rm -rf x"}),
            call("write_file", {"path": "x", "content": "y"}),
            text("done"),
        ],
    )
    (request,), _ = run_slash(h, "look", "it")
    assert request.allowed_tools == {"read_file", "shell"}
    asked: list[str] = []

    async def approver(req: Any) -> ApprovalAnswer:
        asked.append(req.call.input.get("command", req.call.tool))
        return ApprovalAnswer(approved=False)  # the filter allowed it; the policy still asks

    asyncio.run(
        h.kernel.run_turn(
            h.session, request.text, approver=approver, allowed_tools=request.allowed_tools
        )
    )
    assert sorted(t.name for t in h.provider.requests[0].tools) == ["read_file", "shell"]
    outcomes = [(e.name, e.ok, e.output) for e in h.of_type("tool_result")]
    assert "git status" in asked  # not pre-approved: the policy asked
    assert "rm -rf x" not in asked and "allows shell only for: git status:*" in outcomes[1][2]
    assert "no tool named 'write_file' in this turn" in outcomes[2][2]
    assert not (ws / "x").exists()


def test_unknown_allowed_tools_allow_nothing() -> None:
    narrow, unknown = narrowing("Frobnicate, Read", ["read_file", "shell"], "/x")
    assert narrow is not None and narrow.tools == {"read_file"} and unknown == ["Frobnicate"]
    assert narrowing(None, ["read_file"], "/x") == (None, [])


def test_skill_description_is_in_the_system_prompt_and_its_body_only_once_used(
    tmp_path: Path,
) -> None:
    ws = tmp_path / "ws"
    write(
        ws / ".claude/skills/pdf-tools/SKILL.md",
        "---\nname: pdf-tools\ndescription: Fill and merge PDF forms\n---\nSKILL-BODY-CANARY: use pdftk like this.\n",
    )
    write(ws / ".claude/skills/pdf-tools/reference.md", "more details\n")
    h = make(tmp_path, script=[call("skill", {"name": "pdf-tools"}), text("done"), text("again")])
    h.run("merge the forms")
    first, second = h.provider.requests[0], h.provider.requests[1]
    assert "pdf-tools: Fill and merge PDF forms" in first.system
    assert "SKILL-BODY-CANARY" not in first.system and all(
        "SKILL-BODY-CANARY" not in m.text for m in first.messages
    )
    loaded = second.messages[-1].tool_results[0].output
    assert "SKILL-BODY-CANARY" in loaded and "reference.md" in loaded
    h.run("next")
    assert "SKILL-BODY-CANARY" not in h.provider.requests[2].system


def test_typed_skill_sends_its_body_and_a_skill_beats_a_command(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write(
        ws / ".ketch/skills/deploy/SKILL.md",
        "---\ndescription: Deploy the app\nallowed-tools: Bash(make deploy)\n---\nRun make deploy for $ARGUMENTS.\n",
    )
    write(ws / ".ketch/commands/deploy.md", "the command loses\n")
    h = make(tmp_path)
    assert h.kernel.commands["deploy"].extra["source"].startswith("skill")
    (request,), _ = run_slash(h, "deploy", "staging")
    assert (
        "Run make deploy for staging." in request.text and "the command loses" not in request.text
    )
    assert request.allowed_tools == {"shell"}


def test_a_skill_loaded_by_the_model_narrows_the_rest_of_its_turn(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write(
        ws / ".ketch/skills/readonly/SKILL.md",
        "---\ndescription: Only look\nallowed-tools: Read\n---\nOnly read files.\n",
    )
    write(ws / "a.txt", "a\n")
    h = make(
        tmp_path,
        script=[
            call("skill", {"name": "readonly"}),
            call("write_file", {"path": "b.txt", "content": "b"}),
            text("done"),
            call("write_file", {"path": "c.txt", "content": "c"}),
            text("ok"),
        ],
    )
    h.run("do it", approver=approve)
    write_result = [e for e in h.of_type("tool_result") if e.name == "write_file"][0]
    assert not write_result.ok and "the skill readonly" in write_result.output
    assert not (ws / "b.txt").exists()
    h.run("now write c", approver=approve)  # the next turn is not narrowed
    assert (ws / "c.txt").exists()
