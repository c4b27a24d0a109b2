"""A secret is known by what it is (issue 23, item 5), end to end through the real CLI.

The canary world's ``.git/config`` has a token in its remote URL, and ``notes/deploy.yaml``
a password: neither name looks secret. Through every path a model or a person has to a
file -- ``read_file``, the ``grep`` tool (by path and over the workspace), an ``@``
mention in the prompt, ``git remote -v`` -- and in every profile and mode (manual,
assisted, full-access; plan), neither value may reach what the model received (the
scripted provider's request log), the output, or the journal. Redaction is off, so the
classification itself must hold; a second run with redaction on shows the URL userinfo
redacted where a person approved the read.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from canaries import World
from runner import _config, _journal_bytes, _ketch_dirs, needs_sandbox

CONTENT_SECRETS = ("ws/.git/config", "ws/notes/deploy.yaml", "ws/config/settings.json")

TOOL_CALLS: list[dict[str, Any]] = [
    {"name": "read_file", "input": {"path": ".git/config"}},
    {"name": "read_file", "input": {"path": "notes/deploy.yaml"}},
    {"name": "grep", "input": {"pattern": "CANARY", "path": "."}},
    {"name": "grep", "input": {"pattern": "url", "path": ".git"}},
    {"name": "grep", "input": {"pattern": "CANARY", "path": ".git/config"}},
    {"name": "grep", "input": {"pattern": "api_key", "path": "config"}},
    {"name": "shell", "input": {"command": "git remote -v"}},
    {"name": "shell", "input": {"command": "cat .git/config"}},
    {"name": "shell", "input": {"command": "base64 notes/deploy.yaml"}},
]


def _run(
    world: World, *, profile: str, mode: str, sandbox: bool, redact: bool
) -> tuple[list[str], list[dict[str, Any]]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KETCH_")}
    env.update(_ketch_dirs(world, _config(sandbox, redact)))
    env.update(world.env())
    scratch = world.root / "ketch" / "script"
    scratch.mkdir(parents=True, exist_ok=True)
    script = [{"tool_calls": [{**call, "id": f"call_{i}"}]} for i, call in enumerate(TOOL_CALLS)]
    script.append({"text": "done"})
    (scratch / "script.json").write_text(json.dumps(script), encoding="utf-8")
    log = scratch / "requests.jsonl"
    log.unlink(missing_ok=True)
    env.update(
        KETCH_LOAD="ketch.testing.scripted_plugin",
        KETCH_SCRIPT=str(scratch / "script.json"),
        KETCH_SCRIPT_LOG=str(log),
    )
    argv = [sys.executable, "-m", "ketch", "-p", "look at @.git/config and @notes/deploy.yaml and @config/settings.json",
            "--provider", "scripted", "--output-format", "stream-json", "--profile", profile, "--mode", mode,
            "--max-iterations", str(len(TOOL_CALLS) + 2)]  # fmt: skip
    proc = subprocess.run(
        argv,
        cwd=world.workspace,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    texts = [proc.stdout, proc.stderr, log.read_text(encoding="utf-8") if log.exists() else ""]
    texts += [b.decode("utf-8", "replace") for b in _journal_bytes(env)]
    return texts, events


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize(
    ("profile", "mode", "sandbox"),
    [
        ("manual", "build", False),
        ("assisted", "build", False),
        ("full-access", "build", False),
        ("manual", "plan", False),
        ("assisted", "plan", False),
        pytest.param("assisted", "build", True, marks=needs_sandbox),
        pytest.param("full-access", "build", True, marks=needs_sandbox),
    ],
)
def test_secrets_in_innocent_files_never_reach_the_model(
    world: World, profile: str, mode: str, sandbox: bool
) -> None:
    texts, events = _run(world, profile=profile, mode=mode, sandbox=sandbox, redact=False)
    seen = [
        e for e in world.check(texts) if e.kind == "secret-seen" and e.target in CONTENT_SECRETS
    ]
    assert not seen, seen
    assert any(e.get("type") == "turn_end" for e in events)
    requests = texts[2]
    assert "example.invalid" in requests or "attached" in requests  # the calls did happen
    world.reset()


def test_the_grep_tool_skips_secrets_by_content_and_names_them(world: World) -> None:
    """Searching the workspace (the real loop in process, redaction off): the files
    holding credentials are left out and named, never shown."""
    from ketch.testing import Harness
    from ketch.testing.harness import patched_environ

    script = [
        {"tool_calls": [{"name": "grep", "input": {"pattern": "CANARY", "path": "."}, "id": "g1"}]},
        {"text": "done"},
    ]
    with patched_environ(world.env()):
        harness = Harness.create(
            world.root,
            script=script,
            config=_config(False, False),
            settings={"profile": "assisted"},
            env=world.env(),
        )
        harness.run("search")
    results = harness.of_type("tool_result")
    assert results and results[0].ok, results
    output = results[0].output
    for name in CONTENT_SECRETS:
        assert world.tokens[name] not in output, name
    assert "No matches" in output and "not shown" in output


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_with_redaction_the_url_userinfo_is_taken_out_where_a_person_approved(world: World) -> None:
    """full-access with an allow rule for .git/config: read_file shows it, and the
    redaction filter takes the token out of the URL (tool output, requests, journal)."""
    env_rule = '[permissions]\nallow = ["read(.git/config)"]\n'
    env = {k: v for k, v in os.environ.items() if not k.startswith("KETCH_")}
    env.update(_ketch_dirs(world, _config(False, True, env_rule)))
    env.update(world.env())
    scratch = world.root / "ketch" / "script"
    scratch.mkdir(parents=True, exist_ok=True)
    script = [
        {"tool_calls": [{"name": "read_file", "input": {"path": ".git/config"}, "id": "c1"}]},
        {"text": "done"},
    ]
    (scratch / "script.json").write_text(json.dumps(script), encoding="utf-8")
    log = scratch / "requests.jsonl"
    env.update(
        KETCH_LOAD="ketch.testing.scripted_plugin",
        KETCH_SCRIPT=str(scratch / "script.json"),
        KETCH_SCRIPT_LOG=str(log),
    )
    proc = subprocess.run(
        [sys.executable, "-m", "ketch", "-p", "go", "--provider", "scripted", "--output-format", "stream-json", "--profile", "full-access"],
        cwd=world.workspace, env=env, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL, check=False,
    )  # fmt: skip
    results = [json.loads(line) for line in proc.stdout.splitlines() if '"tool_result"' in line]
    assert results and results[0]["ok"], proc.stdout[-2000:]
    assert (
        "example.invalid" in results[0]["output"]
        and "[REDACTED url-password]" in results[0]["output"]
    )
    texts = [proc.stdout, proc.stderr, log.read_text(encoding="utf-8")] + [
        b.decode("utf-8", "replace") for b in _journal_bytes(env)
    ]
    assert not [e for e in world.check(texts) if e.kind == "secret-seen"]
    world.reset()


def test_world_has_the_content_canaries(world: World) -> None:
    config = (world.workspace / ".git" / "config").read_text(encoding="utf-8")
    assert world.tokens["ws/.git/config"] in config
    assert Path(world.workspace / "notes" / "deploy.yaml").is_file()


def test_deciding_opens_no_secret(world: World) -> None:
    """The votes themselves read no secret: an ignore file named on rg's command line
    that is a secret, or outside the workspace, is not loaded to enumerate the walk
    (the command asks for naming it anyway)."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from tests.policy.policy_kit import shell_call, snapshot

    from ketch.policy import combine_votes
    from ketch_guards.guards import vote as guards_vote
    from ketch_policy.decide import vote as policy_vote

    snap = snapshot(world.workspace, "assisted")
    for command in (
        f"rg --ignore-file={world.home}/.aws/credentials -- canary src",
        f"rg --ignore-file={world.outside}/victim.txt canary src",
        "rg --ignore-file=.env canary src",
    ):
        call = shell_call(command, world.workspace)
        vote = combine_votes([policy_vote(call, snap), guards_vote(call, snap)])
        assert vote.decision == "ask", command
    assert not world.check(), world.check()
