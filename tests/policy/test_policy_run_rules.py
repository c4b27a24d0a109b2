"""Per-run rules through the real CLI: ``--allow/--ask/--deny RULE`` and Claude Code's
``--allowedTools/--disallowedTools`` spellings (mapped, or refused with exit 2)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from ketch.testing import call, text
from ketch.testing.cli import run_cli
from ketch_claude_kit.rules import MappingError, from_claude
from ketch_claude_kit.rules import split_rules as split_list

HEADLESS = [
    "-p",
    "go",
    "--provider",
    "scripted",
    "--output-format",
    "stream-json",
    "--profile",
    "manual",
]


def _results(result: object) -> dict[str, dict[str, object]]:
    return {e["tool_call_id"]: e for e in result.of_type("tool_result")}  # type: ignore[attr-defined]


def test_allow_rule_lets_that_write_run_and_no_other(tmp_path: Path) -> None:
    """Manual headless asks for every write, and nobody can approve: only the write the
    per-run rule names runs."""
    script = [
        call("write_file", {"path": "notes.md", "content": "kept\n"}, id="a"),
        call("write_file", {"path": "other.md", "content": "no\n"}, id="b"),
        text("done"),
    ]
    result = run_cli([*HEADLESS, "--allow", "write(notes.md)"], cwd=tmp_path, script=script)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "notes.md").read_text() == "kept\n"
    assert not (tmp_path / "other.md").exists()
    decisions = {e["tool_call_id"]: e["decision"] for e in result.of_type("permission")}
    assert decisions == {"a": "allow", "b": "ask"}
    results = _results(result)
    assert results["a"]["ok"] is True and results["b"]["ok"] is False


def test_a_per_run_deny_adds_to_the_config_and_beats_its_allow(tmp_path: Path) -> None:
    config_dir = tmp_path / "config"
    config_dir.mkdir()
    (config_dir / "config.toml").write_text('[permissions]\nallow = ["write(**)"]\n')
    script = [
        call("write_file", {"path": "a.md", "content": "x"}, id="a"),
        call("write_file", {"path": "b.md", "content": "y"}, id="b"),
        text("done"),
    ]
    ws = tmp_path / "ws"
    ws.mkdir()
    result = run_cli(
        [*HEADLESS, "--deny", "write(b.md)"],
        cwd=ws,
        env={"KETCH_CONFIG_DIR": str(config_dir)},
        script=script,
    )
    assert result.returncode == 0, result.stderr
    decisions = {e["tool_call_id"]: e["decision"] for e in result.of_type("permission")}
    assert decisions == {"a": "allow", "b": "deny"}, (
        "the config's allow still holds; the command line's deny adds to it"
    )


def test_allowed_tools_bash_spelling_maps_and_runs(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    script = [
        call("shell", {"command": "git status --short"}, id="s1"),
        call("shell", {"command": "git status"}, id="s2"),
        text("done"),
    ]
    result = run_cli([*HEADLESS, "--allowedTools", "Bash(git status)"], cwd=tmp_path, script=script)
    assert result.returncode == 0, result.stderr
    decisions = {e["tool_call_id"]: e["decision"] for e in result.of_type("permission")}
    assert decisions == {"s1": "ask", "s2": "allow"}, "Bash(git status) is exactly that command"
    assert "No commits yet" in str(_results(result)["s2"]["output"]) or "nothing to commit" in str(
        _results(result)["s2"]["output"]
    )


def test_allowed_tools_are_listed_as_run_rules(tmp_path: Path) -> None:
    result = run_cli(
        [
            "--allowedTools",
            "Bash(git diff:*),Read(./src/**)",
            "--disallowedTools",
            "WebFetch(domain:evil.example) Edit",
            "permissions",
            "list",
        ],
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert "allow rules (config): shell(git diff:*), read(src/**)" in result.stdout
    assert "deny rules (config): web(evil.example), write" in result.stdout


@pytest.mark.parametrize(
    ("spelling", "message"),
    [
        ("Task(Explore)", "agent rules take no specifier"),
        ("AskUserQuestion", "AskUserQuestion has no ketch equivalent"),
        ("Bash(git * main)", "'*' only at the end"),
        ("WebFetch(https://x.example)", "only WebFetch(domain:HOST)"),
        ("Bash(run_in_background:true)", "parameter rules"),
        ("Read(./src", "not closed"),
    ],
)
def test_an_unmappable_spelling_is_a_usage_error_in_one_line(
    tmp_path: Path, spelling: str, message: str
) -> None:
    result = run_cli([*HEADLESS, "--allowedTools", spelling], cwd=tmp_path, script=[text("never")])
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert (
        len(lines) == 1 and lines[0].startswith("ketch: --allowedTools") and message in lines[0]
    ), result.stderr
    assert "Traceback" not in result.stderr


def test_a_malformed_ketch_rule_is_a_usage_error_too(tmp_path: Path) -> None:
    result = run_cli([*HEADLESS, "--deny", "shell(rm; x)"], cwd=tmp_path, script=[text("never")])
    assert result.returncode == 2
    assert (
        result.stderr.strip().startswith("ketch: --deny")
        and "shell syntax" in result.stderr
        and len(result.stderr.strip().splitlines()) == 1
    )


@pytest.mark.parametrize(
    ("claude", "ketch"),
    [
        ("Bash", "shell"),
        ("Bash(*)", "shell"),
        ("Bash(git diff:*)", "shell(git diff:*)"),
        ("Bash(npm run test *)", "shell(npm run test:*)"),
        ("Bash(git status)", "shell(git status)"),
        ("Edit", "write"),
        ("Write(docs/**)", "write(docs/**)"),
        ("Read(./src/**)", "read(src/**)"),
        ("Read(//etc/hosts)", "read(/etc/hosts)"),
        ("Read(~/.zshrc)", "read(~/.zshrc)"),
        (
            "Read(/src/**)",
            "read(src/**)",
        ),  # project-relative in Claude Code: never the filesystem root
        ("WebFetch(domain:docs.python.org)", "web(docs.python.org)"),
        ("WebFetch(domain:*.python.org)", "web(*.python.org)"),
        ("Glob", "glob"),
        ("Grep", "grep"),
        ("mcp__github__get_issue", "mcp__github__get_issue"),
        ("mcp__github", "mcp__github__*"),
    ],
)
def test_claude_spellings_map(claude: str, ketch: str) -> None:
    assert from_claude(claude) == ketch


def test_lists_split_outside_parentheses() -> None:
    assert split_list("Bash(git log --oneline), Read  Edit") == [
        "Bash(git log --oneline)",
        "Read",
        "Edit",
    ]
    with pytest.raises(MappingError):
        split_list("Bash(git")
