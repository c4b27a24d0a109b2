"""``@path`` attachments: the file's content reaches the request, read through the policy
exactly as ``read_file`` (a secret asks; nobody to ask means not read, and said so), the
attached text counts as read for the write guard, ``@dir/`` attaches a listing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ketch import hookimpl
from ketch.policy import ApprovalAnswer, ApprovalRequest
from ketch.testing import Harness, call, isolated_env, text
from ketch.testing.cli import run_cli

PLUGINS = ["fs", "policy", "attach", "budget"]  # budget: a text-only model is sent no image


class Approver:
    def __init__(self, answer: bool) -> None:
        self.answer = answer
        self.requests: list[ApprovalRequest] = []

    async def __call__(self, request: ApprovalRequest) -> ApprovalAnswer:
        self.requests.append(request)
        return ApprovalAnswer(approved=self.answer)


def _user_texts(request: Any) -> list[str]:
    return [p.text for p in request.messages[-1].parts]


def test_mentioned_file_content_goes_into_the_request(tmp_path: Path) -> None:
    h = Harness.create(tmp_path, script=[text("summarized")], bundled=PLUGINS)
    (h.workspace / "notes.txt").write_text("attach-canary-31 the meeting moved\n")
    h.run("summarize @notes.txt, please")
    parts = _user_texts(h.provider.requests[0])
    assert parts[0] == "summarize @notes.txt, please"  # the prompt as typed
    assert 'mention="@notes.txt"' in parts[1] and "attach-canary-31 the meeting moved" in parts[1]
    assert h.of_type("tool_call")[0].name == "read_file"  # a real read, journaled and shown


def test_a_secret_asks_first_and_declined_means_not_read(tmp_path: Path) -> None:
    h = Harness.create(tmp_path, script=[text("ok")], bundled=PLUGINS)
    (h.workspace / ".env").write_text("API_TOKEN=secret-canary-77\n")
    approver = Approver(answer=False)
    h.run("check @.env", approver=approver)
    assert len(approver.requests) == 1 and approver.requests[0].call.tool == "read_file"
    sent = "\n".join(_user_texts(h.provider.requests[0]))
    assert "secret-canary-77" not in sent
    assert "it was not attached" in sent
    assert any("@.env was not attached" in e.message for e in h.of_type("notice"))


def test_a_secret_approved_is_attached(tmp_path: Path) -> None:
    h = Harness.create(tmp_path, script=[text("ok")], bundled=PLUGINS)
    (h.workspace / ".env").write_text("API_TOKEN=secret-canary-78\n")
    approver = Approver(answer=True)
    h.run("check @.env", approver=approver)
    assert len(approver.requests) == 1
    assert "secret-canary-78" in "\n".join(_user_texts(h.provider.requests[0]))


def test_attached_file_counts_as_read_for_the_write_guard(tmp_path: Path) -> None:
    h = Harness.create(
        tmp_path,
        script=[
            call("edit_file", {"path": "main.py", "old_string": "x = 1", "new_string": "x = 2"}),
            text("edited"),
        ],
        bundled=PLUGINS,
    )
    (h.workspace / "main.py").write_text("x = 1\n")
    h.run("bump @main.py", approver=Approver(answer=True))
    (edit,) = [e for e in h.of_type("tool_result") if e.name == "edit_file"]
    assert edit.ok, edit.output
    assert (h.workspace / "main.py").read_text() == "x = 2\n"


def test_directory_mention_attaches_a_listing_and_unknown_mentions_stay_text(
    tmp_path: Path,
) -> None:
    h = Harness.create(tmp_path, script=[text("ok")], bundled=PLUGINS)
    (h.workspace / "src").mkdir()
    (h.workspace / "src" / "app.py").write_text("print(1)\n")
    h.run("what is in @src/ ? ping @someone, mail me@example.com, use @decorator")
    parts = _user_texts(h.provider.requests[0])
    assert len(parts) == 2 and 'mention="@src/"' in parts[1] and "app.py" in parts[1]
    assert [e.name for e in h.of_type("tool_call")] == ["list_dir"]


def test_outside_the_workspace_asks(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.txt"
    outside.write_text("outside-canary\n")
    h = Harness.create(tmp_path, script=[text("ok")], bundled=PLUGINS)
    approver = Approver(answer=False)
    h.run(f"look at @{outside}", approver=approver)
    assert len(approver.requests) == 1
    assert "outside-canary" not in "\n".join(_user_texts(h.provider.requests[0]))


def test_headless_attaches_and_denies_a_secret_clearly(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("headless-canary-12\n")
    (workspace / ".env").write_text("TOKEN=headless-secret-13\n")
    env = {**isolated_env(tmp_path / "home"), "KETCH_PLUGINS": "fs,policy,attach,headless,scripted"}
    result = run_cli(
        ["-p", "read @notes.txt and @.env", "--provider", "scripted"],
        cwd=workspace,
        env=env,
        script=[text("done")],
        scratch=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    sent = "\n".join(p.get("text", "") for p in result.requests[0]["messages"][-1]["parts"])
    assert "headless-canary-12" in sent
    assert "headless-secret-13" not in sent
    assert "@.env was not attached: reading it needs your approval" in result.stderr
    assert "Traceback" not in result.stderr


PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d4944415478da63f8ffff3f0005fe02fea7d6a48b0000000049454e44ae426082"
)


class Catalog:
    """A model catalog that says whether the scripted model takes images."""

    def __init__(self, images: bool) -> None:
        self.images = images

    @hookimpl
    def ketch_model_info(self, provider_kind: str, model: str) -> Any:
        from ketch.providers import ModelInfo

        return ModelInfo(id=model, images=self.images, source="test catalog")


def test_image_mention_attaches_the_image_for_a_model_with_vision(tmp_path: Path) -> None:
    h = Harness.create(
        tmp_path,
        script=[text("a red pixel")],
        bundled=PLUGINS,
        plugins=[("catalog", Catalog(images=True))],
    )
    (h.workspace / "shot.png").write_bytes(PNG)
    h.run("what is in @shot.png")
    parts = h.provider.requests[0].messages[-1].parts
    images = [p for p in parts if p.type == "image"]
    assert len(images) == 1 and images[0].data == PNG and images[0].media_type == "image/png"
    assert any(p.type == "text" and 'mention="@shot.png"' in p.text for p in parts)


def test_image_mention_for_a_model_without_vision_is_a_clear_notice(tmp_path: Path) -> None:
    h = Harness.create(
        tmp_path,
        script=[text("I cannot see it")],
        bundled=PLUGINS,
        plugins=[("catalog", Catalog(images=False))],
    )
    (h.workspace / "shot.png").write_bytes(PNG)
    h.run("what is in @shot.png")
    sent = h.provider.requests[0].messages[-1].parts
    assert not [p for p in sent if p.type == "image"]  # not sent to a model that cannot take it
    assert any("does not take images" in e.message for e in h.of_type("notice"))
