"""The model's code-intelligence tools: definition, references, hover, symbols,
diagnostics (read-only) and rename (a write, see :mod:`ketch_lsp.rename`).

The read-only ones declare a READ of the file they ask about, and -- since what a
server answers can come from any file of the project -- of the workspace root, as a
recursive search does; the policy allows reads inside the workspace, and asks for a
secret. Excerpts of other files are shown only for files inside the workspace that are
not secrets (by name or content); anything else is a location only.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ketch.api import Access, Effect, ToolContext, ToolResult
from ketch_tool_kit.base import ArgsT, CompactSchema, PathText

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Kernel
    from ketch_lsp.client import Server
    from ketch_lsp.runtime import Manager

HOVER_CHARS = 4000
EXCERPT_CHARS = 160


class PositionInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: PathText = Field(description="The file, relative to the workspace root or absolute.")
    line: int = Field(ge=1, description="The line (1-based, as read_file numbers it).")
    symbol: str | None = Field(
        None,
        min_length=1,
        max_length=200,
        description="The name on that line to ask about (copied exactly). Preferred over column.",
    )
    occurrence: int = Field(
        1, ge=1, le=100, description="Which occurrence of symbol on the line (1 = first)."
    )
    column: int | None = Field(
        None, ge=1, description="The character column (1-based), when symbol is not given."
    )

    @model_validator(mode="after")
    def _where(self) -> PositionInput:
        if self.symbol is None and self.column is None:
            raise ValueError("give symbol (the name on that line) or column")
        return self


PositionT = TypeVar("PositionT", bound=PositionInput)


class ReferencesInput(PositionInput):
    include_declaration: bool = Field(True, description="Also list the declaration itself.")


class SymbolsInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: PathText | None = Field(
        None, description="List this file's symbols (an outline). Give path or query."
    )
    query: str | None = Field(
        None,
        max_length=200,
        description="Search the workspace's symbols by name instead of listing one file.",
    )

    @model_validator(mode="after")
    def _one(self) -> SymbolsInput:
        if (self.path is None) == (self.query is None):
            raise ValueError(
                "give either path (one file's symbols) or query (search the workspace)"
            )
        return self


class DiagnosticsInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: PathText | None = Field(
        None, description="The file to check; leave it out for every file of the workspace."
    )


class LspTool(CompactSchema[ArgsT]):
    """Base: finds the session's servers for a file and asks them, with deadlines."""

    effects = frozenset({Effect.READ})
    mutating = False
    method = ""  # the capability a server must have (ServerCapabilities attribute)
    whole_workspace = True  # answers may name any file of the project

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel

    def manager(self, ctx: ToolContext) -> Manager:
        from ketch_lsp.runtime import manager

        return manager(self.kernel, ctx.workspace)

    def resolved(self, ctx: ToolContext, path: str) -> Path:
        from ketch_tool_kit.paths import resolve

        return resolve(ctx.workspace, path)

    def accesses(self, args: Any, ctx: ToolContext) -> list[Access]:
        out: list[Access] = []
        path = getattr(args, "path", None)
        if path is not None:
            out.append(Access(effect=Effect.READ, target=str(self.resolved(ctx, path))))
        if self.whole_workspace or path is None:
            from ketch_tool_kit.paths import workspace_root

            out.append(Access(effect=Effect.READ, target=str(workspace_root(ctx.workspace))))
        return out

    # --- helpers -----------------------------------------------------------------------

    def shown(self, ctx: ToolContext, path: Path) -> str:
        from ketch_tool_kit.paths import display

        return display(path, ctx.workspace)

    def session(self, ctx: ToolContext) -> Any:
        from ketch_lsp.sessions import session_of

        return session_of(self.kernel, ctx.session_id)

    def pick(self, ctx: ToolContext, path: Path) -> tuple[Manager, list[Server]] | ToolResult:
        """The servers for ``path`` that offer this tool's method, started if need be."""
        found = self.manager(ctx)
        specs = found.specs_for(path)
        if not specs:
            return ToolResult.error(self.no_server(found, path, ctx))
        servers = []
        for spec in specs:
            server = found.server(spec, path)
            if found.launch(server, self.session(ctx)):
                servers.append(server)
        self.tell(found, ctx)
        if not servers:
            reasons = [
                found.off.get(s.name) or found.server(s, path).last_error or "not started"
                for s in specs
            ]
            return ToolResult.error(
                f"No language server is running for {self.shown(ctx, path)}: {'; '.join(reasons)}."
            )
        return found, servers

    def no_server(self, found: Manager, path: Path, ctx: ToolContext) -> str:
        shown = self.shown(ctx, path)
        missing = [s for s in found.specs if s.serves(path) and not s.found]
        if missing:
            return f"No language server for {shown} is installed (looked for {missing[0].wanted})."
        return f"No language server is configured for files like {shown}."

    def tell(self, found: Manager, ctx: ToolContext) -> None:
        from ketch.api import NoticeEvent

        for message in found.failures():
            ctx.emit(NoticeEvent(level="warning", message=message))

    def text(self, ctx: ToolContext, path: Path) -> str | ToolResult:
        from ketch_lsp.edits import read_text

        if not path.is_file():
            return ToolResult.error(f"{self.shown(ctx, path)} is not a file.")
        text = read_text(path)
        if text is None:
            return ToolResult.error(
                f"{self.shown(ctx, path)} is not a text file a language server is given "
                "(binary, larger than 2 MB, or a secret)."
            )
        return text

    def position(self, args: PositionInput, text: str) -> tuple[int, int] | str:
        """(0-based line, UTF-16 character) of the input, or why it is not on the file."""
        from ketch_lsp.positions import lines_of, symbol_column, utf16_column

        lines = lines_of(text)
        if args.line > len(lines):
            return f"the file has {len(lines)} lines; line {args.line} is past its end"
        line_text = lines[args.line - 1]
        if args.symbol is not None:
            index = symbol_column(line_text, args.symbol, args.occurrence)
            if index is None:
                return (
                    f"{args.symbol!r} does not occur on line {args.line}"
                    + (f" {args.occurrence} times" if args.occurrence > 1 else "")
                    + f" (the line is: {line_text.strip()[:200]!r})"
                )
        else:
            index = min(int(args.column or 1) - 1, len(line_text))
        return args.line - 1, utf16_column(line_text, index)

    async def ask(
        self,
        ctx: ToolContext,
        servers: list[Server],
        path: Path,
        text: str,
        request: Any,
        method: str | None = None,
        related: list[tuple[Path, str]] | None = None,
    ) -> tuple[Server, Any] | ToolResult:
        """Run ``request(client)`` on the first server that offers the method, within the
        request deadline (its start included)."""
        from ketch_lsp.client import ServerGone
        from ketch_lsp.work import remaining, synced

        found = self.manager(ctx)
        timeout = found.settings.request_timeout
        deadline = time.monotonic() + timeout
        method = method or self.method

        async def work() -> tuple[Server, Any] | str:
            problems: list[str] = []
            for server in servers:
                try:
                    await synced(found, server, path, text, deadline)
                    for other, content in related or ():
                        server.sync(other, content)
                except TimeoutError:
                    problems.append(f"{server.spec.name} is still starting")
                    continue
                except ServerGone as exc:
                    problems.append(f"{server.spec.name}: {exc}")
                    continue
                if method and not getattr(server.capabilities, method, None):
                    problems.append(f"{server.spec.name} does not offer this")
                    continue
                try:
                    return server, await server.request(request, remaining(deadline))
                except TimeoutError:
                    problems.append(f"{server.spec.name} did not answer within {timeout:g} s")
                except ServerGone as exc:
                    problems.append(f"{server.spec.name}: {exc}")
                except Exception as exc:  # noqa: BLE001 - an error answer is the result
                    problems.append(f"{server.spec.name} answered with an error: {_brief(exc)}")
            return "; ".join(problems) or "no server answered"

        try:
            answer = await found.thread.run(work(), timeout + 1.0)
        except TimeoutError:
            answer = f"no language server answered within {timeout:g} s"
        self.tell(found, ctx)
        if isinstance(answer, str):
            return ToolResult.error(f"[lsp] {answer}.")
        return answer

    def excerpt(
        self, ctx: ToolContext, path: Path, line: int, cache: dict[Path, list[str] | None]
    ) -> str:
        """The text of ``line`` (0-based) of ``path``, for files inside the workspace that
        are not secrets; "" otherwise."""
        if path not in cache:
            from ketch_lsp.edits import read_text
            from ketch_lsp.positions import lines_of
            from ketch_tool_kit.paths import is_within, workspace_root

            inside = is_within(path, workspace_root(ctx.workspace))
            text = read_text(path) if inside else None
            cache[path] = lines_of(text) if text is not None else None
        lines = cache[path]
        if lines is None or not 0 <= line < len(lines):
            return ""
        shown = lines[line].strip()
        return shown if len(shown) <= EXCERPT_CHARS else shown[: EXCERPT_CHARS - 1] + "…"

    def locations(self, ctx: ToolContext, found: Any, limit: int) -> list[str]:
        from ketch_lsp.positions import path_of

        items = found if isinstance(found, list | tuple) else [found] if found else []
        cache: dict[Path, list[str] | None] = {}
        out = []
        for item in items[:limit]:
            uri = str(getattr(item, "uri", None) or getattr(item, "target_uri", None) or "")
            rng = getattr(item, "range", None) or getattr(item, "target_selection_range", None)
            path = path_of(uri)
            if path is None or rng is None:
                out.append(f"{uri}")
                continue
            where = f"{self.shown(ctx, path)}:{rng.start.line + 1}:{rng.start.character + 1}"
            text = self.excerpt(ctx, path, rng.start.line, cache)
            out.append(f"{where}: {text}" if text else where)
        if len(items) > limit:
            out.append(f"... and {len(items) - limit} more")
        return out


