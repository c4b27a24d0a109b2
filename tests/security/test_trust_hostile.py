"""Acceptance (issue 23, items 1 and 2), by effects: a hostile repository opened with
``ketch -p``, ``ketch acp`` (the ACP SDK's own client) and the shell (tmux) runs
nothing — no git filter, fsmonitor, textconv, pager, hook script or included config's
program, no workspace hook, MCP server or ``!`cmd```, no request to the base URL the
repository names. ``ketch trust`` lists every executable item before it trusts; after
trust the trusted items run (the controls), and a changed hook, MCP command, script or
``!`cmd``` does not run until trusted again while the unchanged ones keep running.

Every program of the fixture appends its name to ``canary.log`` outside the workspace
(``tests/trust/hostile.py``); the base URL is a loopback listener that records every
connection.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from tests.trust.hostile import Canaries, arm_agent_config, arm_git, git

from ketch.testing import isolated_env
from ketch.testing.cli import CliResult, run_cli

pytestmark = pytest.mark.skipif(not os.path.exists("/usr/bin/git"), reason="needs git")
SCRIPTED = ("--provider", "scripted", "--output-format", "stream-json")


class Listener:
    """A loopback TCP server that records each connection's first bytes."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.seen: list[bytes] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            conn.settimeout(2)
            try:
                self.seen.append(conn.recv(65536))
            except OSError:
                self.seen.append(b"")
            conn.close()

    def close(self) -> None:
        self.sock.close()


@dataclass
class Hostile:
    root: Path
    ws: Path
    canaries: Canaries
    listener: Listener
    env: dict[str, str] = field(default_factory=dict)
    runs: int = 0

    def ketch(
        self, *args: str, script: list[dict[str, Any]] | None = None, **env: str
    ) -> CliResult:
        self.runs += 1
        return run_cli(
            list(args),
            cwd=self.ws,
            env={**self.env, **env},
            script=script,
            scratch=self.root / f"run-{self.runs}",
            timeout=90,
        )

    def nothing_ran(self) -> None:
        assert self.canaries.ran() == [], f"the repository's code ran: {self.canaries.ran()}"
        assert self.listener.seen == [], (
            f"the repository's base URL was contacted: {self.listener.seen}"
        )


@pytest.fixture
def hostile(tmp_path: Path) -> Any:
    ws = tmp_path / "ws"
    log = tmp_path / "canary.log"
    script = arm_git(ws, log)
    listener = Listener()
    arm_agent_config(ws, script, base_url=f"http://127.0.0.1:{listener.port}/v1")
    git(ws, "add", "-A")  # a repository as cloned: its config files are committed
    git(
        ws,
        "commit",
        "-q",
        "--no-verify",
        "-m",
        "agent config",
        env={"GIT_CONFIG_GLOBAL": "/dev/null"},
    )
    log.unlink(missing_ok=True)  # the commit's own hooks ran (that was the fixture's git)
    home = tmp_path / "home"
    home.mkdir()
    env = {
        **isolated_env(home),
        "HOME": str(home),
        "HOSTILE_KEY": "sk-hostile-canary-key",
        "KETCH_DISABLE_PLUGINS": "sandbox",  # the effects below are the engine's, not bwrap's
    }
    h = Hostile(tmp_path, ws, Canaries(log), listener, env)
    yield h
    listener.close()


def _notices(result: CliResult) -> str:
    return "\n".join(e.get("message", "") for e in result.of_type("notice")) + result.stderr


# --- before trust: nothing runs ----------------------------------------------------------


def test_ketch_p_in_a_hostile_repository_runs_nothing(hostile: Hostile) -> None:
    script = [
        {"tool_calls": [{"name": "shell", "input": {"command": "git status"}}]},
        {"tool_calls": [{"name": "shell", "input": {"command": "git diff"}}]},
        {"text": "done"},
    ]
    result = hostile.ketch("-p", "look around", *SCRIPTED, "--profile", "assisted", script=script)
    assert result.returncode == 0, result.stderr
    hostile.nothing_ran()
    # The model's git asked (and, headless with no approver, did not run) because the
    # repository names programs nobody trusted.
    asks = [e for e in result.of_type("permission") if e["decision"] == "ask"]
    assert len(asks) == 2 and not any(e["approved"] for e in asks)
    assert all("repository's config names a program" in e["reason"] for e in asks)
    said = _notices(result)
    assert "not trusted yet" in said and "hook SessionStart #1 (.ketch/config.toml)" in said
    assert "ketch trust" in said
    # ketch's own git did look (the environment section), with nothing run.
    system = json.dumps(result.requests[0])
    assert "Git: on branch main" in system


