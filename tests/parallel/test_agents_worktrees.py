"""Subagents in worktrees of their own, through the real command line: two run side by
side on the same file without touching each other's files or the person's; their
results carry their diffs; the parent merges what it keeps with ``worktree_merge``,
which only runs once someone approves it (here ``--permission-prompt-command``), and a
second, conflicting merge changes nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ketch.testing import call, calls, text
from tests.parallel.conftest import Ketch, clean, git, needs_git, tree_digest

pytestmark = needs_git


ASSISTED = ("--provider", "scripted", "--output-format", "stream-json", "--profile", "assisted")


def when(marker: str, step: dict[str, Any]) -> dict[str, Any]:
    return {**step, "when": marker}


def agent(prompt: str, **extra: Any) -> tuple[str, dict[str, Any]]:
    return (
        "agent",
        {"description": prompt[:20], "prompt": prompt, "isolation": "worktree", **extra},
    )


def results(request: dict[str, Any]) -> list[str]:
    return [p["output"] for p in request["messages"][-1]["parts"] if p["type"] == "tool_result"]


def parent_requests(result: Any) -> list[dict[str, Any]]:
    out = []
    for request in result.requests:
        first = next(m for m in request["messages"] if m["role"] == "user")
        if "PARENT" in "".join(p.get("text", "") for p in first["parts"]):
            out.append(request)
    return out


def edit(marker: str, word: str) -> list[dict[str, Any]]:
    return [
        when(marker, call("read_file", {"path": "a.txt"})),
        when(
            marker,
            {
                **call("write_file", {"path": "a.txt", "content": f"one\n{word}\nthree\n"}),
                "delay": 0.5,
            },
        ),
        when(marker, call("read_file", {"path": "a.txt"})),
        when(marker, text(f"{word} written")),
    ]


def test_parallel_subagents_in_worktrees_return_diffs_and_the_parent_merges_with_approval(
    ketch: Ketch, repo: Path, tmp_path: Path
) -> None:
    approver = tmp_path / "approve.sh"
    asked = tmp_path / "asked.jsonl"
    approver.write_text(
        f'#!/bin/sh\ncat >> {asked}\necho >> {asked}\necho \'{{"decision": "allow"}}\'\n'
    )
    approver.chmod(0o755)
    before = tree_digest(repo)
    script = [
        when("PARENT", calls(agent("TASK-A make line 2 AAA"), agent("TASK-B make line 2 BBB"))),
        *edit("TASK-A", "AAA"),
        *edit("TASK-B", "BBB"),
    ]
    # The parent merges the first child's worktree: its name is only known from the
    # result, so the script is played in two runs: first the agents (and an end) ...
    first = ketch(
        "-p",
        "PARENT go",
        *ASSISTED,
        "--permission-prompt-command",
        str(approver),
        script=[*script, when("PARENT", text("both done"))],
    )
    clean(first)
    assert first.returncode == 0, first.stderr[-2000:]
    (answers,) = [results(r) for r in parent_requests(first) if results(r)]
    assert len(answers) == 2
    names = []
    for answer, word, other in zip(answers, ("AAA", "BBB"), ("BBB", "AAA"), strict=True):
        assert "It worked in its own git worktree" in answer
        assert f"+{word}" in answer and "-two" in answer and other not in answer
        assert "worktree_merge" in answer
        names.append(answer.split("git worktree '", 1)[1].split("'", 1)[0])
    # Each child read the committed file, then only its own edit (they ran side by side).
    for request in first.requests:
        prompt = "".join(
            p.get("text", "")
            for m in request["messages"]
            if m["role"] == "user"
            for p in m["parts"]
        )
        outputs = [
            p.get("output", "")
            for m in request["messages"]
            for p in m["parts"]
            if p["type"] == "tool_result"
        ]
        if "TASK-A" in prompt:
            assert not any("BBB" in o for o in outputs)
        if "TASK-B" in prompt:
            assert not any("AAA" in o for o in outputs)
    # Side by side: each child asked the model again before the other's last request.
    spans = {
        task: [
            r["received_at"]
            for r in first.requests
            if task in json.dumps(next(m for m in r["messages"] if m["role"] == "user"))
        ]
        for task in ("TASK-A", "TASK-B")
    }
    assert all(len(times) == 4 for times in spans.values()), spans
    assert max(min(t) for t in spans.values()) < min(max(t) for t in spans.values()), spans
    assert tree_digest(repo) == before  # nothing reached the person's files
    trees = ketch.worktrees()
    assert set(names) <= set(trees)

    # ... then a second turn merges the first child's worktree, then tries the second.
    merge_script = [
        call("worktree_merge", {"name": names[0]}),
        call("worktree_merge", {"name": names[1]}),
        text("merged one, the other conflicts"),
    ]
    second = ketch(
        "--continue",
        "-p",
        "merge them",
        *ASSISTED,
        "--permission-prompt-command",
        str(approver),
        script=merge_script,
    )
    clean(second)
    permissions = [e for e in second.of_type("permission") if e.get("decision") == "ask"]
    assert len(permissions) == 2 and all(p["approved"] for p in permissions)
    questions = [json.loads(line) for line in asked.read_text().splitlines() if line.strip()]
    assert [q["tool"] for q in questions] == ["worktree_merge", "worktree_merge"]
    assert "a.txt" in (questions[0]["preview"] or "")
    assert (repo / "a.txt").read_text() == "one\nAAA\nthree\n"
    final = second.requests[-1]
    outputs = [p["output"] for p in final["messages"][-1]["parts"] if p["type"] == "tool_result"]
    assert "conflict" in outputs[-1] and "a.txt" in outputs[-1]
    assert (repo / "a.txt").read_text() == "one\nAAA\nthree\n"  # the conflict changed nothing
    assert git(repo, "status", "--porcelain") == ""


def test_without_approval_the_merge_does_not_happen(ketch: Ketch, repo: Path) -> None:
    script = [
        when("PARENT", call(*agent("TASK-A edit"))),
        *edit("TASK-A", "AAA"),
        when("PARENT", text("done")),
    ]
    first = ketch(
        "-p",
        "PARENT go",
        *ASSISTED,
        script=script,
    )
    clean(first)
    (name,) = list(ketch.worktrees())
    second = ketch(
        "--continue",
        "-p",
        "merge",
        *ASSISTED,
        script=[call("worktree_merge", {"name": name}), text("could not")],
    )
    clean(second)
    (ask,) = [e for e in second.of_type("permission") if e["decision"] == "ask"]
    assert ask["approved"] is False  # no one to approve in -p: denied
    assert (repo / "a.txt").read_text() == "one\ntwo\nthree\n"


def test_an_agent_definition_asks_for_its_worktree(ketch: Ketch, repo: Path) -> None:
    agents = ketch.config_dir / "agents"
    agents.mkdir(parents=True)
    (agents / "iso.md").write_text(
        "---\nname: iso\ndescription: isolated editor\nisolation: worktree\n---\nEdit.\n"
    )
    script = [
        when(
            "PARENT",
            call("agent", {"description": "edit", "prompt": "TASK-A edit", "agent": "iso"}),
        ),
        *edit("TASK-A", "AAA"),
        when("PARENT", text("done")),
    ]
    result = ketch(
        "-p",
        "PARENT go",
        *ASSISTED,
        script=script,
    )
    clean(result)
    (answer,) = [o for r in parent_requests(result) for o in results(r)]
    assert "It worked in its own git worktree" in answer and "+AAA" in answer
    assert (repo / "a.txt").read_text() == "one\ntwo\nthree\n"
