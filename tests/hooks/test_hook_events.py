"""The events the kernel does not await (Notification, PreCompact, PostCompact), and
that hooks never block the turn's event loop. In-process turns, real hook processes."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import ketch_hooks
from ketch.commands import SlashContext
from ketch.testing import Harness, approve_all, call, text
from tests.context.kit_context import big

WINDOW = 8_000


def recorder(tmp_path: Path, name: str) -> tuple[str, Path]:
    """A hook command that appends its stdin to a file (one JSON line per run)."""
    keep = tmp_path / f"{name}.jsonl"
    return f"cat >> {keep}; echo >> {keep}", keep


def lines(path: Path) -> list[dict[str, Any]]:
    return (
        [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        if path.exists()
        else []
    )


def config(*events: tuple[str, str]) -> str:
    return "".join(
        f"[[hooks.{event}]]\ncommand = {json.dumps(command)}\n" for event, command in events
    )


def test_notification_hooks_hear_permission_prompts(tmp_path: Path) -> None:
    command, keep = recorder(tmp_path, "notify")
    h = Harness.create(
        tmp_path,
        script=[call("write_file", {"path": "a.txt", "content": "x"}), text("ok")],
        bundled=["guards", "policy", "fs", "hooks"],
        config=config(("Notification", command)),
    )
    h.run("write", approver=approve_all)
    (data,) = lines(keep)
    assert (
        data["hook_event_name"] == "Notification"
        and data["notification_type"] == "permission_prompt"
    )
    assert "write_file" in data["message"]


def test_pre_and_post_compact_hooks_with_the_auto_trigger(tmp_path: Path) -> None:
    pre, pre_keep = recorder(tmp_path, "pre")
    post, post_keep = recorder(tmp_path, "post")
    h = Harness.create(
        tmp_path,
        script=[text(big(f"answer {i}")) for i in range(6)],
        bundled=["context", "budget", "compact", "hooks"],
        config=config(("PreCompact", pre), ("PostCompact", post)),
        context_window=WINDOW,
    )
    for i in range(6):
        h.run(big(f"prompt {i}"))
    assert h.of_type("compaction")
    before, after = lines(pre_keep), lines(post_keep)
    assert (
        before and before[0]["hook_event_name"] == "PreCompact" and before[0]["trigger"] == "auto"
    )
    assert (
        after
        and after[0]["trigger"] == "auto"
        and after[0]["after_tokens"] < after[0]["before_tokens"]
        and after[0]["compact_summary"]
    )


def test_pre_and_post_compact_hooks_with_the_manual_trigger(tmp_path: Path) -> None:
    pre, pre_keep = recorder(tmp_path, "pre")
    post, post_keep = recorder(tmp_path, "post")
    h = Harness.create(
        tmp_path,
        script=[text(big(f"answer {i}", 600)) for i in range(3)],
        bundled=["context", "budget", "compact", "hooks"],
        config=config(("PreCompact", pre), ("PostCompact", post)),
    )
    for i in range(3):
        h.run(big(f"prompt {i}", 600))

    async def compact_now() -> None:  # as the shell runs /compact: its loop goes on afterwards
        printed: list[str] = []
        await h.kernel.commands["compact"].slash_run(
            SlashContext(kernel=h.kernel, session=h.session, argument="", print=printed.append)
        )  # type: ignore[misc]
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not (lines(pre_keep) and lines(post_keep)):
            await asyncio.sleep(0.02)

    asyncio.run(compact_now())
    assert [d["trigger"] for d in lines(pre_keep)] == ["manual"] and lines(pre_keep)[0][
        "ketch_reason"
    ] == "command"
    assert [d["trigger"] for d in lines(post_keep)] == ["manual"]


def test_hooks_never_block_the_event_loop(tmp_path: Path) -> None:
    from tests.kernel.kit import Echo, tools_plugins

    plugins, _ = tools_plugins("allow")
    h = Harness.create(
        tmp_path,
        script=[call("echo", {"text": "hi"}), text("ok")],
        plugins=[*plugins, ("hooks", ketch_hooks)],
        bundled=["guards"],
        config=config(("PreToolUse", "sleep 1")),
    )
    Echo.runs.clear()

    async def scenario() -> tuple[int, float]:
        ticks = 0
        stop = asyncio.Event()

        async def ticker() -> None:
            nonlocal ticks
            while not stop.is_set():
                await asyncio.sleep(0.02)
                ticks += 1

        task = asyncio.ensure_future(ticker())
        began = time.monotonic()
        await h.turn("x")
        took = time.monotonic() - began
        stop.set()
        await task
        return ticks, took

    ticks, took = asyncio.run(scenario())
    assert took >= 1 and Echo.runs == ["hi"]
    assert (
        ticks >= 25
    )  # the loop ran all through the hook's second (subprocess.run would have frozen it)
