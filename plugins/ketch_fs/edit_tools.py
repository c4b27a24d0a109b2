"""``write_file`` and ``edit_file``: changes behind the read-coverage guard, each with a diff.

An existing file keeps its encoding (BOM included) and, when every line ended in
CRLF, its CRLF line endings; the model always works with LF text.
"""

from __future__ import annotations

import asyncio
import difflib
import os
import re
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from ketch.api import Access, Effect, ToolContext, ToolResult
from ketch_fs import coverage
from ketch_fs.reading import Fingerprint, count_lines
from ketch_tool_kit.base import FsTool, PathText, os_error
from ketch_tool_kit.caps import human_size, tool_settings
from ketch_tool_kit.files import backend_for
from ketch_tool_kit.paths import PathProblem
from ketch_tool_kit.textfile import BinaryFile, TextFile, unencodable_message
from ketch_tool_kit.writing import diff_stats, read_existing, unified_diff, write_atomic


class WriteSettings(BaseModel):
    max_diff_chars: int = Field(200_000, ge=1_000)  # the diff in the event, for the user
    max_edit_bytes: int = Field(10 << 20, ge=1 << 10)
    snippet_lines: int = Field(16, ge=0, le=500)  # edited lines echoed back to the model
    snippet_line_chars: int = Field(300, ge=40)


class WriteFileInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: PathText = Field(
        description="The file to create or overwrite: relative to the workspace root, or absolute. Missing directories are created."
    )
    content: str = Field(description="The complete new content of the file.")


class EditFileInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: PathText = Field(
        description="The file to edit: relative to the workspace root, or absolute."
    )
    old_string: str = Field(
        min_length=1,
        description="The exact text to replace, copied from the file without line numbers, including whitespace and indentation. It must occur exactly once unless replace_all is true; include surrounding lines to make it unique.",
    )
    new_string: str = Field(description="The text to put in its place.")
    replace_all: bool = Field(
        False, description="Replace every occurrence instead of requiring exactly one."
    )


def _guard(ctx: ToolContext, path: Path, shown: str, fp: Fingerprint, text: TextFile) -> str | None:
    return coverage.check(ctx.plugin_state("fs"), path, shown, fp, count_lines(text.lf_text()))


class WriteFile(FsTool[WriteFileInput]):
    name = "write_file"
    description = (
        "Create a file, or replace all of an existing file's content. Prefer edit_file for changes to "
        "existing files. Overwriting an existing file needs it to have been read in full (read_file) in "
        "this session, and unchanged on disk since. Its encoding and CRLF line endings are kept."
    )
    input_model = WriteFileInput
    effects = frozenset({Effect.WRITE})
    mutating = True

    def accesses(self, args: WriteFileInput, ctx: ToolContext) -> list[Access]:
        path = self.target(args, ctx)
        self.remember(ctx, path)
        return [Access(effect=Effect.WRITE, target=str(path))]

    def summary(self, args: WriteFileInput) -> str:
        return f"write {args.path} ({count_lines(args.content)} lines)"

    async def preview(self, args: WriteFileInput, ctx: ToolContext) -> str | None:
        """The diff this call would write (computed exactly as ``run`` does, nothing written)."""
        path = self.target(args, ctx)
        cfg = tool_settings(ctx, "write_file", WriteSettings)
        plan = await asyncio.to_thread(
            _plan_write, path, self.shown(path, ctx), args.content, ctx, cfg
        )
        return _preview_text(plan)

    async def run(self, args: WriteFileInput, ctx: ToolContext) -> ToolResult:
        checked = self.checked_target(args, ctx)
        if isinstance(checked, ToolResult):
            return checked
        path, shown = checked, self.shown(checked, ctx)
        cfg = tool_settings(ctx, "write_file", WriteSettings)
        try:
            return await asyncio.to_thread(self._write, path, shown, args.content, ctx, cfg)
        except (OSError, PathProblem) as exc:
            return os_error(exc, shown)

    def _write(
        self, path: Path, shown: str, content: str, ctx: ToolContext, cfg: WriteSettings
    ) -> ToolResult:
        plan = _plan_write(path, shown, content, ctx, cfg)
        if isinstance(plan, ToolResult):
            return plan
        if plan.data is None:  # the same content: nothing to write
            assert plan.fingerprint is not None
            coverage.record_written(ctx.plugin_state("fs"), path, plan.fingerprint, plan.lines)
            return ToolResult.success(f"{shown} already has exactly this content; nothing changed.")
        new_fp = write_atomic(
            path, plan.data, previous=plan.previous, backend=backend_for(ctx.session_id)
        )
        coverage.record_written(ctx.plugin_state("fs"), path, new_fp, plan.lines)
        lines = plan.lines
        if plan.created:
            return ToolResult.success(
                f"Created {shown} ({lines} line{'s' if lines != 1 else ''}, {human_size(len(plan.data))}).",
                diff=plan.diff,
            )
        added, removed = diff_stats(plan.diff)
        return ToolResult.success(
            f"Overwrote {shown} (+{added} -{removed} lines; now {lines} lines).", diff=plan.diff
        )


