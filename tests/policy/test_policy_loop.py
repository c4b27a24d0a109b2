"""The permission engine through the real loop: plan mode, /mode, approvals remembered
for a session or always (persisted through the real store), resume resetting
authority, /permissions, and notices for malformed rules."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from ketch.commands import SlashContext
from ketch.policy import ApprovalAnswer, ApprovalRequest
from ketch.testing import Harness, call, text
from ketch_policy_kit.approvals import session_approvals
from tests.policy import policy_tools

PLUGINS = ["policy", "store"]
PLAIN_STORE = '[storage]\nencryption = "off"\n'


def harness(root: Path, script: list[dict[str, Any]] | None = None, **kw: Any) -> Harness:
    kw.setdefault("config", PLAIN_STORE)
    return Harness.create(
        root, script=script or [], plugins=[("policy_tools", policy_tools)], bundled=PLUGINS, **kw
    )


class Approver:
    """Answers every approval the same way, and remembers what it was asked."""

    def __init__(self, remember: str = "once", approved: bool = True) -> None:
        self.remember, self.approved = remember, approved
        self.requests: list[ApprovalRequest] = []

    async def __call__(self, request: ApprovalRequest) -> ApprovalAnswer:
        self.requests.append(request)
        return ApprovalAnswer(approved=self.approved, remember=self.remember)  # type: ignore[arg-type]


def slash(h: Harness, name: str, argument: str = "") -> list[str]:
    printed: list[str] = []
    command = h.kernel.commands[name]
    assert command.slash_run is not None
    result = command.slash_run(
        SlashContext(kernel=h.kernel, session=h.session, argument=argument, print=printed.append)
    )
    if asyncio.iscoroutine(result):
        asyncio.run(result)
    return printed


def results(h: Harness) -> list[Any]:
    return h.of_type("tool_result")


def test_plan_mode_offers_no_mutating_tool_and_refuses_one_called_anyway(tmp_path: Path) -> None:
    h = harness(
        tmp_path,
        [call("touch_file", {"path": "made.txt"}), text("done")],
        settings={"mode": "plan"},
    )
    end = h.run("make a file")
    assert end.stop_reason == "end_turn"
    offered = {spec.name for spec in h.provider.requests[0].tools}
    assert "peek" in offered
    assert "touch_file" not in offered and "run_command" not in offered
    [result] = results(h)
    assert result.outcome == "refused" and "plan mode" in result.output
    assert not (h.workspace / "made.txt").exists()
    assert h.of_type("session")[0].mode == "plan"


def test_slash_mode_switches_and_is_reported_in_events(tmp_path: Path) -> None:
    h = harness(
        tmp_path,
        [
            call("touch_file", {"path": "a.txt"}),
            text("refused"),
            call("touch_file", {"path": "b.txt"}),
            text("ok"),
        ],
    )
    assert slash(h, "mode", "plan") == [
        "mode: plan (only read-only tools are offered; changes are refused)"
    ]
    assert h.session.mode == "plan"
    assert [(e.mode, e.profile) for e in h.of_type("mode")] == [("plan", "manual")]
    h.run("try", approver=Approver())
    assert not (h.workspace / "a.txt").exists()
    assert "touch_file" not in {s.name for s in h.provider.requests[-1].tools}
    assert slash(h, "mode", "sideways")[0].startswith("unknown mode 'sideways'")
    assert h.session.mode == "plan"
    slash(h, "mode", "build")
    h.run("again", approver=Approver())
    assert (h.workspace / "b.txt").exists()
    assert [e.mode for e in h.of_type("mode")] == ["plan", "build"]
    assert slash(h, "mode") == [
        "mode: build (profile manual); switch with /mode plan or /mode build"
    ]


def test_profiles_decide_without_an_approver(tmp_path: Path) -> None:
    script = [
        call("peek", {"path": "r.txt"}),
        call("touch_file", {"path": "w.txt"}),
        call("run_command", {"command": "git log -1"}),
        text("end"),
    ]
    for profile, expected in (
        ("manual", [True, False, False]),
        ("assisted", [True, True, True]),
        ("full-access", [True, True, True]),
    ):
        root = tmp_path / profile
        h = harness(root, list(script), settings={"profile": profile})
        (h.workspace / "r.txt").write_text("r")
        (h.workspace / ".git").mkdir()  # git reads are proven in the workspace's own repository
        h.run("go")
        assert [r.ok for r in results(h)] == expected, profile
        assert h.of_type("session")[0].profile == profile


def test_git_reads_are_not_proven_without_the_workspace_repository(tmp_path: Path) -> None:
    """No repository at the workspace root: git would find one above it (or none), whose
    configuration is not the workspace's own, so assisted asks (and, with no approver, refuses)."""
    h = harness(
        tmp_path,
        [call("run_command", {"command": "git status"}), text("end")],
        settings={"profile": "assisted"},
    )
    h.run("go")
    [permission] = h.of_type("permission")
    assert permission.decision == "ask" and "own repository" in permission.reason
    assert [r.ok for r in results(h)] == [False]