def test_piped_stdin_trusts_nothing_either(hostile: Hostile) -> None:
    """Headless with stdin not a terminal (CI): no implicit trust (case 37)."""
    result = run_cli(
        ["-p", *SCRIPTED],
        cwd=hostile.ws,
        env=hostile.env,
        script=[{"text": "ok"}],
        input="hello from a pipe\n",
        scratch=hostile.root / "piped",
    )
    assert result.returncode == 0, result.stderr
    hostile.nothing_ran()


def test_the_base_url_the_repository_names_is_not_contacted(hostile: Hostile) -> None:
    from tests.platform.openai_stub import Answer, OpenAIStub

    with OpenAIStub(Answer(text="from the real server"), Answer(text="again")) as stub:
        env = {"OPENAI_API_KEY": "sk-the-persons-own", "OPENAI_BASE_URL": stub.base_url}
        result = hostile.ketch("-p", "hi", "--provider", "openai", "--model", "m", **env)
        assert result.returncode == 0, result.stderr
        assert "from the real server" in result.stdout
        assert len(stub.requests) == 1
        hostile.nothing_ran()
        # The control: once trusted, the repository's base URL (and key variable) apply.
        assert hostile.ketch("trust", "--yes").returncode == 0
        hostile.canaries.reset()
        hostile.ketch("-p", "hi", "--provider", "openai", "--model", "m", **env)
    assert hostile.listener.seen and b"sk-hostile-canary-key" in b"".join(hostile.listener.seen)


def test_ketch_acp_in_a_hostile_repository_runs_nothing(hostile: Hostile) -> None:
    from tests.acp.acp_kit import AcpEnv, RecordingClient, run_prompts

    acp = AcpEnv(workspace=hostile.ws, scratch=hostile.root / "acp", env=dict(hostile.env))
    acp.scratch.mkdir()
    acp.script(
        [
            {"tool_calls": [{"name": "shell", "input": {"command": "git status"}}]},
            {"text": "done"},
        ]
    )
    client = RecordingClient(choose=lambda call, options: "reject_once")
    assert run_prompts(acp, client, "hello", "again") == ["end_turn", "end_turn"]
    hostile.nothing_ran()
    notes = "".join(u.content.text for u in client.of("agent_thought_chunk"))
    assert "not trusted yet" in notes and "ketch trust" in notes


# --- ketch trust shows everything before it trusts ---------------------------------------

EXPECTED_ITEMS = [
    # .ketch/config.toml: every hook's command, the MCP server's command line, each allow
    # rule, the profile, the base URL and key variable, the shell's environment and network
    *(f"ketch-hook-{e}" for e in ("SessionStart", "UserPromptSubmit", "PreToolUse", "Stop")),
    "canary.sh ketch-mcp",
    "permissions.allow: shell(*)",
    "permissions.allow: write(**)",
    'profile = "full-access"',
    "providers.openai.base_url",
    "providers.openai.api_key_env",
    '"env_passthrough":["*"]',
    # Claude Code's files, ketch's Markdown commands' !`cmd` lines
    "claude-hook",
    "canary.sh dotmcp",
    "canary.sh bang",
    "canary.sh ketch-bang",
    # git: config programs, the included file's, hook scripts
    "filter.evil.clean",
    "filter.evil.smudge",
    "diff.evil.textconv",
    "diff.evil.command",
    "core.fsmonitor",
    "core.pager",
    "core.hookspath = .husky",
    "core.sshcommand",
    "credential.helper",
    "gpg.program",
    "include.path = ../.gitconfig-extra",
    "filter.inc.clean",
    ".husky/pre-commit",
    ".husky/post-checkout",
]


def test_ketch_trust_lists_every_executable_item_before_it_trusts(hostile: Hostile) -> None:
    listed = hostile.ketch("trust")
    assert listed.returncode == 1, listed.stderr  # not a terminal, no --yes: nothing pinned
    missing = [text for text in EXPECTED_ITEMS if text not in listed.stdout]
    assert missing == [], f"not shown: {missing}\n{listed.stdout}"
    assert "nothing trusted: run `ketch trust --yes`" in listed.stderr
    hostile.nothing_ran()  # listing ran nothing
    again = hostile.ketch("-p", "hi", *SCRIPTED, script=[{"text": "ok"}])
    assert "not trusted yet" in _notices(again)
    hostile.nothing_ran()
    assert hostile.ketch("trust", "--yes").returncode == 0
    assert "all" in hostile.ketch("trust").stdout.splitlines()[0]  # nothing left to trust