class _PositionTool(LspTool[PositionT]):
    def summary(self, args: PositionT) -> str:
        what = args.symbol if args.symbol is not None else f"column {args.column}"
        return f"{self.name} of {what} at {args.path}:{args.line}"

    async def prepare(
        self, args: PositionT, ctx: ToolContext
    ) -> tuple[list[Server], Path, str, tuple[str, int, int]] | ToolResult:
        from ketch_lsp.positions import uri_of

        path = self.resolved(ctx, args.path)
        text = self.text(ctx, path)
        if isinstance(text, ToolResult):
            return text
        where = self.position(args, text)
        if isinstance(where, str):
            return ToolResult.error(f"{self.shown(ctx, path)}: {where}.")
        picked = self.pick(ctx, path)
        if isinstance(picked, ToolResult):
            return picked
        return picked[1], path, text, (uri_of(path), where[0], where[1])

    async def run(self, args: PositionT, ctx: ToolContext) -> ToolResult:
        prepared = await self.prepare(args, ctx)
        if isinstance(prepared, ToolResult):
            return prepared
        servers, path, text, (uri, line, character) = prepared
        related = (
            await asyncio.to_thread(self.related, args, ctx, path, text) if self.cross_file else []
        )
        answer = await self.ask(
            ctx, servers, path, text, self.request(args, uri, line, character), related=related
        )
        if isinstance(answer, ToolResult):
            return answer
        return self.render(ctx, answer[1])

    cross_file = False  # the answer names uses in other files (references, rename)

    def related(
        self, args: PositionInput, ctx: ToolContext, path: Path, text: str
    ) -> list[tuple[Path, str]]:
        """The other files that name the symbol (see :func:`ketch_lsp.check.mentioning`)."""
        from ketch_lsp.check import mentioning
        from ketch_lsp.positions import lines_of

        word = args.symbol
        if word is None:
            import re

            line = lines_of(text)[args.line - 1] if args.line <= len(lines_of(text)) else ""
            column = int(args.column or 1) - 1
            found = next(
                (m.group() for m in re.finditer(r"\w+", line) if m.start() <= column < m.end()),
                "",
            )
            word = found
        return mentioning(self.manager(ctx), ctx.workspace, word, path)

    def request(self, args: Any, uri: str, line: int, character: int) -> Callable[[Any], Any]:
        """The request to send (built on the LSP thread, where lsprotocol lives)."""
        raise NotImplementedError

    def render(self, ctx: ToolContext, answer: Any) -> ToolResult:
        raise NotImplementedError


