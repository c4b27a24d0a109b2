"""Serving ACP on this process's stdin/stdout, and nothing else on them.

The protocol gets private copies of file descriptors 0 and 1; the originals become
/dev/null and stderr. So a stray ``print`` in some plugin, or a child process that
inherits the descriptors, can never corrupt the JSON-RPC stream or steal its input:
whatever they write lands on stderr, which editors show as the agent's log.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from typing import TYPE_CHECKING, BinaryIO

from ketch.api import KetchError
from ketch_acp.transport import MAX_LINE

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Kernel


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
    reader = asyncio.StreamReader(limit=MAX_LINE)
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


class OneLineFormatter(logging.Formatter):
    """Log records as single lines: an exception is its type and message, never a
    traceback (the SDK logs whatever a handler raised with ``logging.exception``, and
    editors show stderr as the agent's log)."""

    def format(self, record: logging.LogRecord) -> str:
        exc_info, record.exc_info, record.exc_text = record.exc_info, None, None
        try:
            text = super().format(record)
        finally:
            record.exc_info = exc_info
        if exc_info and exc_info[1] is not None:
            error = exc_info[1]
            detail = str(error).splitlines()[0] if str(error) else ""
            text += f" ({type(error).__name__}{': ' + detail if detail else ''})"
        return text.replace("\n", " | ")


def _log_to_stderr() -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(OneLineFormatter("ketch acp: %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)


def run_acp(kernel: Kernel) -> int:
    """Serve until the editor closes stdin (exit 0) or a signal ends ketch (128 + the
    signal, after every running turn was cancelled and every session ended)."""
    from acp import run_agent

    from ketch_acp.agent import KetchAgent
    from ketch_acp.transport import GuardedTransport
    from ketch_frontend_kit.signals import run_cancellable

    _log_to_stderr()
    reading, writing = _claim_stdio()

    async def serve() -> None:
        reader, writer = await _streams(reading, writing)
        agent = KetchAgent(kernel)
        transport = GuardedTransport(reader, writer, on_eof=agent.disconnected)
        try:
            await run_agent(agent, transport)  # type: ignore[arg-type]  # duck-typed on purpose (agent.py)
        finally:
            await asyncio.shield(agent.shutdown())
            await transport.close()

    outcome = run_cancellable(serve)
    return outcome.exit_code if outcome.exit_code is not None else 0