@dataclass
class WritePlan:
    """What a write or an edit will do, worked out without touching the file: the bytes
    to write (None: nothing changes), the diff, and what ``run`` needs to finish."""

    data: bytes | None
    diff: str
    lines: int  # lines of the new content
    previous: os.stat_result | None = None
    fingerprint: Fingerprint | None = None  # the current file's, when it exists
    created: bool = False
    message: str = ""  # extra detail for the result (an edit's replaced count and snippet)


def _preview_text(plan: WritePlan | ToolResult) -> str:
    if isinstance(plan, ToolResult):  # the call would fail: say so before anyone approves it
        return f"(this call will fail: {plan.output})"
    if plan.data is None:
        return "(no change: the file already has exactly this content)"
    return plan.diff or "(no visible change)"


def _plan_write(
    path: Path, shown: str, content: str, ctx: ToolContext, cfg: WriteSettings
) -> WritePlan | ToolResult:
    existing = read_existing(path, backend_for(ctx.session_id))
    lines = count_lines(content)
    if existing is None:
        diff = unified_diff(
            None, content.replace("\r\n", "\n"), shown, max_chars=cfg.max_diff_chars
        )
        return WritePlan(data=content.encode("utf-8"), diff=diff, lines=lines, created=True)
    fp, old_bytes, previous = existing
    try:
        current = TextFile.from_bytes(old_bytes)
    except BinaryFile as exc:
        return ToolResult.error(
            f"{shown} is a binary file ({exc}); write_file will not replace it with text."
        )
    refusal = _guard(ctx, path, shown, fp, current)
    if refusal:
        return ToolResult.error(refusal)
    old_text = current.lf_text()
    try:
        data = current.to_bytes(content)
    except UnicodeEncodeError as exc:
        return ToolResult.error(
            f"{shown}: {unencodable_message(exc, current.encoding)}; nothing was written."
        )
    if data == old_bytes:
        return WritePlan(data=None, diff="", lines=lines, previous=previous, fingerprint=fp)
    diff = unified_diff(
        old_text, content.replace("\r\n", "\n"), shown, max_chars=cfg.max_diff_chars
    )
    return WritePlan(data=data, diff=diff, lines=lines, previous=previous, fingerprint=fp)


class EditFile(FsTool[EditFileInput]):
    name = "edit_file"
    description = (
        "Replace an exact piece of text in an existing file. old_string must match the file exactly "
        "(whitespace included, without read_file's line numbers) and occur once, unless replace_all is "
        "true. The file must have been read in full (read_file) in this session and be unchanged on disk "
        "since. Encoding and line endings are kept."
    )
    input_model = EditFileInput
    effects = frozenset({Effect.READ, Effect.WRITE})
    mutating = True

    def accesses(self, args: EditFileInput, ctx: ToolContext) -> list[Access]:
        path = self.target(args, ctx)
        self.remember(ctx, path)
        # An edit echoes part of the file back: it reads as well as writes.
        return [
            Access(effect=Effect.READ, target=str(path)),
            Access(effect=Effect.WRITE, target=str(path)),
        ]

    def summary(self, args: EditFileInput) -> str:
        return f"edit {args.path}" + (" (every occurrence)" if args.replace_all else "")

    async def preview(self, args: EditFileInput, ctx: ToolContext) -> str | None:
        """The diff this edit would make (computed exactly as ``run`` does, nothing written)."""
        path = self.target(args, ctx)
        cfg = tool_settings(ctx, "write_file", WriteSettings)
        plan = await asyncio.to_thread(_plan_edit, path, self.shown(path, ctx), args, ctx, cfg)
        return _preview_text(plan)

    async def run(self, args: EditFileInput, ctx: ToolContext) -> ToolResult:
        checked = self.checked_target(args, ctx)
        if isinstance(checked, ToolResult):
            return checked
        path, shown = checked, self.shown(checked, ctx)
        cfg = tool_settings(ctx, "write_file", WriteSettings)
        try:
            return await asyncio.to_thread(self._edit, path, shown, args, ctx, cfg)
        except (OSError, PathProblem) as exc:
            return os_error(exc, shown)

    def _edit(
        self, path: Path, shown: str, args: EditFileInput, ctx: ToolContext, cfg: WriteSettings
    ) -> ToolResult:
        plan = _plan_edit(path, shown, args, ctx, cfg)
        if isinstance(plan, ToolResult):
            return plan
        assert plan.data is not None
        new_fp = write_atomic(
            path, plan.data, previous=plan.previous, backend=backend_for(ctx.session_id)
        )
        coverage.record_written(ctx.plugin_state("fs"), path, new_fp, plan.lines)
        return ToolResult.success(plan.message, diff=plan.diff)


