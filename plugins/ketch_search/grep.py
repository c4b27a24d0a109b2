"""``grep``: search file contents with a regular expression.

ripgrep when it is on PATH (``[tools.grep] engine = "auto"``), else the Python engine;
both give the same output. Files ignored by .gitignore, the .git directory, binary
files and files that are secrets by name or content (``.env``, key files, a
``.git/config`` whose remote URL carries a token: grep them by path, which the guards
then ask about) are skipped when searching a directory.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from ketch.api import Access, Effect, ToolContext, ToolResult
from ketch_search.hits import Limits, Search, render
from ketch_search.pygrep import candidate_files, compile_pattern, search_files
from ketch_search.ripgrep import (
    RipgrepUnusable,
    SearchError,
    build_argv,
    find_rg,
    run_rg,
    search_root,
)
from ketch_tool_kit.base import FsTool, PathText
from ketch_tool_kit.caps import tool_settings
from ketch_tool_kit.walk import check_glob


class GrepSettings(BaseModel):
    max_results: int = Field(100, ge=1, le=100_000)  # matching lines shown
    max_chars: int = Field(10_000, ge=500, le=10_000_000)
    max_line_chars: int = Field(300, ge=40, le=100_000)
    max_context: int = Field(10, ge=0, le=100)
    max_filesize: int = Field(20 << 20, ge=1 << 10)
    timeout: float = Field(30.0, gt=0, le=600)
    engine: Literal["auto", "ripgrep", "python"] = "auto"


def _pattern(value: str) -> str:
    if "\x00" in value:
        raise ValueError("the pattern contains a NUL byte")
    return value


def _glob(value: str) -> str:
    return check_glob(value) if value else value


class GrepInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    pattern: Annotated[str, AfterValidator(_pattern)] = Field(
        min_length=1,
        max_length=2000,
        description="A regular expression (Rust/Python syntax), or plain text with literal=true.",
    )
    path: PathText = Field(
        ".",
        description="A directory to search recursively, or one file. Default: the workspace root.",
    )
    glob: Annotated[str, AfterValidator(_glob)] = Field(
        "",
        description="Only search files matching this glob, e.g. `*.py` (any directory) or `src/**/*.ts`.",
    )
    ignore_case: bool = Field(False, description="Match case-insensitively.")
    literal: bool = Field(
        False, description="Treat the pattern as plain text, not a regular expression."
    )
    context: int = Field(
        0, ge=0, le=100, description="Lines of context to show before and after each match (0-10)."
    )
    files_only: bool = Field(False, description="List only the paths of files that match.")


def looks_secret(path: Path) -> bool:
    """Whether the essential guards treat this file as a secret, by its name or its
    content (skipped in directory searches)."""
    from ketch_secret_kit import is_secret

    return is_secret(path)


class Grep(FsTool[GrepInput]):
    name = "grep"
    description = (
        "Search file contents with a regular expression. Output lines are `path:line:text` for matches and "
        "`path-line-text` for context, paths relative to the workspace root. Searching a directory skips "
        "files ignored by .gitignore, binary files and secrets (.env, keys, files holding credentials)."
    )
    input_model = GrepInput
    effects = frozenset({Effect.READ})
    mutating = False

    def accesses(self, args: GrepInput, ctx: ToolContext) -> list[Access]:
        path = self.target(args, ctx)
        self.remember(ctx, path)
        return [Access(effect=Effect.READ, target=str(path))]

    def summary(self, args: GrepInput) -> str:
        extra = f" ({args.glob})" if args.glob else ""
        return f"grep {args.pattern!r} in {args.path}{extra}"

    async def run(self, args: GrepInput, ctx: ToolContext) -> ToolResult:
        checked = self.checked_target(args, ctx)
        if isinstance(checked, ToolResult):
            return checked
        target, shown = checked, self.shown(checked, ctx)
        if not target.exists():
            return ToolResult.error(f"{shown} does not exist.")
        cfg = tool_settings(ctx, "grep", GrepSettings)
        context = min(args.context, cfg.max_context)
        try:
            search = await self._search(args, target, context, cfg)
        except SearchError as exc:
            return ToolResult.error(str(exc))
        limits = Limits(cfg.max_results, cfg.max_chars, cfg.max_line_chars)
        if not search.hits:
            note = f" (stopped after {cfg.timeout:g} s)" if search.timed_out else ""
            where = "the workspace" if shown == "." else shown
            skipped = self._skipped_note(search, ctx)
            return ToolResult.success(
                f"No matches for {args.pattern!r} in {where}{note}."
                + ("\n" + "\n".join(skipped) if skipped else "")
            )
        text, shown_matches = render(
            search,
            workspace=ctx.workspace,
            files_only=args.files_only,
            context=context,
            limits=limits,
        )
        notes: list[str] = []
        if search.truncated or (not args.files_only and shown_matches < search.matches):
            what = "files" if args.files_only else "matches"
            notes.append(
                f"[showing the first {shown_matches} {what}; there are more. Narrow the search with path, glob or a more specific pattern]"
            )
        if search.timed_out:
            notes.append(f"[the search stopped after {cfg.timeout:g} s; results are incomplete]")
        notes += [f"[warning: {w}]" for w in search.warnings]
        notes += self._skipped_note(search, ctx)
        return ToolResult.success(text + ("\n" + "\n".join(notes) if notes else ""))

    def _skipped_note(self, search: Search, ctx: ToolContext) -> list[str]:
        """Secret-looking files that matched are named, never shown."""
        if not search.skipped:
            return []
        names = sorted(self.shown(p, ctx) for p in search.skipped)
        listed = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
        one = len(names) == 1
        return [
            f"[{listed} also match{'es' if one else ''} but {'is' if one else 'are'} not shown: {'it looks' if one else 'they look'} "
            "like secrets. grep a file by its path to see its lines (that asks the user first)]"
        ]

    async def _search(
        self, args: GrepInput, target: Path, context: int, cfg: GrepSettings
    ) -> Search:
        # files_only needs one match per file at least; the cap then counts files.
        cap = cfg.max_results if not args.files_only else cfg.max_results * 50
        is_dir = target.is_dir()

        def skip(path: Path) -> bool:
            return is_dir and looks_secret(path)

        rg = find_rg() if cfg.engine in ("auto", "ripgrep") else None
        if rg is not None:
            argv = build_argv(
                rg,
                pattern=args.pattern,
                target=target,
                glob=args.glob,
                ignore_case=args.ignore_case,
                literal=args.literal,
                context=context,
                max_filesize=cfg.max_filesize,
            )
            try:
                return await run_rg(
                    argv, cwd=search_root(target), cap=cap, timeout=cfg.timeout, skip=skip
                )
            except RipgrepUnusable:
                pass  # fall through to the Python engine
        regex = compile_pattern(args.pattern, ignore_case=args.ignore_case, literal=args.literal)
        deadline = time.monotonic() + cfg.timeout

        def work() -> Search:
            files = candidate_files(target, args.glob)
            return search_files(
                files,
                regex,
                context=context,
                cap=cap,
                max_filesize=cfg.max_filesize,
                deadline=deadline,
                skip=skip,
            )

        return await asyncio.to_thread(work)
