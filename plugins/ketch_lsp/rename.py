"""``rename``: a language server's rename, applied by ketch like an edit.

The server is asked for the workspace edit while the call is described to the policy
(``accesses``: a READ and a WRITE of every file the edit touches, so a file outside the
workspace or a protected one asks as it would for ``edit_file``); the person approves
the multi-file diff (``preview``); the loop checkpoints the workspace before the call
(``/undo`` reverts it); ``run`` writes exactly the planned files through the one write
path (``ketch_tool_kit.writing``: atomic, never through a symlink, the session's file
backend) after checking that none changed since it was planned. A server never writes
a file itself (``workspace/applyEdit`` is refused), and an edit that would create,
rename or delete files is refused.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import Field

from ketch.api import Access, Effect, ToolContext, ToolResult
from ketch_lsp.tools import PositionInput, _brief, _PositionTool

if TYPE_CHECKING:  # pragma: no cover
    from ketch_tool_kit.writing import Fingerprint

MAX_PLANS = 64
MAX_FILES = 200


class RenameInput(PositionInput):
    new_name: str = Field(min_length=1, max_length=200, description="The new name.")


@dataclass
class FilePlan:
    path: Path
    shown: str
    fingerprint: Fingerprint
    previous: os.stat_result | None
    data: bytes  # the new content, in the file's own encoding and line endings
    diff: str
    edits: int


@dataclass
class Plan:
    files: list[FilePlan] = field(default_factory=list)
    error: str = ""
    server: str = ""

    @property
    def diff(self) -> str:
        return "".join(f.diff for f in self.files)


class Rename(_PositionTool[RenameInput]):
    name = "rename"
    description = (
        "Rename a symbol everywhere it is used, across files (a language server's rename): give "
        "the file, the line, the current name on that line and new_name. The person sees the "
        "multi-file diff before it is applied; /undo reverts it. Read a changed file again before "
        "editing it with edit_file."
    )
    input_model = RenameInput
    effects = frozenset({Effect.READ, Effect.WRITE})
    mutating = True
    method = "rename_provider"
    cross_file = True

    def __init__(self, kernel: Any) -> None:
        super().__init__(kernel)
        self.plans: OrderedDict[tuple[str, str, str], Plan] = OrderedDict()

    def summary(self, args: RenameInput) -> str:
        what = args.symbol if args.symbol is not None else f"column {args.column}"
        return f"rename {what} at {args.path}:{args.line} to {args.new_name}"

    def _key(self, args: RenameInput, ctx: ToolContext) -> tuple[str, str, str]:
        return (ctx.session_id, ctx.tool_call_id, args.model_dump_json())

    def accesses(self, args: RenameInput, ctx: ToolContext) -> list[Access]:
        key = self._key(args, ctx)
        plan = self.plans.get(key)
        if plan is None:
            plan = self.plan(args, ctx)
            self.plans[key] = plan
            while len(self.plans) > MAX_PLANS:
                self.plans.popitem(last=False)
        target = str(self.resolved(ctx, args.path))
        out = [Access(effect=Effect.READ, target=target)]
        for item in plan.files:
            out.append(Access(effect=Effect.READ, target=str(item.path)))
            out.append(Access(effect=Effect.WRITE, target=str(item.path)))
        return list({(a.effect, a.target): a for a in out}.values())

    async def preview(self, args: RenameInput, ctx: ToolContext) -> str | None:
        plan = self.plans.get(self._key(args, ctx))
        if plan is None:
            return None
        if plan.error:
            return f"(this call will fail: {plan.error})"
        return plan.diff or "(no change)"

    # --- planning (synchronous: the policy needs the paths before it votes) ---------------

    def plan(self, args: RenameInput, ctx: ToolContext) -> Plan:
        """Ask the server for the edit and work out every file's new content. Blocks
        the caller at most the request deadline (the server's start included)."""
        from ketch_lsp import requests
        from ketch_lsp.edits import read_text
        from ketch_lsp.positions import uri_of

        path = self.resolved(ctx, args.path)
        text = self.text(ctx, path)
        if isinstance(text, ToolResult):
            return Plan(error=text.output)
        where = self.position(args, text)
        if isinstance(where, str):
            return Plan(error=f"{self.shown(ctx, path)}: {where}")
        picked = self.pick(ctx, path)
        if isinstance(picked, ToolResult):
            return Plan(error=picked.output)
        found, servers = picked
        timeout = found.settings.request_timeout
        deadline = time.monotonic() + timeout
        uri, new_name = uri_of(path), args.new_name
        # Open documents first made to match the disk: the edit must fit the files as
        # they are (a command may have changed one since the server last heard of it).
        # And every file that names the symbol is handed over (a server that just
        # started has not indexed them yet).
        disk = {p: read_text(p) for s in servers for p in _open_paths(s)}
        disk.update(dict(self.related(args, ctx, path, text)))

        async def work() -> tuple[str, Any] | str:
            from ketch_lsp.client import ServerGone
            from ketch_lsp.work import remaining, synced

            problems = []
            for server in servers:
                try:
                    await synced(found, server, path, text, deadline)
                    for other, content in disk.items():
                        if content is not None and other != path:
                            server.sync(other, content)
                    if not getattr(server.capabilities, self.method, None):
                        problems.append(f"{server.spec.name} does not rename")
                        continue
                    edit = await server.request(
                        lambda c: requests.rename(c, uri, where[0], where[1], new_name),
                        remaining(deadline),
                    )
                    return server.spec.name, edit
                except TimeoutError:
                    problems.append(f"{server.spec.name} did not answer within {timeout:g} s")
                except ServerGone as exc:
                    problems.append(f"{server.spec.name}: {exc}")
                except Exception as exc:  # noqa: BLE001 - the server's refusal is the answer
                    problems.append(f"{server.spec.name} refused: {_brief(exc)}")
            return "; ".join(problems) or "no server answered"

        try:
            answer = found.thread.call(work(), timeout + 1.0)
        except TimeoutError:
            answer = f"no language server answered within {timeout:g} s"
        self.tell(found, ctx)
        if isinstance(answer, str):
            return Plan(error=f"[lsp] {answer}")
        server_name, edit = answer
        if edit is None:
            return Plan(error=f"{server_name} found nothing to rename there", server=server_name)
        return self._files(ctx, edit, server_name)

    def _files(self, ctx: ToolContext, edit: Any, server_name: str) -> Plan:
        from ketch_lsp.positions import path_of

        per_file: dict[str, list[Any]] = {}
        for uri, edits in (getattr(edit, "changes", None) or {}).items():
            per_file.setdefault(uri, []).extend(edits)
        for change in getattr(edit, "document_changes", None) or []:
            document = getattr(change, "text_document", None)
            if document is None:  # CreateFile, RenameFile, DeleteFile
                return Plan(
                    error=f"{server_name}'s rename would also create, rename or delete files; "
                    "ketch applies text edits only. Rename the files yourself (shell mv) and the "
                    "symbol with edit_file.",
                    server=server_name,
                )
            per_file.setdefault(document.uri, []).extend(change.edits)
        if len(per_file) > MAX_FILES:
            return Plan(error=f"the rename touches {len(per_file)} files (at most {MAX_FILES})")
        plan = Plan(server=server_name)
        for uri, edits in sorted(per_file.items()):
            path = path_of(uri)
            if path is None:
                return Plan(error=f"{server_name} wants to edit {uri}, which is not a local file")
            planned = self._file(ctx, path, edits)
            if isinstance(planned, str):
                return Plan(error=planned, server=server_name)
            if planned is not None:
                plan.files.append(planned)
        if not plan.files:
            plan.error = f"{server_name}'s rename changes nothing"
        return plan

    def _file(self, ctx: ToolContext, path: Path, edits: list[Any]) -> FilePlan | str | None:
        from ketch_lsp.positions import offset_at
        from ketch_tool_kit.paths import PathProblem
        from ketch_tool_kit.textfile import BinaryFile, TextFile
        from ketch_tool_kit.writing import read_existing, unified_diff

        shown = self.shown(ctx, path)
        try:
            existing = read_existing(path)
        except (OSError, PathProblem) as exc:
            return f"{shown}: {exc}"
        if existing is None:
            return f"{shown} does not exist"
        fingerprint, data, previous = existing
        try:
            current = TextFile.from_bytes(data)
        except BinaryFile:
            return f"{shown} is a binary file"
        text = current.text
        spans = []
        for edit in edits:
            start = offset_at(text, edit.range.start.line, edit.range.start.character)
            end = offset_at(text, edit.range.end.line, edit.range.end.character)
            spans.append((start, max(start, end), edit.new_text))
        spans.sort(key=lambda s: (s[0], s[1]))
        for (_, end_a, _), (start_b, _, _) in zip(spans, spans[1:], strict=False):
            if start_b < end_a:
                return f"the server's edits of {shown} overlap; nothing was planned"
        new_text = text
        for start, end, replacement in reversed(spans):
            new_text = new_text[:start] + replacement + new_text[end:]
        if new_text == text:
            return None
        try:
            new_data = current.encoding.encode(new_text)
        except UnicodeEncodeError:
            return f"{shown}'s encoding ({current.encoding.label}) cannot hold the new name"
        diff = unified_diff(
            text.replace("\r\n", "\n"), new_text.replace("\r\n", "\n"), shown, max_chars=200_000
        )
        return FilePlan(path, shown, fingerprint, previous, new_data, diff, len(spans))

    # --- applying ------------------------------------------------------------------------

    async def run(self, args: RenameInput, ctx: ToolContext) -> ToolResult:
        plan = self.plans.pop(self._key(args, ctx), None)
        if plan is None:
            return ToolResult.error(
                "[lsp] This rename was not planned before it was approved; nothing was changed. Call it again."
            )
        if plan.error:
            return ToolResult.error(plan.error)
        return await asyncio.to_thread(self._apply, plan, ctx, args)

    def _apply(self, plan: Plan, ctx: ToolContext, args: RenameInput) -> ToolResult:
        from ketch_tool_kit.files import backend_for
        from ketch_tool_kit.paths import PathProblem
        from ketch_tool_kit.writing import diff_stats, read_existing, write_atomic

        backend = backend_for(ctx.session_id)
        for item in plan.files:  # all checked before any is written
            try:
                now = read_existing(item.path, backend)
            except (OSError, PathProblem) as exc:
                return ToolResult.error(f"{item.shown}: {exc}; nothing was changed.")
            if now is None or not now[0].same_content(item.fingerprint):
                return ToolResult.error(
                    f"{item.shown} changed after the rename was planned; nothing was changed. Call rename again."
                )
        written: list[str] = []
        for item in plan.files:
            try:
                write_atomic(item.path, item.data, previous=item.previous, backend=backend)
            except (OSError, PathProblem) as exc:
                done = (
                    f" ({', '.join(written)} were changed; /undo reverts them)" if written else ""
                )
                return ToolResult.error(
                    f"{item.shown}: {exc}; the rename stopped there{done}.", diff=plan.diff
                )
            written.append(item.shown)
        edits = sum(f.edits for f in plan.files)
        what = args.symbol if args.symbol is not None else "the symbol"
        lines = [
            f"Renamed {what} to {args.new_name} ({plan.server}): {edits} edit{'s' if edits != 1 else ''} "
            f"in {len(plan.files)} file{'s' if len(plan.files) != 1 else ''}:"
        ]
        for item in plan.files:
            added, removed = diff_stats(item.diff)
            lines.append(f"  {item.shown} (+{added} -{removed})")
        lines.append("Read a file again before editing it with edit_file: its content changed.")
        return ToolResult.success("\n".join(lines), diff=plan.diff)


def _open_paths(server: Any) -> list[Path]:
    from ketch_lsp.positions import path_of

    return [p for p in (path_of(uri) for uri in list(server.docs)) if p is not None]