def _plan_edit(
    path: Path, shown: str, args: EditFileInput, ctx: ToolContext, cfg: WriteSettings
) -> WritePlan | ToolResult:
    existing = read_existing(path, backend_for(ctx.session_id))
    if existing is None:
        return ToolResult.error(f"{shown} does not exist; create it with write_file.")
    fp, old_bytes, previous = existing
    if fp.size > cfg.max_edit_bytes:
        return ToolResult.error(
            f"{shown} is {human_size(fp.size)}, more than edit_file handles ({human_size(cfg.max_edit_bytes)})."
        )
    try:
        current = TextFile.from_bytes(old_bytes)
    except BinaryFile as exc:
        return ToolResult.error(f"{shown} is a binary file ({exc}); edit_file edits text only.")
    refusal = _guard(ctx, path, shown, fp, current)
    if refusal:
        return ToolResult.error(refusal)
    if args.old_string == args.new_string:
        return ToolResult.error(
            "old_string and new_string are the same; there is nothing to change."
        )
    text = current.lf_text()
    old, new = args.old_string, args.new_string
    raw_mode = False  # mixed line endings: match the file's own bytes, CRLF form
    if current.crlf:
        old, new = old.replace("\r\n", "\n"), new.replace("\r\n", "\n")
    count = text.count(old)
    if count == 0 and not current.crlf and "\n" in old and "\r\n" in text:
        crlf_old = old.replace("\r\n", "\n").replace("\n", "\r\n")
        if text.count(crlf_old):
            old, new, raw_mode = crlf_old, new.replace("\r\n", "\n").replace("\n", "\r\n"), True
            count = text.count(old)
    if count == 0:
        return ToolResult.error(_not_found(shown, text, old, current))
    if count > 1 and not args.replace_all:
        lines = _match_lines(text, old)
        where = ", ".join(str(n) for n in lines[:10]) + (" ..." if len(lines) > 10 else "")
        return ToolResult.error(
            f"old_string occurs {count} times in {shown} (at lines {where}), so nothing was changed. "
            "Include more surrounding lines to make it unique, or set replace_all to true to change every one."
        )
    first = text.index(old)
    new_text = text.replace(old, new) if args.replace_all else text.replace(old, new, 1)
    try:
        data = current.encoding.encode(new_text) if raw_mode else current.to_bytes(new_text)
    except UnicodeEncodeError as exc:
        return ToolResult.error(
            f"{shown}: {unencodable_message(exc, current.encoding)}; nothing was changed."
        )
    shown_new = new_text.replace("\r\n", "\n")
    diff = unified_diff(text, shown_new, shown, max_chars=cfg.max_diff_chars)
    added, removed = diff_stats(diff)
    replaced = f"{count} occurrences" if args.replace_all and count > 1 else "1 occurrence"
    head = f"Edited {shown}: replaced {replaced} (+{added} -{removed} lines)."
    snippet = _snippet(
        shown_new,
        text[:first].replace("\r\n", "\n").count("\n") + 1,
        new.replace("\r\n", "\n").count("\n") + 1,
        cfg,
    )
    message = head + ("\n" + snippet if snippet else "")
    return WritePlan(
        data=data,
        diff=diff,
        lines=count_lines(shown_new),
        previous=previous,
        fingerprint=fp,
        message=message,
    )


def _match_lines(text: str, needle: str) -> list[int]:
    lines: list[int] = []
    start = 0
    while (found := text.find(needle, start)) >= 0:
        lines.append(text.count("\n", 0, found) + 1)
        start = found + max(1, len(needle))
    return lines


def _not_found(shown: str, text: str, old: str, current: TextFile) -> str:
    message = (
        f"old_string was not found in {shown}, so nothing was changed. It must match the file exactly, "
        "whitespace and indentation included, without read_file's line numbers."
    )
    if all(re.match(r"^\s*\d+\t", line) for line in old.split("\n") if line.strip()):
        message += " Your old_string starts with read_file's line numbers (a number and a tab): leave them out."
    first_line = next((line for line in old.split("\n") if line.strip()), "")
    if first_line:
        lines = text.split("\n")
        stripped = [line.strip() for line in lines]
        close = difflib.get_close_matches(first_line.strip(), stripped, n=1, cutoff=0.6)
        if close:
            number = stripped.index(close[0]) + 1
            message += f" The closest line is {number}: {lines[number - 1].strip()[:200]!r}."
    if current.encoding.errors == "surrogateescape":
        message += " The file has bytes that are not valid UTF-8 (shown as \ufffd); old_string cannot contain them."
    return message + " Read the file again if it may have changed."


def _snippet(text: str, first_line: int, span: int, cfg: WriteSettings) -> str:
    """The edited region, numbered as read_file numbers it, so the model can check it."""
    if cfg.snippet_lines <= 0:
        return ""
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    start = max(1, first_line - 2)
    end = min(len(lines), first_line + span - 1 + 2, start + cfg.snippet_lines - 1)
    width = len(str(end))
    out = []
    for number in range(start, end + 1):
        line = lines[number - 1]
        if len(line) > cfg.snippet_line_chars:
            line = line[: cfg.snippet_line_chars] + "…"
        out.append(f"{number:>{width}}\t{line}")
    if not out:
        return "(the file is now empty)"
    return "\n".join(out)
