"""A hostile marketplace repository: its git configuration names a program for every
kind git has (filters, fsmonitor, hooks, textconv, pager, credential helper, ssh, an
``ext::`` transport, an include: tests/trust/hostile.py), and the person's own git
config defines a filter and a template hook the repository's files invoke on checkout.
Adding it (as a directory and through ``file://``), updating it, installing from it and
running a session afterwards run none of them; the controls show plain git does."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from ketch.testing import text
from tests.claude_plugins.conftest import HERE, MARKET, PluginCli, git, needs_git
from tests.trust.hostile import Canaries, arm_git

pytestmark = needs_git


@pytest.fixture
def hostile(cli: PluginCli) -> tuple[Path, Canaries]:
    """The test marketplace inside an armed repository (committed), and the person's
    HOME naming a filter and a template hook its files trigger on checkout."""
    repo = cli.tmp / "hostile"
    log = cli.tmp / "canary.log"
    script = arm_git(repo, log)
    shutil.copytree(HERE / "marketplace", repo, dirs_exist_ok=True)
    (repo / "marketplace-note.txt").write_text("checked out through a filter\n")
    git(repo, "add", "-A", env={"HOME": str(cli.home)})
    git(repo, "commit", "-q", "--no-verify", "-m", "catalog", env={"HOME": str(cli.home)})
    templates = cli.home / "templates" / "hooks"
    templates.mkdir(parents=True)
    (templates / "post-checkout").write_text(f"#!/bin/sh\nsh {script} template-post-checkout\n")
    (templates / "post-checkout").chmod(0o755)
    (cli.home / ".gitconfig").write_text(
        f'[filter "evil"]\n\tsmudge = sh {script} home-smudge\n\tclean = sh {script} home-clean\n'
        f"[init]\n\ttemplateDir = {cli.home / 'templates'}\n"
    )
    log.unlink(missing_ok=True)
    return repo, Canaries(log)


def test_the_controls_plain_git_runs_them(cli: PluginCli, hostile: tuple[Path, Canaries]) -> None:
    repo, canaries = hostile
    subprocess.run(
        ["git", "status"],
        cwd=repo,
        env={**os.environ, "HOME": str(cli.home)},
        capture_output=True,
        check=False,
    )
    assert "fsmonitor" in canaries.ran()
    canaries.reset()
    subprocess.run(
        ["git", "clone", "-q", repo.as_uri(), str(cli.tmp / "plain-clone")],
        cwd=cli.tmp,
        env={**os.environ, "HOME": str(cli.home), "GIT_CONFIG_NOSYSTEM": "1"},
        capture_output=True,
        check=False,
    )
    assert {"home-smudge", "template-post-checkout"} <= set(canaries.ran())


def test_adding_updating_and_installing_run_nothing(
    cli: PluginCli, hostile: tuple[Path, Canaries]
) -> None:
    repo, canaries = hostile
    # As a directory: read in place, no git run there at all.
    cli.ok("plugin", "marketplace", "add", str(repo))
    cli.ok("plugin", "marketplace", "update", MARKET)
    cli.ok("plugin", "install", f"commit-commands@{MARKET}", "--yes")
    cli.ok("plugin", "list")
    assert canaries.ran() == []
    cli.ok("plugin", "uninstall", "commit-commands")
    cli.ok("plugin", "marketplace", "remove", MARKET)
    # Through file://: cloned by ketch's own git, with the person's filter and template hook
    # switched off too; updated (a fresh clone) and installed from.
    url = repo.as_uri()
    cli.ok("plugin", "marketplace", "add", url)
    clone = Path(
        json.loads(cli.ok("plugin", "marketplace", "list", "--json").stdout)[0]["installLocation"]
    )
    assert (clone / "marketplace-note.txt").read_text() == "checked out through a filter\n"
    cli.ok("plugin", "marketplace", "update")
    cli.ok("plugin", "install", f"feature-dev@{MARKET}", "--yes")
    cli.ok("plugin", "update", f"feature-dev@{MARKET}")
    assert canaries.ran() == []
    assert not (clone / ".git").exists()  # nothing for anybody's git to run there later
    # ...and what a person does next: a session in the workspace.
    cli.turn("hi", [text("ok")])
    assert canaries.ran() == []


def test_a_plugin_source_that_is_a_hostile_repository(
    cli: PluginCli, hostile: tuple[Path, Canaries]
) -> None:
    """A plugin whose source is a git URL (the armed repository, ``git-subdir``): the
    clone runs none of its programs nor the person's."""
    repo, canaries = hostile
    market = cli.tmp / "outer"
    (market / ".claude-plugin").mkdir(parents=True)
    (market / ".claude-plugin" / "marketplace.json").write_text(
        json.dumps(
            {
                "name": "outer",
                "owner": {"name": "t"},
                "plugins": [
                    {
                        "name": "hookify",
                        "source": {
                            "source": "git-subdir",
                            "url": repo.as_uri(),
                            "path": "plugins/hookify",
                        },
                    }
                ],
            }
        )
    )
    cli.ok("plugin", "marketplace", "add", str(market))
    installed = cli.ok("plugin", "install", "hookify@outer", "--yes")
    assert "hook PreToolUse #1.1" in installed.stdout
    assert canaries.ran() == []
    root = cli.data / "plugins" / "hookify@outer" / "hookify"
    assert (root / "hooks" / "pretooluse.py").is_file() and not (root / ".git").exists()
