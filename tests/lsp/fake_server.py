"""Tiny language servers that misbehave, speaking real LSP through pygls's server.

    python fake_server.py MODE

``crash``: exits with an error before answering anything. ``hang``: never answers
``initialize`` (it reads every message and sits on it). ``flood``: answers, then
publishes thousands of diagnostics for every document it is given. ``probe``: publishes
one diagnostic whose message says what the server could see from where it runs (a
secret file's content, the user's home, the network), for the sandbox tests. ``ok``: a
well-behaved server with one diagnostic per line containing ``BAD``.
"""

from __future__ import annotations

import asyncio
import os
import socket
import sys
from pathlib import Path

from lsprotocol import types as T
from pygls.lsp.server import LanguageServer

MODE = sys.argv[1] if len(sys.argv) > 1 else "ok"
FLOOD = 5000

if MODE == "crash":
    print("fake server: cannot start (configuration broken)", file=sys.stderr, flush=True)
    sys.exit(3)

server = LanguageServer("fake-lsp", "1", text_document_sync_kind=T.TextDocumentSyncKind.Full)

if MODE == "hang":

    @server.feature(T.INITIALIZE)
    async def _initialize(params: T.InitializeParams) -> None:
        await asyncio.sleep(3600)


def _diagnostic(line: int, message: str) -> T.Diagnostic:
    return T.Diagnostic(
        range=T.Range(T.Position(line, 0), T.Position(line, 1)),
        message=message,
        severity=T.DiagnosticSeverity.Error,
        source="fake",
    )


def _probe() -> str:
    facts = []
    secret = os.environ.get("FAKE_PROBE_FILE")
    if secret:
        try:
            facts.append("file=" + Path(secret).read_text().strip())
        except OSError as exc:
            facts.append(f"file-error={type(exc).__name__}")
    home = os.environ.get("FAKE_PROBE_HOME")
    if home:
        facts.append(f"home-visible={Path(home).exists()}")
    port = os.environ.get("FAKE_PROBE_PORT")
    if port:
        try:
            socket.create_connection(("127.0.0.1", int(port)), timeout=2).close()
            facts.append("network=reached")
        except OSError:
            facts.append("network=blocked")
    facts.append("secret-env=" + str(any("SECRET" in name for name in os.environ)))
    return "probe " + " ".join(facts)


def _publish(ls: LanguageServer, uri: str, version: int | None) -> None:
    text = ls.workspace.get_text_document(uri).source
    if MODE == "flood":
        items = [_diagnostic(0, f"flood {n}") for n in range(FLOOD)]
    elif MODE == "probe":
        items = [_diagnostic(0, _probe())]
    else:
        items = [
            _diagnostic(number, "BAD is not allowed here")
            for number, line in enumerate(text.splitlines())
            if "BAD" in line
        ]
    ls.text_document_publish_diagnostics(
        T.PublishDiagnosticsParams(uri=uri, diagnostics=items, version=version)
    )


@server.feature(T.TEXT_DOCUMENT_DID_OPEN)
def _opened(ls: LanguageServer, params: T.DidOpenTextDocumentParams) -> None:
    _publish(ls, params.text_document.uri, params.text_document.version)


@server.feature(T.TEXT_DOCUMENT_DID_CHANGE)
def _changed(ls: LanguageServer, params: T.DidChangeTextDocumentParams) -> None:
    _publish(ls, params.text_document.uri, params.text_document.version)


if __name__ == "__main__":
    server.start_io()
