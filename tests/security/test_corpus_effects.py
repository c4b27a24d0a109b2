"""The hand-written corpus through the real CLI, judged by effects.

Every command of :mod:`corpus` is one ``shell`` call of a scripted model in one
``ketch -p`` session among canaries. Nobody can approve in ``-p``, so what runs is
exactly what the engine allowed; :func:`runner.run_cli` runs it for real and reports
every canary read, changed or contacted, and every process left running; then the
*after* phase (:mod:`phases`: the person's git in every repository, the configured hooks,
new sessions with and without ``ketch trust``) and every canary checked again. Under
``assisted`` (with the sandbox, and without it: proof alone must hold) and
``full-access`` with the sandbox: no effect.

Also here: ordinary read-only work runs without asking under ``assisted`` and gives the
right output -- proof that the engine does not simply ask for everything.
"""

from __future__ import annotations

import pytest
from canaries import World
from corpus import CASES, classes, commands, plant
from runner import CONFIGS, needs_sandbox, run_cli

ISSUE_CLASSES = {
    "issue:builtin-evaluates", "issue:unwalked-words", "issue:steering", "issue:option-grammar", "issue:wrappers",
    "issue:globs", "issue:runtime-words", "issue:planted-config", "issue:process-env", "issue:sandbox",
    "issue:file-selection", "issue:secret-by-content", "issue:outlives",
}  # fmt: skip
# The shell cases of the security research notes (the others are about files, the web,
# storage or crypto, and are tested where those live).
RESEARCH_CASES = {
    f"case:{n}" for n in (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 16, 17, 19, 20, 27, 28)
}


def test_the_corpus_covers_every_class() -> None:
    assert classes() >= ISSUE_CLASSES | RESEARCH_CASES
    assert len(CASES) >= 150
    assert len({c.command for c in CASES}) == len(CASES), "no duplicates"


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize(("profile", "sandbox"), CONFIGS)
def test_the_corpus_has_no_effect(world: World, profile: str, sandbox: bool) -> None:
    plant(world.workspace, world.outside)
    report = run_cli(world, commands(world), profile=profile, sandbox=sandbox, after=True)
    assert not report.effects, report.describe()
    assert report.count("invalid") == 0, [
        o.text for o in report.outcomes if o.decision == "invalid"
    ]
    ran = [o for o in report.outcomes if o.ran]
    assert all(o.decision == "allow" for o in ran)
    if profile == "full-access":
        assert len(ran) >= 20, (
            "full-access with the sandbox runs the harmless-looking part of the corpus"
        )


ORDINARY = {
    "ls": "README.md",
    "ls -la src": "app.py",
    "cat README.md": "canary project",
    "head -n 1 src/app.py": "print('hello')",
    "wc -l README.md src/app.py": "2 total",
    "rg -n hello src": "src/app.py:1:print('hello')",
    "git --no-optional-locks status --short": "",
    "git --no-optional-locks status": "On branch main",
    "GIT_OPTIONAL_LOCKS=0 git diff": "",
    "git log --oneline -1": "canary",
    "git show --stat HEAD": "README.md",
    "grep -n canary README.md": "1:# canary project",
    "cat src/*.py | wc -c": "15",
    "git log -p -1 -- src/app.py": "+print('hello')",
    # recursive readers and awk, proven by their own rules (issue 23, item 4)
    "grep -rn hello src": "src/app.py:1:print('hello')",
    "find . -name '*.py'": "./src/app.py",
    "ls -R src": "app.py",
    "awk '{print $1}' README.md": "#",
    "awk 'END {print NR}' src/app.py": "1",
    "git grep -n hello": "src/app.py:1:print('hello')",
}


@pytest.mark.slow
@pytest.mark.parametrize(
    "sandbox",
    [pytest.param(True, marks=needs_sandbox, id="sandbox"), pytest.param(False, id="no-sandbox")],
)
def test_ordinary_read_only_work_is_proven_and_runs(world: World, sandbox: bool) -> None:
    """Under assisted, with nobody to approve: every command of a coding session's
    reading runs, with the output it should have, and touches no canary (in the
    person's repository, whose hooks directory and include they trusted)."""
    report = run_cli(world, list(ORDINARY), profile="assisted", sandbox=sandbox, trust=True)
    for outcome in report.outcomes:
        assert outcome.decision == "allow", (outcome.text, outcome.reason)
        assert outcome.ran and outcome.ok, (outcome.text, outcome.output)
        assert ORDINARY[outcome.text] in outcome.output, (outcome.text, outcome.output)
    assert not report.effects, report.describe()


@pytest.mark.slow
@pytest.mark.parametrize(
    "sandbox",
    [pytest.param(True, marks=needs_sandbox, id="sandbox"), pytest.param(False, id="no-sandbox")],
)
def test_git_status_refreshes_the_index_so_it_is_proven_where_git_is_read_only(
    world: World, sandbox: bool
) -> None:
    """Plain ``git status`` writes .git/index (its stat cache) when it can take the lock.
    The shell tool runs every command with GIT_OPTIONAL_LOCKS=0 (and says so in its
    access), so git only reads: proven with and without the sandbox, and the effect
    check confirms nothing under .git changed."""
    report = run_cli(
        world, ["git status", "git diff"], profile="assisted", sandbox=sandbox, trust=True
    )
    decisions = [o.decision for o in report.outcomes]
    assert decisions == ["allow", "allow"], [o.reason for o in report.outcomes]
    assert "On branch main" in report.outcomes[0].output
    assert not report.effects, report.describe()


@pytest.mark.slow
@needs_sandbox
def test_rg_over_the_whole_workspace_is_proven_in_the_sandbox_only(world: World) -> None:
    """rg skips hidden files, but a recursive read of a workspace holding a secret is
    proven only where the sandbox masks it; grep -r (which reads .env) the same."""
    boxed = run_cli(world, ["rg -n hello", "grep -rn hello ."], profile="assisted", sandbox=True)
    assert [o.decision for o in boxed.outcomes] == ["allow", "allow"]
    assert all("print('hello')" in o.output for o in boxed.outcomes)
    assert not boxed.effects, boxed.describe()
    world.reset()
    bare = run_cli(world, ["grep -rn hello ."], profile="assisted", sandbox=False)
    assert bare.outcomes[0].decision == "ask" and ".env" in bare.outcomes[0].reason