class Definition(_PositionTool[PositionInput]):
    name = "definition"
    description = (
        "Where a name is defined (a language server's go-to-definition): give the file, the "
        "line and the name on that line. Returns file:line:column locations with their line."
    )
    input_model = PositionInput
    method = "definition_provider"

    def request(self, args: Any, uri: str, line: int, character: int) -> Callable[[Any], Any]:
        from ketch_lsp import requests

        return lambda c: requests.definition(c, uri, line, character)

    def render(self, ctx: ToolContext, answer: Any) -> ToolResult:
        lines = self.locations(ctx, answer, self.manager(ctx).settings.max_results)
        return ToolResult.success("\n".join(lines) if lines else "No definition found.")


class References(_PositionTool[ReferencesInput]):
    name = "references"
    description = (
        "Every place a name is used, across the project (a language server's find-references): "
        "give the file, the line and the name on that line."
    )
    input_model = ReferencesInput
    method = "references_provider"
    cross_file = True

    def request(self, args: Any, uri: str, line: int, character: int) -> Callable[[Any], Any]:
        from ketch_lsp import requests

        declaration = args.include_declaration
        return lambda c: requests.references(c, uri, line, character, declaration)

    def render(self, ctx: ToolContext, answer: Any) -> ToolResult:
        found = sorted(
            answer or [],
            key=lambda loc: (loc.uri, loc.range.start.line, loc.range.start.character),
        )
        if not found:
            return ToolResult.success("No references found.")
        limit = self.manager(ctx).settings.max_results
        files = len({loc.uri for loc in found})
        head = f"{len(found)} reference{'s' if len(found) != 1 else ''} in {files} file{'s' if files != 1 else ''}:"
        return ToolResult.success("\n".join([head, *self.locations(ctx, found, limit)]))


