"""``read_file``: numbered lines of a text file, within the output budget."""

from __future__ import annotations

import asyncio
import difflib
import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from ketch.api import (
    MAX_IMAGE_BYTES,
    Access,
    Effect,
    ImagePart,
    ToolContext,
    ToolResult,
)
from ketch_fs import coverage
from ketch_fs.reading import Line, ReadResult, read_lines, read_lines_of
from ketch_tool_kit.base import FsTool, PathText, os_error
from ketch_tool_kit.caps import human_size, tool_settings
from ketch_tool_kit.files import FileBackend, backend_for
from ketch_tool_kit.paths import (
    PathProblem,
    is_regular,
    is_within,
    kind_of,
    open_nofollow,
    workspace_root,
)
from ketch_tool_kit.textfile import describe_binary


class ReadSettings(BaseModel):
    max_lines: int = Field(400, ge=1, le=1_000_000)
    max_chars: int = Field(16_000, ge=500, le=10_000_000)
    max_line_chars: int = Field(2_000, ge=80, le=1_000_000)
    max_wide_bytes: int = Field(16 << 20, ge=1 << 16)  # UTF-16/32 files are decoded whole


class ReadFileInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: PathText = Field(
        description="The file to read: relative to the workspace root, or absolute."
    )
    offset: int = Field(
        1, ge=1, description="The first line to show (1-based). Use it to page through long files."
    )
    limit: int = Field(
        0, ge=0, description="How many lines to show; 0 means the maximum (400 unless configured)."
    )


class ReadFile(FsTool[ReadFileInput]):
    name = "read_file"
    description = (
        "Read a text file. Lines come numbered (number, tab, text); the numbers are not part of the file. "
        "Long files come in pages: the note at the end says how to continue (offset). "
        "Images (PNG, JPEG, GIF, WebP) are shown to you as pictures; other binary files are refused. Before you overwrite or edit an existing file, every line of it "
        "must have been shown to you by this tool in this session."
    )
    input_model = ReadFileInput
    effects = frozenset({Effect.READ})
    mutating = False

    def accesses(self, args: ReadFileInput, ctx: ToolContext) -> list[Access]:
        path = self.target(args, ctx)
        self.remember(ctx, path)
        return [Access(effect=Effect.READ, target=str(path))]

    def summary(self, args: ReadFileInput) -> str:
        span = f" from line {args.offset}" if args.offset > 1 else ""
        return f"read {args.path}{span}"

    async def run(self, args: ReadFileInput, ctx: ToolContext) -> ToolResult:
        checked = self.checked_target(args, ctx)
        if isinstance(checked, ToolResult):
            return checked
        path = checked
        shown = self.shown(path, ctx)
        cfg = tool_settings(ctx, "read_file", ReadSettings)
        limit = min(args.limit or cfg.max_lines, cfg.max_lines)
        try:
            # One thread owns the descriptor from open to close (a cancelled call must
            # not close it under a read still running).
            outcome = await asyncio.to_thread(
                _read,
                path,
                shown,
                args.offset,
                args.offset + limit - 1,
                cfg,
                backend_for(ctx.session_id),
            )
        except FileNotFoundError:
            return ToolResult.error(f"{shown} does not exist.{_suggest(path, ctx)}")
        except (OSError, PathProblem) as exc:
            return os_error(exc, shown)
        if isinstance(outcome, ToolResult):
            return outcome
        result = outcome
        if result.encoding is None and image_media_type(result.binary_head):
            return await _image(path, shown)
        if result.encoding is None:
            what = describe_binary(result.binary_head)
            return ToolResult.error(
                f"{shown} is a binary file ({what}, {human_size(result.fingerprint.size)}); read_file shows text only. "
                "Use a command that understands this format if you need to inspect it."
            )
        state = ctx.plugin_state("fs")
        total = result.total_lines
        if total == 0:
            coverage.record_read(state, path, result.fingerprint, 0, [])
            return ToolResult.success(f"[{shown} is empty: 0 lines]")
        if args.offset > total:
            return ToolResult.error(
                f"offset {args.offset} is past the end of {shown}, which has {total} line{'s' if total != 1 else ''}."
            )
        body, seen, cut_numbers, last_shown = _render(result.lines, cfg)
        coverage.record_read(state, path, result.fingerprint, total, coverage.spans(seen))
        notes: list[str] = []
        if last_shown < total:
            notes.append(
                f"[lines {args.offset}-{last_shown} of {total} shown; continue with offset={last_shown + 1}]"
            )
        if cut_numbers:
            runs = ", ".join(
                f"{a}-{b}" if a != b else str(a) for a, b in coverage.spans(cut_numbers)[:5]
            )
            notes.append(
                f"[line(s) {runs} are longer than {cfg.max_line_chars} characters and were cut]"
            )
        if not result.encoding.is_plain_utf8:
            notes.append(f"[encoding: {result.encoding.label}]")
        notes.extend(f"[{note}]" for note in result.notes)
        return ToolResult.success(body + ("\n" + "\n".join(notes) if notes else ""))


