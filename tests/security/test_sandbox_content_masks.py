"""The sandbox masks secrets known by content, with the same classification as the
guards (issue 23, item 5): files holding credentials read as empty inside it, a git
config whose remote carries a token is shown without it (git keeps working), and a
file that starts holding a secret is masked from the next command on."""

from __future__ import annotations

import subprocess
from pathlib import Path

from canaries import World
from runner import needs_sandbox


def _in_sandbox(world: World, script: str) -> tuple[str, list[str]]:
    from ketch_sandbox import wrap

    reports: list = []
    argv = wrap(["sh", "-c", script], world.workspace, network=False, reporters=reports)
    result = subprocess.run(
        argv, cwd=world.workspace, capture_output=True, text=True, timeout=60, check=False
    )
    notes = [text for report in reports if (text := report(True))]
    return result.stdout + result.stderr, notes


@needs_sandbox
def test_secrets_by_content_are_masked_and_git_still_works(world: World) -> None:
    output, notes = _in_sandbox(
        world,
        "cat notes/deploy.yaml config/settings.json .git/config; git remote -v; git log --oneline -1",
    )
    for name in ("ws/notes/deploy.yaml", "ws/config/settings.json", "ws/.git/config"):
        assert world.tokens[name] not in output, name
    assert "origin\thttps://canary@example.invalid/canary.git (fetch)" in output
    assert "canary" in output.splitlines()[-1]  # git log still works
    assert any("notes/deploy.yaml is masked" in n for n in notes), notes
    assert not world.check([output]), world.check([output])


@needs_sandbox
def test_a_file_that_starts_holding_a_secret_is_masked_from_then_on(world: World) -> None:
    notes_file = world.workspace / "NOTES.txt"
    notes_file.write_text("nothing here\n", encoding="utf-8")
    first, _ = _in_sandbox(world, "cat NOTES.txt")
    assert "nothing here" in first
    token = world.tokens["ws/notes/deploy.yaml"]
    with open(notes_file, "w", encoding="utf-8") as handle:  # the same file, written in place
        handle.write(f"db_password = {token}\n")
    second, notes = _in_sandbox(world, "cat NOTES.txt")
    assert token not in second
    assert any("NOTES.txt is masked" in n for n in notes), notes
    Path(notes_file).unlink()
