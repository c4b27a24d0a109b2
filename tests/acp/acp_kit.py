"""Driving a real ``ketch acp`` process with the ACP SDK's own client.

``AcpRun`` spawns ``python -m ketch acp --provider scripted`` (the scripted model from
``KETCH_SCRIPT``) with ``acp.spawn_agent_process``, exactly as an editor would, and
records everything the agent sends: updates, permission requests, file requests.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, spawn_agent_process, text_block
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    FileSystemCapabilities,
    Implementation,
    ReadTextFileResponse,
    RequestPermissionResponse,
)

ROOT = Path(__file__).resolve().parents[2]
SCRIPTED = "ketch.testing.scripted_plugin"


class RecordingClient:
    """A duck-typed ``acp.Client``: records, answers permissions with ``choose``, and
    serves ``fs/*`` from ``buffers`` (path -> text) when the test gives it any."""

    def __init__(
        self,
        choose: Callable[[Any, list[Any]], str | None] | None = None,
        buffers: dict[str, str] | None = None,
    ) -> None:
        self.updates: list[Any] = []
        self.timeline: list[
            tuple[str, Any]
        ] = []  # updates and permission requests, in arrival order
        self.permissions: list[tuple[Any, list[Any]]] = []
        self.reads: list[str] = []
        self.writes: list[tuple[str, str]] = []
        self.choose = choose or (lambda tool_call, options: "allow_once")
        self.buffers = buffers if buffers is not None else {}
        self.permission_asked = asyncio.Event()
        self.first_chunk = asyncio.Event()
        self.hold: asyncio.Event | None = None  # set: permission answers wait for it

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)
        self.timeline.append(("update", update))
        if getattr(update, "session_update", "") == "agent_message_chunk":
            self.first_chunk.set()

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any
    ) -> RequestPermissionResponse:
        self.permissions.append((tool_call, options))
        self.timeline.append(("permission", tool_call))
        self.permission_asked.set()
        if self.hold is not None:
            await self.hold.wait()
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        picked = self.choose(tool_call, options)
        if picked is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=picked)
        )

    async def read_text_file(
        self,
        session_id: str,
        path: str,
        line: int | None = None,
        limit: int | None = None,
        **kwargs: Any,
    ) -> ReadTextFileResponse:
        self.reads.append(path)
        if path in self.buffers:
            return ReadTextFileResponse(content=self.buffers[path])
        return ReadTextFileResponse(content=Path(path).read_text(encoding="utf-8"))

    async def write_text_file(
        self, session_id: str, path: str, content: str, **kwargs: Any
    ) -> None:
        self.writes.append((path, content))
        self.buffers[path] = content
        return None

    def of(self, kind: str) -> list[Any]:
        return [u for u in self.updates if getattr(u, "session_update", "") == kind]

    def answer_text(self) -> str:
        return "".join(u.content.text for u in self.of("agent_message_chunk"))


@dataclass
class AcpEnv:
    """The agent's environment: isolated config/state, the scripted model."""

    workspace: Path
    scratch: Path
    env: dict[str, str] = field(default_factory=dict)

    @property
    def script_path(self) -> Path:
        return self.scratch / "script.json"

    @property
    def log_path(self) -> Path:
        return self.scratch / "requests.jsonl"

    def script(self, steps: list[dict[str, Any]]) -> None:
        self.script_path.write_text(json.dumps(steps), encoding="utf-8")

    def requests(self) -> list[dict[str, Any]]:
        if not self.log_path.exists():
            return []
        return [
            json.loads(line)
            for line in self.log_path.read_text(encoding="utf-8").splitlines()
            if line
        ]

    def agent_env(self, extra_load: str = "") -> dict[str, str]:
        loads = ",".join(x for x in (SCRIPTED, extra_load) if x)
        base = {k: v for k, v in os.environ.items() if k.startswith(("KETCH_", "XDG_"))}
        return {
            **base,
            **self.env,
            "KETCH_LOAD": loads,
            "KETCH_SCRIPT": str(self.script_path),
            "KETCH_SCRIPT_LOG": str(self.log_path),
            "PYTHONPATH": str(ROOT),
        }


def client_caps(read: bool = False, write: bool = False) -> ClientCapabilities:
    return ClientCapabilities(
        fs=FileSystemCapabilities(read_text_file=read, write_text_file=write), terminal=False
    )


@contextlib.asynccontextmanager
async def spawn(
    env: AcpEnv,
    client: RecordingClient,
    *args: str,
    extra_load: str = "",
    read: bool = False,
    write: bool = False,
) -> AsyncIterator[tuple[Any, Any, Any]]:
    """(connection, process, initialize response) for a fresh ``ketch acp``."""
    stderr = open(env.scratch / "agent-stderr.log", "ab")  # noqa: SIM115 - closed below
    try:
        async with spawn_agent_process(
            client,
            sys.executable,
            "-m",
            "ketch",
            "acp",
            "--provider",
            "scripted",
            *args,
            env=env.agent_env(extra_load),
            cwd=env.workspace,
            transport_kwargs={"stderr": stderr.fileno()},
        ) as (conn, proc):
            init = await asyncio.wait_for(
                conn.initialize(
                    protocol_version=PROTOCOL_VERSION,
                    client_capabilities=client_caps(read, write),
                    client_info=Implementation(name="ketch-test", version="0"),
                ),
                30,
            )
            yield conn, proc, init
    finally:
        stderr.close()


def prompt(text: str) -> list[Any]:
    return [text_block(text)]


def agent_stderr(env: AcpEnv) -> str:
    path = env.scratch / "agent-stderr.log"
    return path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""


def run_prompts(
    env: AcpEnv,
    client: RecordingClient,
    *prompts: str | list[Any],
    args: tuple[str, ...] = (),
    mcp_servers: list[Any] | None = None,
    **spawn_options: Any,
) -> list[str]:
    """One ``ketch acp`` process, one session, these prompts in turn: their stop reasons.
    The client keeps everything it received for the test to look at afterwards."""

    async def scenario() -> list[str]:
        async with spawn(env, client, *args, **spawn_options) as (conn, _proc, _init):
            session = await conn.new_session(cwd=str(env.workspace), mcp_servers=mcp_servers or [])
            reasons = []
            for item in prompts:
                blocks = prompt(item) if isinstance(item, str) else item
                reasons.append(
                    (await conn.prompt(session_id=session.session_id, prompt=blocks)).stop_reason
                )
            return reasons

    return asyncio.run(asyncio.wait_for(scenario(), 90))