async def _image(path: Path, shown: str) -> ToolResult:
    """A PNG/JPEG/GIF/WebP file as an image part (a model without vision gets a note instead)."""

    def read() -> bytes | None:
        fd = open_nofollow(path)
        try:
            if os.fstat(fd).st_size > MAX_IMAGE_BYTES:
                return None
            with os.fdopen(os.dup(fd), "rb") as handle:
                return handle.read(MAX_IMAGE_BYTES + 1)
        finally:
            os.close(fd)

    try:
        data = await asyncio.to_thread(read)
    except (OSError, PathProblem) as exc:
        return os_error(exc, shown)
    if data is None or len(data) > MAX_IMAGE_BYTES:
        return ToolResult.error(
            f"{shown} is an image over {human_size(MAX_IMAGE_BYTES)}; it is too large to show."
        )
    media = image_media_type(data) or "image/png"
    image = ImagePart(media_type=media, data=data, name=path.name)
    return ToolResult.success(
        f"[{shown} is an image ({media}, {human_size(len(data))}); it is attached for you to see]",
        images=[image],
    )


def _read(
    path: Path,
    shown: str,
    first: int,
    last: int,
    cfg: ReadSettings,
    backend: FileBackend | None = None,
) -> ReadResult | ToolResult:
    data = backend.read(path) if backend is not None else None
    if data is not None:  # the editor's buffer, which may be ahead of the disk
        return read_lines_of(
            data,
            first,
            last,
            keep_bytes=cfg.max_line_chars * 4 + 4,
            max_wide_bytes=cfg.max_wide_bytes,
        )
    fd = open_nofollow(path)
    try:
        st = os.fstat(fd)
        if not is_regular(st):
            hint = (
                " Use list_dir or glob to see what it holds."
                if kind_of(st) == "a directory"
                else ""
            )
            return ToolResult.error(
                f"{shown} is {kind_of(st)}, not a file; read_file reads regular files only.{hint}"
            )
        return read_lines(
            fd,
            first,
            last,
            keep_bytes=cfg.max_line_chars * 4 + 4,
            max_wide_bytes=cfg.max_wide_bytes,
        )
    finally:
        os.close(fd)


def _render(lines: list[Line], cfg: ReadSettings) -> tuple[str, list[int], list[int], int]:
    """Numbered lines within the character budget: (text, fully shown, cut, last shown)."""
    width = len(str(lines[-1].number)) if lines else 1
    out: list[str] = []
    used = 0
    seen: list[int] = []
    cut_numbers: list[int] = []
    last_shown = lines[0].number - 1 if lines else 0
    for line in lines:
        text = line.text
        cut = not line.complete or len(text) > cfg.max_line_chars
        if cut:
            size = f"{line.length} bytes" if not line.complete else f"{len(text)} characters"
            text = f"{text[: cfg.max_line_chars]}… [line cut: {size} in all]"
        entry = f"{line.number:>{width}}\t{text}"
        if out and used + len(entry) + 1 > cfg.max_chars:
            break
        if not out and len(entry) > cfg.max_chars:
            entry, cut = entry[: cfg.max_chars] + "… [line cut]", True
        out.append(entry)
        used += len(entry) + 1
        last_shown = line.number
        (cut_numbers if cut else seen).append(line.number)
    return "\n".join(out), seen, cut_numbers, last_shown


def _suggest(path: Path, ctx: ToolContext) -> str:
    """Similar names in the same directory (inside the workspace only)."""
    parent = path.parent
    if not is_within(parent, workspace_root(ctx.workspace)):
        return ""
    try:
        names = os.listdir(parent)
    except OSError:
        return " Its directory does not exist either."
    close = difflib.get_close_matches(path.name, names, n=3, cutoff=0.6)
    return f" Did you mean: {', '.join(close)}?" if close else ""


def image_media_type(data: bytes) -> str | None:
    """The media type of PNG, JPEG, GIF or WebP bytes, from their signature; else None."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None
