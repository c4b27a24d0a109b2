"""Serving ACP on this process's stdin/stdout, and nothing else on them.

The protocol gets private copies of file descriptors 0 and 1; the originals become
/dev/null and stderr. So a stray ``print`` in some plugin, or a child process that
inherits the descriptors, can never corrupt the JSON-RPC stream or steal its input:
whatever they write lands on stderr, which editors show as the agent's log.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
from typing import TYPE_CHECKING, BinaryIO

from ketch.errors import KetchError

if TYPE_CHECKING:  # pragma: no cover
    from ketch.kernel import Kernel

STDIO_LIMIT = 50 * 1024 * 1024  # one JSON-RPC line (the SDK's own default)


def _claim_stdio() -> tuple[BinaryIO, BinaryIO]:
    """The protocol's own reading and writing ends; fds 0 and 1 no longer reach the client."""
    sys.stdout.flush()
    proto_in, proto_out = os.dup(0), os.dup(1)
    os.set_inheritable(proto_in, False)
    os.set_inheritable(proto_out, False)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    return os.fdopen(proto_in, "rb", buffering=0), os.fdopen(proto_out, "wb", buffering=0)


async def _streams(
    reading: BinaryIO, writing: BinaryIO
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=STDIO_LIMIT)
    try:
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), reading)
        transport, protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin, writing
        )
    except ValueError as exc:
        raise KetchError(
            f"ketch acp speaks the Agent Client Protocol over pipes ({exc}); start it from an editor or an ACP client"
        ) from None
    return reader, asyncio.StreamWriter(transport, protocol, reader, loop)


def run_acp(kernel: Kernel) -> int:
    from acp import run_agent

    from ketch_acp.agent import KetchAgent

    logging.basicConfig(
        stream=sys.stderr,
        level=logging.WARNING,
        format="ketch acp: %(levelname)s %(name)s: %(message)s",
    )
    reading, writing = _claim_stdio()

    async def serve() -> None:
        reader, writer = await _streams(reading, writing)
        agent = KetchAgent(kernel)
        try:
            await run_agent(agent, writer, reader)  # type: ignore[arg-type]  # duck-typed on purpose (agent.py)
        finally:
            await agent.shutdown()
            with contextlib.suppress(Exception):
                writer.close()

    asyncio.run(serve())
    return 0