def test_a_session_approval_holds_for_the_session_only(tmp_path: Path) -> None:
    script = [
        call("touch_file", {"path": "src/a.txt"}),
        call("touch_file", {"path": "src/b.txt"}),
        text("done"),
    ]
    h = harness(tmp_path, script)
    (h.workspace / "src").mkdir()
    approver = Approver(remember="session")
    h.run("write two files", approver=approver)
    assert [r.ok for r in results(h)] == [True, True]
    assert len(approver.requests) == 1, "the second write is inside the remembered scope"
    assert approver.requests[0].scope == "write(src/**)"
    assert session_approvals(h.session) == ["write(src/**)"]
    session_id = h.session.id
    h.kernel.end(h.session)
    # a restart: a new kernel, the same state dir; the session is resumed
    again = harness(tmp_path, [call("touch_file", {"path": "src/c.txt"}), text("done")])
    resumed = again.resume(session_id)
    assert session_approvals(resumed) == []
    again.run("one more")
    [result] = results(again)
    assert not result.ok and "approval" in result.output
    assert not (again.workspace / "src" / "c.txt").exists()


def test_always_allow_is_persisted_per_workspace_listed_and_revocable(tmp_path: Path) -> None:
    h = harness(tmp_path, [call("run_command", {"command": "git status --short"}), text("done")])
    approver = Approver(remember="always")
    h.run("status", approver=approver)
    [permission] = [e for e in h.of_type("permission") if e.decision == "ask"]
    assert permission.approved and permission.scope == "shell(git status:*)"
    assert session_approvals(h.session) == ["shell(git status:*)"]
    h.kernel.end(h.session)
    # a new session after a restart: no approver needed any more
    again = harness(tmp_path, [call("run_command", {"command": "git status"}), text("done")])
    assert session_approvals(again.session) == ["shell(git status:*)"]
    again.run("status again")
    assert [r.ok for r in results(again)] == [True]
    listing = slash(again, "permissions")
    assert "  1. shell(git status:*)" in listing
    assert any(line.startswith("mode build, profile manual") for line in listing)
    assert slash(again, "permissions", "revoke 1") == ["revoked: shell(git status:*)"]
    assert session_approvals(again.session) == []
    assert (
        again.kernel.store is not None
        and again.kernel.store.list_approvals(str(again.workspace)) == []
    )
    assert slash(again, "permissions", "revoke 1")[0].startswith("no approval '1'")
    # the approval belonged to that workspace only
    other = Harness.create(
        tmp_path / "other",
        script=[],
        plugins=[("policy_tools", policy_tools)],
        bundled=PLUGINS,
        config=PLAIN_STORE,
    )
    assert session_approvals(other.session) == []


def test_resume_resets_the_profile_to_manual(tmp_path: Path) -> None:
    h = harness(
        tmp_path,
        [call("touch_file", {"path": "a.txt"}), text("done")],
        settings={"profile": "full-access"},
    )
    h.run("write")
    assert (h.workspace / "a.txt").exists()
    session_id = h.session.id
    h.kernel.end(h.session)
    again = harness(
        tmp_path,
        [call("touch_file", {"path": "b.txt"}), text("done")],
        settings={"profile": "full-access"},
    )
    resumed = again.resume(session_id)
    assert resumed.profile == "manual"
    assert again.of_type("session")[0].profile == "manual" and again.of_type("session")[0].resumed
    again.run("write again")
    assert not (again.workspace / "b.txt").exists()
    assert [r.ok for r in results(again)] == [False]


def test_slash_profile(tmp_path: Path) -> None:
    h = harness(tmp_path)
    assert slash(h, "profile", "root")[0].startswith("unknown profile 'root'")
    assert "not kept when the session is resumed" in slash(h, "profile", "full-access")[0]
    assert h.session.profile == "full-access"
    assert [(e.mode, e.profile) for e in h.of_type("mode")] == [("build", "full-access")]


def test_malformed_rules_are_reported_when_a_session_starts(tmp_path: Path) -> None:
    h = harness(
        tmp_path,
        [call("peek", {"path": "r.txt"}), text("done")],
        config=PLAIN_STORE + '[permissions]\ndeny = ["shell(rm -rf"]\n',
    )
    (h.workspace / "r.txt").write_text("r")
    h.run("read")
    notices = [e.message for e in h.of_type("notice")]
    assert "[permissions] deny[0]: 'shell(rm -rf': missing the closing ')'" in notices
    [result] = results(h)
    assert not result.ok  # a broken deny rule makes everything ask; nobody can approve here


def test_a_deny_rule_is_fed_back_to_the_model(tmp_path: Path) -> None:
    config = PLAIN_STORE + '[permissions]\ndeny = ["shell(git clean:*)"]\n'
    h = harness(
        tmp_path,
        [call("run_command", {"command": "git pull && git clean -fd"}), text("done")],
        config=config,
        settings={"profile": "full-access"},
    )
    h.run("clean")
    [permission] = h.of_type("permission")
    assert permission.decision == "deny" and "git clean" in permission.reason
    [result] = results(h)
    assert not result.ok and "Permission denied" in result.output
