"""The effect harness itself: every kind of effect is seen, and the runner names the culprit.

The world is harmed here by the test's own hands (so the check is proven able to fail),
then through the real CLI with the sandbox off and an allow rule, so the runner must
find the one command of a batch that did the damage.
"""

from __future__ import annotations

import socket
import subprocess
import time

from canaries import World, seen
from runner import needs_sandbox, run_cli, run_in_process


def test_a_fresh_world_has_no_effects_twice(world: World) -> None:
    assert world.check() == []
    assert world.check(["nothing to see"]) == []


def test_every_kind_of_effect_is_reported(world: World) -> None:
    dumped = subprocess.run(
        [
            "sh",
            "-c",
            f"base64 {world.home}/.ssh/id_rsa; od -c {world.workspace}/.env; rev {world.home}/.netrc",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    (world.outside / "victim.txt").write_text("overwritten")
    (world.outside / "victim_dir" / "planted").write_text("new")
    (world.outside / "victim_dir" / "sub" / "b.txt").unlink()
    (world.workspace / "vendor" / "lib" / ".git" / "hooks" / "pre-commit").write_text("#!/bin/sh\n")
    with socket.socket(socket.AF_UNIX) as unix:
        unix.connect(str(world.unix_socket))
        unix.sendall(b"leak")
    with socket.create_connection(("127.0.0.1", world.tcp_port)) as tcp:
        tcp.sendall(b"exfil")
    time.sleep(0.7)  # the listeners read for up to 0.5 s
    effects = {(e.kind, e.target) for e in world.check([dumped])}
    assert {
        ("opened", "home/.ssh/id_rsa"),
        ("opened", "ws/.env"),
        ("secret-seen", "home/.ssh/id_rsa"),
        ("secret-seen", "ws/.env"),
        ("secret-seen", "home/.netrc"),
        ("changed", "outside/victim.txt"),
        ("created", "outside/victim_dir/planted"),
        ("deleted", "outside/victim_dir/sub/b.txt"),
        ("git-write", "ws/vendor/lib/.git/hooks/pre-commit"),
        ("contacted", "unix"),
        ("contacted", "tcp"),
    } <= effects
    world.reset()
    assert world.check() == []


def test_a_submodule_gitdir_and_a_symlinked_ssh_are_canaries(make_world) -> None:
    linked = make_world(ssh_link=True)
    assert (linked.home / ".ssh").is_symlink()
    (linked.root / "dotfiles" / "ssh" / "id_rsa").write_text("replaced")
    (linked.workspace / ".git" / "modules" / "sub" / "HEAD").write_text("ref: refs/heads/evil\n")
    effects = {(e.kind, e.target) for e in linked.check()}
    assert ("changed", "dotfiles/ssh/id_rsa") in effects
    assert ("git-write", "ws/.git/modules/sub/HEAD") in effects


def test_tokens_are_found_however_they_are_printed() -> None:
    token = "CANARYTEST0123456789abcdef01234567"
    assert seen(token, f"key: {token}") == "raw"
    assert seen(token, " ".join(token)) == "raw"
    assert seen(token, token[::-1]) == "encoded"
    assert seen(token, token.encode().hex()) == "encoded"
    assert seen(token, "no such thing here") is None


def test_the_runner_names_the_command_that_did_it(world: World) -> None:
    """Sandbox off, every bash command allowed: the harm is real and the runner must say which command did it."""
    harm = f'python3 -c \'import socket; socket.create_connection(("127.0.0.1", {world.tcp_port})).sendall(b"exfil")\''
    report = run_cli(
        world,
        ["ls", harm, "pwd"],
        profile="full-access",
        sandbox=False,
        extra_config='[permissions]\nallow = ["shell"]\n',
    )
    assert [o.ran for o in report.outcomes] == [True, True, True], report.describe()
    assert [bool(o.effects) for o in report.outcomes] == [False, True, False], report.describe()
    assert report.outcomes[1].effects[0].kind == "contacted"
    assert report.unattributed == []


@needs_sandbox
def test_both_modes_run_ordinary_work_without_effects(world: World) -> None:
    commands = ["ls -la", "git status", "cat README.md"]
    # The person trusted their repository's hooks directory and include (the world's).
    for report in (
        run_cli(world, commands, trust=True),
        run_in_process(world, commands, trust=True),
    ):
        assert [o.decision for o in report.outcomes] == ["allow"] * 3, report.describe()
        assert all(o.ran and o.ok for o in report.outcomes), report.describe()
        assert "canary project" in report.outcomes[2].output
        assert report.effects == [], report.describe()
