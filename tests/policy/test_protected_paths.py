"""Protected paths (issue 23 item 3): which paths run code later, and the hard guard
that makes every write tool ask for them, in every profile."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ketch.testing import Harness
from ketch_policy_kit.paths import write_guard
from ketch_policy_kit.protected import (
    configured_paths,
    executed_files,
    protected_component,
    protected_name,
    repository_paths,
)

GIT_ENV = {
    **os.environ,
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, env=GIT_ENV, check=True, capture_output=True)


@pytest.mark.parametrize(
    "name",
    [".git", ".ketch", ".claude", ".vscode", ".idea", ".husky", ".envrc", ".gitconfig",
     ".gitconfig.local", ".mcp.json", ".VSCode"],
)  # fmt: skip
def test_protected_names(name: str) -> None:
    assert protected_name(name)


@pytest.mark.parametrize("name", ["git", "vscode", ".github", ".gitignore", "src", ".env.example"])
def test_other_names_are_not_protected(name: str) -> None:
    assert protected_name(name) is None


def test_the_first_protected_component_counts(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    found = protected_component(ws / "src" / ".vscode" / "tasks.json", ws)
    assert found is not None and found.path == ws / "src" / ".vscode"
    # The workspace's own path is not judged: only what lies below it.
    inner = tmp_path / ".claude" / "projects" / "ws"
    assert protected_component(inner / "src" / "app.py", inner) is None


def test_a_repositorys_hooks_directory_and_includes(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    git(ws, "init", "-q")
    git(ws, "config", "core.hooksPath", ".husky")
    git(ws, "config", "include.path", "../shared.gitcfg")
    git(ws, "config", "includeIf.gitdir:/nowhere/.path", "../conditional.cfg")
    git(ws, "config", "--add", "include.path", str(tmp_path / "outside.cfg"))
    found = {p.path: p.why for p in repository_paths(ws / ".git", ws, ws, GIT_ENV)}
    assert ws / ".husky" in found and "hooksPath" in found[ws / ".husky"]
    assert ws / "shared.gitcfg" in found and ws / "conditional.cfg" in found
    assert tmp_path / "outside.cfg" not in found, "outside the workspace: not the sandbox's"


def test_the_answer_follows_each_callers_own_git_config(tmp_path: Path) -> None:
    """The repository's config is read with git's whole environment: two kernels with
    different homes (or one whose ``~/.gitconfig`` changed) each get their own answer,
    never the other's cached one."""
    ws = tmp_path / "ws"
    ws.mkdir()
    git(ws, "init", "-q")
    plain, hooked = tmp_path / "plain", tmp_path / "hooked"
    plain.mkdir()
    hooked.mkdir()
    (hooked / ".gitconfig").write_text("[core]\n\thooksPath = .myhooks\n")

    def hooks(home: Path) -> bool:
        environ = {"PATH": os.environ["PATH"], "HOME": str(home)}
        return ws / ".myhooks" in {p.path for p in repository_paths(ws / ".git", ws, ws, environ)}

    assert [hooks(plain), hooks(hooked), hooks(plain)] == [False, True, False]
    (plain / ".gitconfig").write_text("[core]\n\thooksPath = .myhooks\n")
    assert hooks(plain), "a change to the person's own git config is seen"


def test_an_included_file_that_includes_more(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    git(ws, "init", "-q")
    git(ws, "config", "include.path", "../a.cfg")
    (ws / "a.cfg").write_text("[include]\n\tpath = b.cfg\n")
    found = {p.path for p in repository_paths(ws / ".git", ws, ws, GIT_ENV)}
    assert {ws / "a.cfg", ws / "b.cfg"} <= found


def test_what_configured_hooks_and_servers_execute(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    for rel in (
        "scripts/verify.py",
        "tools/server.js",
        "pkg/mod.py",
        ".venv/bin/lint",
        "src/app.py",
    ):
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text("x\n")
    (ws / ".venv" / "bin" / "lint").chmod(0o755)
    (ws / ".claude").mkdir()
    (ws / ".claude" / "settings.json").write_text(
        json.dumps(
            {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "$CLAUDE_PROJECT_DIR/hooks/stop.sh"}]}]}}
        )
    )  # fmt: skip
    (ws / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"a": {"command": "node", "args": ["tools/server.js"]}}})
    )
    sections = {
        "hooks": {
            "Stop": [{"command": "python3 scripts/verify.py --strict"}],
            "PostToolUse": [{"command": "sh -c 'python -m pkg.mod && lint'"}, {"command": "ruff check src/"}],
        },
        "mcp_servers": {"b": {"command": "uv", "args": ["run", "missing/server.py"]}},
    }  # fmt: skip
    environ = {"PATH": f"{ws / '.venv' / 'bin'}:{os.environ['PATH']}", "HOME": str(tmp_path)}
    found = {p.path: p.why for p in configured_paths(ws, sections, environ)}
    assert "hook Stop" in found[ws / "scripts" / "verify.py"]
    assert ws / "pkg" / "mod.py" in found, "-m pkg.mod, inside sh -c"
    assert ws / ".venv" / "bin" / "lint" in found, "a bare name PATH finds in the workspace"
    assert ws / "hooks" / "stop.sh" in found, "$CLAUDE_PROJECT_DIR from .claude/settings.json"
    assert ws / "tools" / "server.js" in found, ".mcp.json"
    assert ws / "missing" / "server.py" in found, "a script that does not exist yet"
    assert ws / "src" not in found and ws / "src" / "app.py" not in found, "a linter's operand"


