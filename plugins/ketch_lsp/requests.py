"""The requests the tools send, built where they run: on the LSP thread (lsprotocol is
imported there, never on the thread a frontend draws from)."""

from __future__ import annotations

from typing import Any


def definition(client: Any, uri: str, line: int, character: int) -> Any:
    from lsprotocol import types as T

    return client.text_document_definition_async(
        T.DefinitionParams(T.TextDocumentIdentifier(uri), T.Position(line, character))
    )


def references(client: Any, uri: str, line: int, character: int, declaration: bool) -> Any:
    from lsprotocol import types as T

    return client.text_document_references_async(
        T.ReferenceParams(
            context=T.ReferenceContext(include_declaration=declaration),
            text_document=T.TextDocumentIdentifier(uri),
            position=T.Position(line, character),
        )
    )


def hover(client: Any, uri: str, line: int, character: int) -> Any:
    from lsprotocol import types as T

    return client.text_document_hover_async(
        T.HoverParams(T.TextDocumentIdentifier(uri), T.Position(line, character))
    )


def document_symbols(client: Any, uri: str) -> Any:
    from lsprotocol import types as T

    return client.text_document_document_symbol_async(
        T.DocumentSymbolParams(T.TextDocumentIdentifier(uri))
    )


def workspace_symbols(client: Any, query: str) -> Any:
    from lsprotocol import types as T

    return client.workspace_symbol_async(T.WorkspaceSymbolParams(query=query))


def rename(client: Any, uri: str, line: int, character: int, new_name: str) -> Any:
    from lsprotocol import types as T

    return client.text_document_rename_async(
        T.RenameParams(
            text_document=T.TextDocumentIdentifier(uri),
            position=T.Position(line, character),
            new_name=new_name,
        )
    )
