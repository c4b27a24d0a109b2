"""ketch_git_kit by effects: a repository naming a program for every kind git has, and
a canary log that shows whether any ran.

Each test first proves the fixture armed (plain git, as a person or an IDE runs it,
does run the programs), then shows that git run through the kit runs none of them —
for the status ketch takes at start-up and for everything else a plugin may run.
"""

from __future__ import annotations

import os
import socket
import stat
import threading
from pathlib import Path

import pytest

from ketch_git_kit import repository_programs, run_git
from tests.trust.hostile import Canaries, arm_git, git

pytestmark = pytest.mark.skipif(not os.path.exists("/usr/bin/git"), reason="needs git")


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, Canaries]:
    ws = tmp_path / "ws"
    log = tmp_path / "canary.log"
    arm_git(ws, log)
    return ws, Canaries(log)


def _env(ws: Path) -> dict[str, str]:
    return {"PATH": os.environ["PATH"], "HOME": str(ws.parent)}


def test_plain_git_runs_the_repositorys_programs(repo: tuple[Path, Canaries]) -> None:
    """The control: without ketch's switches, these very commands run the programs."""
    ws, canaries = repo
    git(ws, "status", "--porcelain", check=False)
    assert {"fsmonitor", "clean", "included-clean"} <= set(canaries.ran())
    canaries.reset()
    git(ws, "diff", check=False)
    assert "external-diff" in canaries.ran()
    canaries.reset()
    git(ws, "log", "-p", "-1", check=False)
    assert {"gpg", "textconv"} & set(canaries.ran())
    canaries.reset()
    git(ws, "checkout", "-q", "-b", "other", check=False)
    assert "hook-post-checkout" in canaries.ran()
    canaries.reset()
    git(ws, "fetch", "origin", check=False)
    assert "transport" in canaries.ran()
    canaries.reset()
    git(ws, "fetch", "viassh", check=False)
    assert "ssh" in canaries.ran()


@pytest.mark.parametrize(
    "args",
    [
        ["status", "--porcelain=v2", "--branch", "-z", "--untracked-files=normal"],
        ["status"],
        ["diff"],
        ["diff", "HEAD"],
        ["log", "-p", "-2"],
        ["show", "HEAD"],
        ["blame", "a.txt"],
        ["checkout", "-q", "-b", "ketch-branch"],
        ["stash", "list"],
        ["fetch", "origin"],
        ["fetch", "viassh"],
        ["ls-remote", "origin"],
        ["commit", "-q", "-am", "through the kit"],
        ["checkout", "-q", "HEAD~1", "--", "b.md"],
    ],
)
def test_git_through_the_kit_runs_none_of_them(
    repo: tuple[Path, Canaries], args: list[str]
) -> None:
    ws, canaries = repo
    run = run_git(args, ws, environ={**_env(ws), **_hostile_environment(ws)})
    assert canaries.ran() == [], f"git {' '.join(args)} ran {canaries.ran()}: {run}"


def _hostile_environment(ws: Path) -> dict[str, str]:
    """What a caller's environment might carry: none of it may reach ketch's git."""
    script = ws / "tools" / "canary.sh"
    return {
        "GIT_EXTERNAL_DIFF": f"sh {script} env-external-diff",
        "GIT_SSH_COMMAND": f"sh {script} env-ssh",
        "GIT_PAGER": f"sh {script} env-pager",
        "GIT_CONFIG_PARAMETERS": f"'core.fsmonitor=sh {script} env-fsmonitor'",
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "core.pager",
        "GIT_CONFIG_VALUE_0": f"sh {script} env-pager2",
        "GIT_ASKPASS": f"sh {script} env-askpass",
    }


def test_the_status_is_still_right(repo: tuple[Path, Canaries]) -> None:
    ws, canaries = repo
    run = run_git(["status", "--porcelain"], ws, environ=_env(ws))
    assert run.ok, run.reason()
    lines = run.stdout.decode().splitlines()
    assert " M a.txt" in lines and " M b.md" in lines
    assert canaries.ran() == []