def test_executed_files_reads_only_what_runs(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "data").mkdir(parents=True)
    (ws / "data" / "x.csv").write_text("1\n")
    assert list(executed_files(["cat", "data/x.csv"], ws, os.environ)) == []
    assert list(executed_files(["bash", "-c", "echo hi"], ws, os.environ)) == []


def test_write_guard_names_why(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    for rel in (
        ".vscode/tasks.json",
        "sub/.claude/commands/x.md",
        ".envrc",
        ".gitconfig.local",
        ".mcp.json",
    ):
        reason = write_guard(ws / rel, ws)
        assert reason and "protected path" in reason, rel
    assert write_guard(ws / "src" / "app.py", ws) is None


# --- the guard, through a real kernel: every write tool, every profile ---------------------------


PROTECTED_WRITES = [
    ".claude/commands/deploy.md",
    ".claude/settings.json",
    ".vscode/tasks.json",
    ".envrc",
    ".husky/pre-commit",
    ".idea/workspace.xml",
    ".gitconfig",
    ".mcp.json",
    "src/.vscode/settings.json",
    ".ketch/config.toml",
    ".git/hooks/pre-commit",
    "scripts/verify.py",  # run by a configured Stop hook
    "hooks2/pre-commit",  # the repository's core.hooksPath
    "local.gitcfg",  # the repository's config includes it
]


@pytest.mark.parametrize("profile", ["manual", "assisted", "full-access"])
def test_write_tools_ask_for_every_protected_path(tmp_path: Path, profile: str) -> None:
    from ketch.testing import call, text

    config = (
        f'[[hooks.Stop]]\ncommand = "{sys.executable} scripts/verify.py"\n'
        '[permissions]\nallow = ["write(**)", "write_file", "edit_file"]\n'
    )
    harness = Harness.create(
        tmp_path, bundled=["fs", "guards", "policy"], config=config, settings={"profile": profile}
    )
    ws = harness.workspace
    git(ws, "init", "-q")
    git(ws, "config", "core.hooksPath", "hooks2")
    git(ws, "config", "include.path", "../local.gitcfg")
    (ws / "scripts").mkdir()
    (ws / "scripts" / "verify.py").write_text("print('ok')\n")
    for rel in PROTECTED_WRITES:
        harness.provider.add(call("write_file", {"path": rel, "content": "planted\n"}))
    harness.provider.add(
        call("edit_file", {"path": "scripts/verify.py", "old_string": "ok", "new_string": "x"})
    )
    harness.provider.add(
        call("write_file", {"path": "src/ordinary.py", "content": "x = 1\n"}), text("done")
    )
    harness.run("write them", approver=None)
    decisions = [e for e in harness.events if e.type == "permission"]
    assert len(decisions) == len(PROTECTED_WRITES) + 2
    for event, rel in zip(decisions, [*PROTECTED_WRITES, "scripts/verify.py (edit)"], strict=False):
        assert event.decision == "ask", (rel, event.decision, event.reason)
    assert decisions[-1].decision == "allow" or profile == "manual", decisions[-1].reason
    for rel in PROTECTED_WRITES:
        if rel != "scripts/verify.py":
            assert not (ws / rel).exists(), rel
    assert (ws / "scripts" / "verify.py").read_text() == "print('ok')\n"


@pytest.mark.parametrize("profile", ["assisted", "full-access"])
def test_ketchs_cache_inside_a_workspace_is_protected_too(tmp_path: Path, profile: str) -> None:
    """The cache decides what a later start loads and sends (the plugin list, the tool
    schemas, the first request's record): a write there asks even when the person put
    the cache inside the workspace, and even where every write is allowed."""
    from ketch.testing import call, text

    cache = tmp_path / "ws" / ".cache" / "ketch"
    harness = Harness.create(
        tmp_path,
        bundled=["fs", "guards", "policy"],
        config='[permissions]\nallow = ["write(**)", "write_file"]\n',
        settings={"profile": profile},
        env={"KETCH_CACHE_DIR": str(cache)},
    )
    planted = json.dumps({"format": 1, "confirmed": True, "url": "http://attacker.invalid/"})
    harness.provider.add(
        call("write_file", {"path": ".cache/ketch/early-request.json", "content": planted}),
        text("done"),
    )
    harness.run("write it", approver=None)
    (decision,) = [e for e in harness.events if e.type == "permission"]
    assert decision.decision == "ask" and "caches" in decision.reason
    assert not (cache / "early-request.json").exists()
