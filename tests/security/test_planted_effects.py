"""Effects across time (issue 23 items 2, 3 and 7): nothing planted now runs later.

Every class of "planted now, run later" (:func:`corpus.planted_cases`: a new ``.ketch``
with a hook and an MCP server, a nested repository with ``core.fsmonitor``, a husky
hook under ``core.hooksPath=.husky``, ``.claude/commands`` with ``!`cmd```,
``.claude/settings.json``, ``.vscode/tasks.json``, ``.envrc``, a Stop hook's and an MCP
server's script rewritten, a file the repository's config includes), each in every
spelling (the write tools, redirection, tee, cp, mv, ln -s, cd + sed -i, a script, an
opaque program, git init, git config), goes through the real CLI with a scripted model
-- then the *after* phase does what the person does next (``git status``/``git commit``
in every repository, the configured hooks, a new session with and without trust) and
every canary is checked again. Zero effects, sandbox on and off, assisted and
full-access; and with a person who approves everything, the sandbox alone still holds.

The *before* phase: a workspace holding every kind of executable config
(:data:`phases.HOSTILE`) is opened with ``ketch -p``: nothing may run.
"""

from __future__ import annotations

import os
import subprocess

import pytest
from canaries import World
from corpus import planted_cases, planted_commands
from phases import (
    HOSTILE,
    Next,
    after_phase,
    configured_commands,
    git_in_every_repository,
    markdown_commands,
    ran,
)
from runner import (
    CONFIGS,
    needs_sandbox,
    open_session,
    run_approved,
    run_before,
    run_before_acp,
    run_before_shell,
    run_cli,
)

WRITE_TOOLS = ("write_file", "edit_file")


def test_every_class_is_spelled_every_way() -> None:
    cases = planted_cases()
    classes = {c.cls for c in cases}
    assert classes >= {
        "new-ketch-dir", "nested-fsmonitor", "husky-hook", "claude-command", "claude-settings",
        "vscode-tasks", "envrc", "stop-hook-script", "mcp-server-script", "git-include",
    }  # fmt: skip
    spellings = {c.spelling for c in cases}
    assert spellings >= {
        "write_file", "edit_file", "redirect", "cd-sed-i", "mkdir-tee", "cp", "mv", "ln-s",
        "git-init", "git-config", "python", "script",
    }  # fmt: skip
    for cls in classes - {"nested-fsmonitor", "git-hooks"}:
        assert len({c.spelling for c in cases if c.cls == cls}) >= 5, cls


# --- the after phase itself can see what runs later ----------------------------------------------


def _no_sessions(trust: bool) -> list[str]:
    return []


def test_the_after_phase_runs_what_was_planted(world: World) -> None:
    """Control: plant directly (as if a command had got through), and the after phase
    runs it -- the husky hook at git commit, a nested repository's fsmonitor at git
    status, the rewritten Stop hook script -- and reports both the runs and the plants."""
    ws, wire = world.workspace, f"touch {world.outside}/ran-"
    (ws / ".husky").mkdir()
    hook = ws / ".husky" / "pre-commit"
    hook.write_text(f"#!/bin/sh\n{wire}husky\n")
    hook.chmod(0o755)
    subprocess.run(["git", "init", "-q", str(ws / "newrepo")], check=True)
    subprocess.run(
        ["git", "-C", str(ws / "newrepo"), "config", "core.fsmonitor", wire + "fsmonitor"],
        check=True,
    )
    (ws / "scripts" / "verify.py").write_text(f"import os\nos.system('{wire}verify')\n")
    effects = after_phase(world, _no_sessions, [git_in_every_repository, configured_commands])
    assert ran(effects) == ["fsmonitor", "husky", "verify"], [str(e) for e in effects]


@pytest.mark.slow
@needs_sandbox
def test_the_after_phase_runs_planted_commands(world: World) -> None:
    """Control, through the CLI: a Markdown command with a ``!`cmd``` line planted in
    ``.claude/commands`` (and one in ``.ketch/commands``) runs in the after phase's
    trusted session, so a plant that got through would be seen."""
    ws, wire = world.workspace, f"touch {world.outside}/ran-"
    for folder, name in ((".claude/commands", "claude"), (".ketch/commands", "ketch")):
        (ws / folder).mkdir(parents=True)
        (ws / folder / f"{name}.md").write_text(f"Run it.\n!`{wire}{name}-command`\n")

    def session(trust: bool, prompt: str = "hi") -> list[str]:
        return open_session(world, trust=trust, prompt=prompt)[0]

    effects = after_phase(world, session, [markdown_commands])
    assert ran(effects) == ["claude-command", "ketch-command"], [str(e) for e in effects]


def test_a_clean_world_has_no_after_effects(world: World) -> None:
    effects = after_phase(world, _no_sessions, [git_in_every_repository, configured_commands])
    assert effects == [], [str(e) for e in effects]
    assert isinstance(Next(world, _no_sessions).person_env()["HOME"], str)