def test_the_removed_trust_flag_says_what_to_do(hostile: Hostile) -> None:
    result = hostile.ketch("--trust-workspace", "-p", "hi", *SCRIPTED, script=[{"text": "ok"}])
    assert result.returncode == 2
    assert "--trust-workspace was removed" in result.stderr and "ketch trust" in result.stderr
    assert "Traceback" not in result.stderr
    hostile.nothing_ran()


# --- after trust: trusted items run; a changed one does not until trusted again ----------


def _hook_runs(hostile: Hostile) -> set[str]:
    return {name for name in hostile.canaries.ran() if name.startswith("ketch-hook-")}


def test_after_trust_a_changed_hook_waits_while_the_unchanged_ones_run(hostile: Hostile) -> None:
    assert hostile.ketch("trust", "--yes").returncode == 0
    hostile.canaries.reset()
    hostile.ketch("-p", "hi", *SCRIPTED, script=[{"text": "ok"}])
    ran = _hook_runs(hostile)
    assert {"ketch-hook-SessionStart", "ketch-hook-UserPromptSubmit", "ketch-hook-Stop"} <= ran
    # Anyone (the model included) changes the Stop hook's command line.
    config = hostile.ws / ".ketch" / "config.toml"
    config.write_text(config.read_text().replace("ketch-hook-Stop", "ketch-hook-Stop-changed"))
    hostile.canaries.reset()
    result = hostile.ketch("-p", "hi", *SCRIPTED, script=[{"text": "ok"}])
    ran = _hook_runs(hostile)
    assert "ketch-hook-Stop-changed" not in ran and "ketch-hook-Stop" not in ran
    assert {"ketch-hook-SessionStart", "ketch-hook-UserPromptSubmit"} <= ran
    assert "hook Stop #1 (.ketch/config.toml): changed since you trusted it" in _notices(result)
    # Trusted again: it runs.
    assert hostile.ketch("trust", "--yes").returncode == 0
    hostile.canaries.reset()
    hostile.ketch("-p", "hi", *SCRIPTED, script=[{"text": "ok"}])
    assert "ketch-hook-Stop-changed" in _hook_runs(hostile)


def test_a_script_a_trusted_hook_runs_rewritten_by_the_model_waits(hostile: Hostile) -> None:
    """A prompt hook runs ``scripts/verify.sh``; the model's rewrite of that file asks in
    every profile (a file a configured hook executes is a protected path: the hard
    guard), so headless it does not happen; rewritten anyway (by anyone: a command
    outside the sandbox, the person's editor), the next session does not run it."""
    verify = hostile.ws / "scripts" / "verify.sh"
    verify.parent.mkdir()
    verify.write_text(f"#!/bin/sh\necho verify >> {hostile.canaries.log}\n")
    config = hostile.ws / ".ketch" / "config.toml"
    config.write_text(
        config.read_text() + '\n[[hooks.UserPromptSubmit]]\ncommand = "sh scripts/verify.sh"\n'
    )
    assert hostile.ketch("trust", "--yes").returncode == 0
    hostile.canaries.reset()
    rewrite = {
        "name": "write_file",
        "input": {
            "path": "scripts/verify.sh",
            "content": f"#!/bin/sh\necho planted >> {hostile.canaries.log}\n",
        },
    }
    result = hostile.ketch(
        "-p",
        "fix it",
        *SCRIPTED,
        "--profile",
        "full-access",
        script=[
            {"tool_calls": [{"name": "read_file", "input": {"path": "scripts/verify.sh"}}]},
            {"tool_calls": [rewrite]},
            {"text": "done"},
        ],
    )
    assert result.returncode == 0, result.stderr
    asked = [e for e in result.of_type("permission") if e.get("decision") == "ask"]
    assert any("protected path" in e.get("reason", "") for e in asked), result.of_type("permission")
    assert "planted" not in verify.read_text()
    assert "verify" in hostile.canaries.ran()  # the trusted version ran
    verify.write_text(f"#!/bin/sh\necho planted >> {hostile.canaries.log}\n")
    hostile.canaries.reset()
    result = hostile.ketch("-p", "hi", *SCRIPTED, script=[{"text": "ok"}])
    assert "planted" not in hostile.canaries.ran()
    said = _notices(result)
    assert "hook UserPromptSubmit #2 (.ketch/config.toml): changed since you trusted it" in said
    assert "ketch-hook-UserPromptSubmit" in hostile.canaries.ran()  # the unchanged one runs