class Hover(_PositionTool[PositionInput]):
    name = "hover"
    description = (
        "The type and documentation of a name (a language server's hover): give the file, the "
        "line and the name on that line."
    )
    input_model = PositionInput
    method = "hover_provider"

    def request(self, args: Any, uri: str, line: int, character: int) -> Callable[[Any], Any]:
        from ketch_lsp import requests

        return lambda c: requests.hover(c, uri, line, character)

    def render(self, ctx: ToolContext, answer: Any) -> ToolResult:
        shown = _hover_text(answer)
        if not shown:
            return ToolResult.success("Nothing is known about that position.")
        if len(shown) > HOVER_CHARS:
            shown = shown[:HOVER_CHARS] + f"\n[cut: {len(shown) - HOVER_CHARS} more characters]"
        return ToolResult.success(shown)


class Symbols(LspTool[SymbolsInput]):
    name = "symbols"
    description = (
        "The symbols (classes, functions, variables) of one file as an outline (give path), or "
        "the project's symbols whose name matches a query (give query)."
    )
    input_model = SymbolsInput

    def summary(self, args: SymbolsInput) -> str:
        return f"symbols of {args.path}" if args.path else f"symbols matching {args.query!r}"

    async def run(self, args: SymbolsInput, ctx: ToolContext) -> ToolResult:
        if args.path is not None:
            return await self._document(args.path, ctx)
        return await self._workspace(args.query or "", ctx)

    async def _document(self, raw: str, ctx: ToolContext) -> ToolResult:
        from ketch_lsp import requests
        from ketch_lsp.positions import uri_of

        path = self.resolved(ctx, raw)
        text = self.text(ctx, path)
        if isinstance(text, ToolResult):
            return text
        picked = self.pick(ctx, path)
        if isinstance(picked, ToolResult):
            return picked
        uri = uri_of(path)
        answer = await self.ask(
            ctx,
            picked[1],
            path,
            text,
            lambda c: requests.document_symbols(c, uri),
            method="document_symbol_provider",
        )
        if isinstance(answer, ToolResult):
            return answer
        limit = self.manager(ctx).settings.max_results
        lines: list[str] = []
        _outline(answer[1] or [], 0, lines)
        if not lines:
            return ToolResult.success(f"{self.shown(ctx, path)} has no symbols.")
        more = len(lines) - limit
        return ToolResult.success(
            "\n".join(lines[:limit] + ([f"... and {more} more"] if more > 0 else []))
        )

    async def _workspace(self, query: str, ctx: ToolContext) -> ToolResult:
        from ketch_lsp import requests
        from ketch_lsp.client import READY, STARTING

        found = self.manager(ctx)
        # Any running server that offers workspace symbols; else start the first found.
        servers = [s for s in found.servers.values() if s.state in (READY, STARTING)]
        if not servers:
            for spec in found.specs:
                if spec.found and found.allowed(spec):
                    server = found.server(spec, ctx.workspace / "x")
                    if found.launch(server, self.session(ctx)):
                        servers.append(server)
        self.tell(found, ctx)
        if not servers:
            return ToolResult.error("[lsp] No language server is available in this workspace.")
        timeout = found.settings.request_timeout
        deadline = time.monotonic() + timeout

        async def work() -> list[str] | str:
            from ketch_lsp.work import remaining

            problems: list[str] = []
            for server in servers:
                if not await found.ready(server, deadline):
                    problems.append(f"{server.spec.name} is {server.state}")
                    continue
                if not getattr(server.capabilities, "workspace_symbol_provider", None):
                    continue
                try:
                    result = await server.request(
                        lambda c: requests.workspace_symbols(c, query),
                        remaining(deadline),
                    )
                except Exception as exc:  # noqa: BLE001
                    problems.append(f"{server.spec.name}: {_brief(exc)}")
                    continue
                return [_symbol_line(self, ctx, s) for s in (result or [])]
            return "; ".join(problems) or "no running server searches the workspace's symbols"

        try:
            answer = await found.thread.run(work(), timeout + 1.0)
        except TimeoutError:
            answer = f"no language server answered within {timeout:g} s"
        if isinstance(answer, str):
            return ToolResult.error(f"[lsp] {answer}.")
        if not answer:
            return ToolResult.success(f"No symbol matches {query!r}.")
        limit = found.settings.max_results
        more = len(answer) - limit
        return ToolResult.success(
            "\n".join(answer[:limit] + ([f"... and {more} more"] if more > 0 else []))
        )


