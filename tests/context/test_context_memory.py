"""The project memory: the remember tool (always asks), /memory, and the prompt part."""

from __future__ import annotations

from pathlib import Path

from ketch.testing import approve_all, call, deny_all, text
from tests.context.kit_context import harness, slash


def memory_file(h) -> Path:  # noqa: ANN001
    return h.workspace / ".ketch" / "memory.md"


def test_remember_asks_and_is_refused_without_an_approver(tmp_path: Path) -> None:
    h = harness(tmp_path, [call("remember", {"note": "tests run with make check"}), text("ok")])
    h.run("remember how tests run")
    permission = h.of_type("permission")[0]
    assert permission.decision == "ask" and permission.approved is False
    assert "ketch's own config" in permission.reason  # the hard guard on .ketch/
    assert not memory_file(h).exists()


def test_remember_asks_even_when_a_policy_allows_everything(tmp_path: Path) -> None:
    from ketch import hookimpl
    from ketch.policy import Vote

    class AllowAll:
        @hookimpl
        def ketch_policy_vote(self, call, snapshot, session):  # noqa: ANN001, ANN201
            return Vote(decision="allow", reason="allow all")

    h = harness(
        tmp_path, [call("remember", {"note": "x"}), text("ok")], plugins=[("allowall", AllowAll())]
    )
    h.run("remember", approver=deny_all)
    assert h.of_type("permission")[0].decision == "ask"
    assert not memory_file(h).exists()


def test_remembered_note_reaches_the_next_system_prompt(tmp_path: Path) -> None:
    h = harness(
        tmp_path,
        [call("remember", {"note": "Run tests with `make check`."}), text("saved"), text("ok")],
    )
    h.run("remember how tests run", approver=approve_all)
    assert "Saved as note 1" in h.of_type("tool_result")[0].output
    content = memory_file(h).read_text()
    assert content.startswith("# ketch project memory")
    assert "- Run tests with `make check`. (model, " in content
    h.run("next")
    assert "Run tests with `make check`." in h.provider.requests[-1].system
    assert "# Project memory" in h.provider.requests[-1].system


def test_remember_is_not_offered_in_plan_mode(tmp_path: Path) -> None:
    h = harness(tmp_path, [text("ok")])
    h.session.set_mode("plan")
    h.run("hi")
    assert "remember" not in [t.name for t in h.provider.requests[0].tools]


def test_remember_refuses_secrets(tmp_path: Path) -> None:
    key = "sk-" + "a1B2c3D4" * 4
    h = harness(tmp_path, [call("remember", {"note": f"the key is {key}"}), text("ok")])
    h.run("remember the key", approver=approve_all)
    result = h.of_type("tool_result")[0]
    assert not result.ok and "looks like it holds a secret" in result.output
    assert not memory_file(h).exists() or key not in memory_file(h).read_text()


def test_memory_command_add_show_forget(tmp_path: Path) -> None:
    h = harness(tmp_path, [text("ok"), text("ok")])
    assert "the project memory is empty" in slash(h, "memory")
    assert "saved as note 1" in slash(h, "memory", "add Prefer pathlib over os.path")
    assert "saved as note 2" in slash(h, "memory", "add Deploys go through CI only")
    shown = slash(h, "memory")
    assert (
        "1. Prefer pathlib over os.path (user, " in shown
        and "2. Deploys go through CI only" in shown
    )
    h.run("hi")
    assert "Prefer pathlib over os.path" in h.provider.requests[-1].system
    assert "forgot note 1: Prefer pathlib" in slash(h, "memory", "forget 1")
    h.run("again")
    system = h.provider.requests[-1].system
    assert "Prefer pathlib" not in system and "Deploys go through CI only" in system
    assert "there is no note 5" in slash(h, "memory", "forget 5")
    assert slash(h, "memory", "add   ").startswith("not saved: the note is empty")
    assert slash(h, "memory", "frobnicate").startswith("usage: /memory")


def test_hand_edited_memory_is_read_and_capped_newest_first(tmp_path: Path) -> None:
    h = harness(tmp_path, [text("ok")], config="[context]\nmemory_max_bytes = 300\n")
    memory_file(h).parent.mkdir()
    memory_file(h).write_text("".join(f"- note number {i:03d}\n" for i in range(100)))
    h.run("hi")
    system = h.provider.requests[-1].system
    assert "note number 099" in system and "note number 000" not in system
    assert "older notes cut for space" in system


def test_memory_file_outside_the_workspace_falls_back_to_the_default(tmp_path: Path) -> None:
    h = harness(tmp_path, [text("ok")], config='[context]\nmemory_file = "../outside.md"\n')
    assert "saved as note 1" in slash(h, "memory", "add stays inside")
    assert memory_file(h).exists() and not (tmp_path / "outside.md").exists()