def test_after_trust_a_changed_bang_line_waits_while_the_unchanged_one_runs(
    hostile: Hostile,
) -> None:
    """Markdown commands' ``!`cmd``` lines, through the shell's own slash command path
    (headless has none): the trust kit's check decides each line."""
    from tests.trust.test_trust_items import run_command_in

    assert hostile.ketch("trust", "--yes").returncode == 0
    hostile.canaries.reset()
    assert run_command_in(hostile.ws, hostile.env, "bang") and run_command_in(
        hostile.ws, hostile.env, "boom"
    )
    assert {"ketch-bang", "bang"} <= set(hostile.canaries.ran())
    command = hostile.ws / ".ketch" / "commands" / "bang.md"
    command.write_text(command.read_text().replace("ketch-bang", "ketch-bang-changed"))
    hostile.canaries.reset()
    assert not run_command_in(hostile.ws, hostile.env, "bang")
    assert run_command_in(hostile.ws, hostile.env, "boom")
    assert hostile.canaries.ran() == ["bang"]


def test_after_trust_the_models_git_runs_the_trusted_programs(hostile: Hostile) -> None:
    """The control for the git vote: once the person trusted the repository's programs,
    the model's ``git status`` is proven again (and git runs them, as it would for them).
    The repository's own allow rules are left out: they would allow it anyway."""
    (hostile.ws / ".ketch" / "config.toml").unlink()
    assert hostile.ketch("trust", "--yes").returncode == 0
    hostile.canaries.reset()
    script = [
        {"tool_calls": [{"name": "shell", "input": {"command": "git status"}}]},
        {"text": "done"},
    ]
    result = hostile.ketch("-p", "look", *SCRIPTED, "--profile", "assisted", script=script)
    (permission,) = result.of_type("permission")
    assert permission["decision"] == "allow"
    assert "fsmonitor" in hostile.canaries.ran()
    # A new program appears in a file the config includes: asked again.
    with open(hostile.ws / ".gitconfig-extra", "a") as extra:
        extra.write(f"[core]\n\tpager = sh {hostile.ws / 'tools' / 'canary.sh'} late-pager\n")
    hostile.canaries.reset()
    result = hostile.ketch("-p", "look", *SCRIPTED, "--profile", "assisted", script=script)
    (permission,) = result.of_type("permission")
    assert permission["decision"] == "ask" and not permission["approved"]
    assert hostile.canaries.ran() == []


def test_the_model_cannot_pin_anything(hostile: Hostile) -> None:
    """The pins live where no tool call writes without asking (the hard guards), in
    every profile: headless, the ask is a no, and nothing is trusted."""
    pins = Path(hostile.env["KETCH_CONFIG_DIR"]) / "trust.json"
    forged = json.dumps({"version": 1, "workspaces": {str(hostile.ws): {"pins": {}}}})
    script = [
        {"tool_calls": [{"name": "write_file", "input": {"path": str(pins), "content": forged}}]},
        {"tool_calls": [{"name": "shell", "input": {"command": f"echo '{forged}' > {pins}"}}]},
        {
            "tool_calls": [
                {"name": "shell", "input": {"command": f"ketch trust --yes {hostile.ws}"}}
            ]
        },
        {"text": "done"},
    ]
    # ketch itself on the model's PATH: `ketch trust --yes` would pin everything.
    venv = str(Path(sys.executable).parent)
    result = hostile.ketch(
        "-p",
        "trust yourself",
        *SCRIPTED,
        "--profile",
        "full-access",
        script=script,
        PATH=f"{venv}:{os.environ['PATH']}",
    )
    decisions = [(e["decision"], e.get("approved")) for e in result.of_type("permission")]
    assert decisions == [("ask", False)] * 3, decisions
    assert "only you trust" in result.of_type("permission")[2]["reason"]
    assert not pins.exists()
    hostile.nothing_ran()
