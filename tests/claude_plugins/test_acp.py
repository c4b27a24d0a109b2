"""An installed plugin's namespaced commands in ACP: advertised to the editor by the
SDK's own client as ``plugin:command``, and run when the editor sends one."""

from __future__ import annotations

import asyncio
import json

import pytest

from tests.acp.acp_kit import AcpEnv, RecordingClient, prompt, spawn
from tests.claude_plugins.conftest import PluginCli, needs_git

pytestmark = [needs_git, pytest.mark.timeout(180)]


def test_plugin_commands_are_advertised_and_run_in_acp(cli: PluginCli) -> None:
    cli.add_and_install("commit-commands")
    scratch = cli.tmp / "acp"
    scratch.mkdir()
    env = AcpEnv(
        cli.workspace, scratch, env={k: v for k, v in cli.env.items() if k != "KETCH_LOAD"}
    )
    env.script([{"text": "committed"}])

    async def scenario() -> None:
        client = RecordingClient()
        async with spawn(env, client) as (conn, _proc, _init):
            session = await conn.new_session(cwd=str(cli.workspace), mcp_servers=[])
            result = await conn.prompt(
                session_id=session.session_id, prompt=prompt("/commit-commands:commit")
            )
            assert result.stop_reason == "end_turn"
            names = {c.name for c in client.of("available_commands_update")[0].available_commands}
            assert {"commit-commands:commit", "commit-commands:commit-push-pr"} <= names

    asyncio.run(asyncio.wait_for(scenario(), 120))
    (request,) = env.requests()
    said = json.dumps(request["messages"][-1])
    assert "Based on the above changes, create a single git commit" in said