def _kind(kind: Any) -> str:
    try:
        from lsprotocol import types as T

        return T.SymbolKind(kind).name.lower()
    except (ValueError, TypeError):
        return "symbol"


def _outline(symbols: list[Any], depth: int, out: list[str]) -> None:
    for symbol in symbols:
        rng = getattr(symbol, "selection_range", None) or getattr(
            getattr(symbol, "location", None), "range", None
        )
        line = f" (line {rng.start.line + 1})" if rng is not None else ""
        detail = getattr(symbol, "detail", None)
        extra = f" {detail}" if detail and len(detail) < 120 else ""
        out.append(f"{'  ' * depth}{_kind(symbol.kind)} {symbol.name}{extra}{line}")
        _outline(list(getattr(symbol, "children", None) or []), depth + 1, out)


def _symbol_line(tool: LspTool, ctx: ToolContext, symbol: Any) -> str:
    from ketch_lsp.positions import path_of

    location = symbol.location
    uri = getattr(location, "uri", "")
    path = path_of(uri)
    rng = getattr(location, "range", None)
    where = tool.shown(ctx, path) if path is not None else uri
    if rng is not None:
        where += f":{rng.start.line + 1}"
    container = f" (in {symbol.container_name})" if getattr(symbol, "container_name", None) else ""
    return f"{_kind(symbol.kind)} {symbol.name}{container} — {where}"


def _hover_text(hover: Any) -> str:
    contents = getattr(hover, "contents", None)
    if contents is None:
        return ""
    parts = contents if isinstance(contents, list | tuple) else [contents]
    texts = []
    for part in parts:
        if isinstance(part, str):
            texts.append(part)
        else:
            texts.append(str(getattr(part, "value", "")))
    return "\n\n".join(t.strip() for t in texts if t and t.strip())


def _brief(exc: BaseException) -> str:
    text = " ".join(str(exc).split())[:200]
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class Diagnostics(LspTool[DiagnosticsInput]):
    name = "diagnostics"
    description = (
        "The errors and warnings language servers report for one file (give path) or for every "
        "file of the workspace they serve (leave path out; may take a while on a large project)."
    )
    input_model = DiagnosticsInput
    whole_workspace = False

    def summary(self, args: DiagnosticsInput) -> str:
        return f"diagnostics of {args.path}" if args.path else "diagnostics of the workspace"

    async def run(self, args: DiagnosticsInput, ctx: ToolContext) -> ToolResult:
        from ketch_lsp.check import check_files

        found = self.manager(ctx)
        if args.path is not None:
            path = self.resolved(ctx, args.path)
            text = self.text(ctx, path)
            if isinstance(text, ToolResult):
                return text
            if not found.specs_for(path):
                return ToolResult.error(self.no_server(found, path, ctx))
            files = [path]
        else:
            from ketch_lsp.check import served_files

            files = await asyncio.to_thread(served_files, found, ctx.workspace)
            if not files:
                return ToolResult.success(
                    "No file of the workspace is served by a language server."
                )
        report = await check_files(found, self.session(ctx), files, ctx)
        self.tell(found, ctx)
        return report