def test_a_git_planted_in_the_workspace_is_never_the_one_run(
    repo: tuple[Path, Canaries], tmp_path: Path
) -> None:
    ws, canaries = repo
    planted = ws / "bin" / "git"
    planted.parent.mkdir()
    planted.write_text(f"#!/bin/sh\necho planted-git >> {canaries.log}\n")
    planted.chmod(planted.stat().st_mode | stat.S_IXUSR)
    env = {**_env(ws), "PATH": f"{ws / 'bin'}:bin:.:{os.environ['PATH']}"}
    run = run_git(["status"], ws, environ=env)
    assert run.ok and canaries.ran() == []
    run = run_git(["status"], ws / "bin", environ={**env, "PATH": f"bin:{os.environ['PATH']}"})
    assert canaries.ran() == []


def test_a_program_included_from_a_workspace_file_later_is_switched_off(
    repo: tuple[Path, Canaries],
) -> None:
    """The included file changes after ketch first looked: the next run reads it anew."""
    ws, canaries = repo
    assert run_git(["status"], ws, environ=_env(ws)).ok
    script = ws / "tools" / "canary.sh"
    with open(ws / ".gitconfig-extra", "a") as extra:
        extra.write(f'[filter "late"]\n\tclean = sh {script} late-clean\n\trequired = true\n')
    with open(ws / ".gitattributes", "a") as attributes:
        attributes.write("*.py filter=late\n")
    (ws / "c.py").write_text("x = 1\n")
    run_git(["add", "c.py"], ws, environ=_env(ws))
    run_git(["status"], ws, environ=_env(ws))
    assert canaries.ran() == []
    git(ws, "status", check=False)
    assert "late-clean" in canaries.ran()  # the control


def test_fetch_over_http_contacts_nothing_and_asks_no_helper(
    repo: tuple[Path, Canaries],
) -> None:
    ws, canaries = repo
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    server.settimeout(1)
    contacted: list[bool] = []

    def accept() -> None:
        try:
            conn, _ = server.accept()
            contacted.append(True)
            conn.close()
        except OSError:
            pass

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    port = server.getsockname()[1]
    git(ws, "remote", "add", "web", f"http://127.0.0.1:{port}/repo.git")
    run = run_git(["fetch", "web"], ws, environ=_env(ws), timeout=5)
    server.close()
    thread.join(4)
    assert not run.ok
    assert contacted == [] and canaries.ran() == []


def test_the_repositorys_programs_are_listed(repo: tuple[Path, Canaries]) -> None:
    ws, canaries = repo
    found = repository_programs(ws, _env(ws))
    keys = {p.key.lower() for p in found.programs}
    assert {
        "filter.evil.clean",
        "filter.evil.smudge",
        "diff.evil.textconv",
        "diff.evil.command",
        "core.fsmonitor",
        "core.pager",
        "pager.log",
        "core.hookspath",
        "core.sshcommand",
        "credential.helper",
        "gpg.program",
        "remote.origin.url",
        "include.path",
        "filter.inc.clean",  # from the included workspace file
    } <= keys
    included = next(p for p in found.programs if p.key == "filter.inc.clean")
    assert included.origin == str(ws / ".gitconfig-extra")
    assert {h.name for h in found.hooks} >= {"pre-commit", "post-checkout"}
    assert all(h.parent == ws / ".husky" for h in found.hooks)
    assert canaries.ran() == []  # listing ran nothing either


def test_the_listing_notices_a_change_in_a_file_it_depends_on(tmp_path: Path) -> None:
    ws = tmp_path / "plain"
    ws.mkdir()
    git(ws, "init", "-q")
    git(ws, "config", "include.path", "../later.cfg")  # names a file that is not there yet
    assert [p.key for p in repository_programs(ws, _env(ws)).programs] == ["include.path"]
    (ws / "later.cfg").write_text("[core]\n\tfsmonitor = /bin/true\n")
    keys = [p.key for p in repository_programs(ws, _env(ws)).programs]
    assert "core.fsmonitor" in keys
    hook = ws / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\n")
    hook.chmod(0o755)
    assert [h.name for h in repository_programs(ws, _env(ws)).hooks] == ["pre-commit"]


def test_outside_a_repository_there_is_nothing(tmp_path: Path) -> None:
    found = repository_programs(tmp_path, _env(tmp_path))
    assert not found and found.repository is None
    run = run_git(["status"], tmp_path, environ=_env(tmp_path))
    assert not run.ok and "not a git repository" in run.stderr.decode()
