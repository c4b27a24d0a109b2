"""What runs on the LSP thread: bring servers up to date with files, and ask them.

Each function takes an absolute ``deadline`` (``time.monotonic()``) and never waits
past it; a server that is still starting when it passes is left to start (the next call
finds it ready).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ketch_lsp.diagnostics import Problem, fresh, problem
from ketch_lsp.positions import uri_of

if TYPE_CHECKING:  # pragma: no cover
    from ketch_lsp.client import Doc, Server
    from ketch_lsp.runtime import Manager

MAX_BYTES = 2 << 20  # larger files are not sent to a server


@dataclass
class Change:
    """A file a call changed: its text now and, when known, before the call."""

    path: Path
    text: str | None  # None: it is gone (or not text)
    before: str | None = None
    created: bool = False


@dataclass
class Checked:
    """One server's verdict on one changed file."""

    server: str
    path: Path
    problems: list[Problem] = field(default_factory=list)
    total: int = 0  # errors and warnings the file has now
    note: str = ""  # why there is no verdict (starting, failed, too slow)


async def synced(manager: Manager, server: Server, path: Path, text: str, deadline: float) -> Doc:
    """``server`` ready and holding ``text`` for ``path`` (raises ServerGone/TimeoutError)."""
    from ketch_lsp.client import ServerGone

    if not await manager.ready(server, deadline):
        if server.state == "starting":
            raise TimeoutError
        raise ServerGone(server.last_error or f"it is {server.state}")
    _forget_oldest(server)
    return server.sync(path, text)


def _forget_oldest(server: Server) -> None:
    from ketch_lsp.runtime import MAX_OPEN

    while len(server.docs) >= MAX_OPEN and server.client is not None:
        uri = next(iter(server.docs))
        del server.docs[uri]
        server.last.pop(uri, None)
        from lsprotocol import types as T

        with contextlib.suppress(Exception):
            server.client.text_document_did_close(
                T.DidCloseTextDocumentParams(T.TextDocumentIdentifier(uri))
            )


async def current(server: Server, path: Path, doc: Doc, since: int, deadline: float) -> list[Any]:
    """The diagnostics of ``doc`` now, remembered as the next check's baseline."""
    items = await server.diagnostics(path, doc, since, deadline)
    server.last[uri_of(path)] = (doc.text, items)
    return items


async def check_one(manager: Manager, server: Server, change: Change, deadline: float) -> Checked:
    from ketch_lsp.client import ServerGone

    verdict = Checked(server.spec.name, change.path)
    if change.text is None:
        server.watched([(change.path, 3)])  # deleted
        return verdict
    uri = uri_of(change.path)
    try:
        if not await manager.ready(server, deadline):
            verdict.note = (
                "still starting"
                if server.state == "starting"
                else (server.last_error or server.state)
            )
            return verdict
        baseline = server.last.get(uri)
        if baseline is None and uri in server.docs:
            doc = server.docs[uri]
            baseline = (doc.text, await current(server, change.path, doc, -1, deadline))
        if baseline is None and change.before is not None:
            since = server.seq
            doc = await synced(manager, server, change.path, change.before, deadline)
            baseline = (change.before, await current(server, change.path, doc, since, deadline))
        if baseline is None and change.created:
            baseline = ("", [])
        if baseline is None:
            # Nothing known from before the call: what it has now is not "new".
            server.watched([(change.path, 2)])
            return verdict
        since = server.seq
        doc = await synced(manager, server, change.path, change.text, deadline)
        items = await current(server, change.path, doc, since, deadline)
    except TimeoutError:
        verdict.note = "no answer in time"
        return verdict
    except ServerGone as exc:
        verdict.note = str(exc)
        return verdict
    new = fresh(items, change.text, baseline[1], baseline[0])
    verdict.problems = [problem(change.path, d, change.text) for d in new]
    verdict.total = sum(1 for d in items if d.severity in (None, 1, 2))
    return verdict


async def check(
    manager: Manager, pairs: list[tuple[Server, Change]], deadline: float
) -> list[Checked]:
    """Every (server, file) pair at once; each answers by ``deadline`` or says why not."""
    runs = [check_one(manager, server, change, deadline) for server, change in pairs]
    results = await asyncio.gather(*runs, return_exceptions=True)
    out: list[Checked] = []
    for (server, change), result in zip(pairs, results, strict=True):
        if isinstance(result, BaseException):
            out.append(
                Checked(server.spec.name, change.path, note=f"failed: {type(result).__name__}")
            )
        else:
            out.append(result)
    return out


def remaining(deadline: float) -> float:
    return max(0.05, deadline - time.monotonic())