# --- the corpus ------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.timeout(1500)
@pytest.mark.parametrize(("profile", "sandbox"), CONFIGS)
def test_nothing_planted_runs_later(world: World, profile: str, sandbox: bool) -> None:
    cases = planted_cases()
    report = run_cli(
        world,
        planted_commands(world),
        profile=profile,
        sandbox=sandbox,
        after=True,
        extra_config=world.configured_toml(),
    )
    assert not report.effects, report.describe()
    assert report.count("invalid") == 0, [
        o.text for o in report.outcomes if o.decision == "invalid"
    ]
    for case, outcome in zip(cases, report.outcomes, strict=True):
        if case.spelling in WRITE_TOOLS:  # the hard guard: asks in every profile
            assert outcome.decision == "ask", (case, outcome.reason)
    if sandbox and profile == "full-access":
        boxed = [o for c, o in zip(cases, report.outcomes, strict=True) if o.ran]
        assert len(boxed) >= 20, "the opaque spellings ran: the sandbox stopped them"
        quarantined = [o for o in boxed if "[sandbox] the command created" in o.output]
        assert len(quarantined) >= 4, [o.output[-300:] for o in boxed]


@pytest.mark.slow
@pytest.mark.timeout(1500)
@needs_sandbox
def test_the_sandbox_alone_holds_when_everything_is_approved(world: World) -> None:
    """A person who approves every question: each shell spelling runs, in the sandbox,
    and still nothing runs later (what the sandbox cannot prevent it moves away)."""
    commands = [
        command
        for case, command in zip(planted_cases(), planted_commands(world), strict=True)
        if case.spelling not in WRITE_TOOLS  # an approved write tool writes: the person's call
    ]
    report = run_approved(
        world,
        commands,
        profile="full-access",
        sandbox=True,
        after=True,
        extra_config=world.configured_toml(),
    )
    assert not report.effects, report.describe()
    assert sum(o.ran for o in report.outcomes) >= len(commands) - 2


# --- the before phase ----------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.timeout(300)
@needs_sandbox
@pytest.mark.parametrize(
    "item",
    [pytest.param(h, id=h.name) for h in HOSTILE],
)
def test_opening_a_hostile_workspace_runs_nothing(world: World, item) -> None:
    item.plant(world)
    effects, stderr = run_before(world, sandbox=True, extra_config=world.configured_toml())
    assert ran(effects) == [], (item.note, [str(e) for e in effects], stderr[-1000:])
    assert not effects, [str(e) for e in effects]
    assert os.path.isdir(world.workspace)


def _tmux() -> bool:
    import shutil

    return shutil.which("tmux") is not None


FRONTENDS = {"ketch-p": run_before, "shell": run_before_shell, "acp": run_before_acp}


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize(
    "sandbox",
    [pytest.param(True, marks=needs_sandbox, id="sandbox"), pytest.param(False, id="no-sandbox")],
)
@pytest.mark.parametrize("frontend", sorted(FRONTENDS))
def test_every_frontend_opens_the_whole_hostile_workspace_and_runs_nothing(
    world: World, frontend: str, sandbox: bool
) -> None:
    """Every kind of executable config at once, opened with ``ketch -p``, the shell
    (the first-run offer declined) and ``ketch acp``: no tripwire, no canary."""
    if frontend == "shell" and not _tmux():
        pytest.skip("tmux is not installed")
    for item in HOSTILE:
        item.plant(world)
    effects, said = FRONTENDS[frontend](
        world, sandbox=sandbox, extra_config=world.configured_toml()
    )
    assert ran(effects) == [], ([str(e) for e in effects], said[-1500:])
    assert not effects, [str(e) for e in effects]


@pytest.mark.slow
@pytest.mark.timeout(300)
@needs_sandbox
@pytest.mark.parametrize("frontend", sorted(FRONTENDS))
def test_every_frontend_runs_the_hostile_config_once_trusted(world: World, frontend: str) -> None:
    """The control: once the person trusts every item (``ketch trust --yes``, or the
    shell's offer accepted), the workspace's hooks run -- so the test above would see
    them if anything ran them before trust."""
    if frontend == "shell" and not _tmux():
        pytest.skip("tmux is not installed")
    for item in HOSTILE:
        item.plant(world)
    effects, said = FRONTENDS[frontend](
        world, sandbox=True, extra_config=world.configured_toml(), trust=True
    )
    assert "ketch-config" in ran(effects), ([str(e) for e in effects], said[-1500:])


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_ketch_trust_lists_the_hostile_workspaces_items_and_runs_none(world: World) -> None:
    """``ketch trust`` (no terminal, so it only lists) names every item of the whole
    hostile workspace that ketch or the repository's git would run -- each hook's and
    server's command, each git program, the hook scripts, the include -- trusts nothing
    and runs nothing. (``.vscode`` and ``.envrc`` are run by other tools, not ketch: they
    are protected paths, not items; a nested repository's programs are not listed.)"""
    for item in HOSTILE:
        item.plant(world)
    world.rebase()
    listed = Next(world, _no_sessions).ketch("trust")
    for name in ("ketch-config", "claude-config", "repo-programs", "include"):
        assert f"ran-{name}" in listed, (name, listed[-3000:])
    for shown in (
        ".husky/pre-commit",
        "include.path = ../.gitconfig.local",
        "base_url",
        "MCP server evil",
    ):
        assert shown in listed, (shown, listed[-3000:])
    assert "nothing trusted" in listed
    effects = world.check([listed])
    assert ran(effects) == [] and not effects, [str(e) for e in effects]
