"""``list_dir`` and ``glob``: what is in the workspace, as git would show it."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from ketch.api import Access, Effect, ToolContext, ToolResult
from ketch_text_kit.names import shown_name
from ketch_tool_kit.base import FsTool, PathText, os_error
from ketch_tool_kit.caps import human_size, tool_settings
from ketch_tool_kit.paths import PathProblem, is_within
from ketch_tool_kit.walk import GlobPattern, check_glob, literal_prefix, walk


class ListSettings(BaseModel):
    max_entries: int = Field(300, ge=10, le=100_000)


class GlobSettings(BaseModel):
    max_results: int = Field(200, ge=10, le=100_000)
    max_scanned: int = Field(200_000, ge=1_000)  # entries walked before giving up


class ListDirInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: PathText = Field(
        ".",
        description="The directory to list: relative to the workspace root, or absolute. Default: the workspace root.",
    )


class GlobInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    pattern: Annotated[str, AfterValidator(check_glob)] = Field(
        description="A glob relative to `path`: `*` within a name, `**` across directories, `{a,b}` alternatives. Example: `src/**/*.py`."
    )
    path: PathText = Field(
        ".", description="The directory to search from. Default: the workspace root."
    )


def _not_a_dir(shown: str, path: Path) -> ToolResult:
    if path.exists():
        return ToolResult.error(f"{shown} is a file, not a directory; read it with read_file.")
    return ToolResult.error(f"{shown} does not exist.")


class ListDir(FsTool[ListDirInput]):
    name = "list_dir"
    description = (
        "List one directory: subdirectories (ending in /) first, then files with their sizes; symlinks show "
        "their target. Entries ignored by .gitignore and the .git directory are left out."
    )
    input_model = ListDirInput
    effects = frozenset({Effect.READ})
    mutating = False

    def accesses(self, args: ListDirInput, ctx: ToolContext) -> list[Access]:
        path = self.target(args, ctx)
        self.remember(ctx, path)
        return [Access(effect=Effect.READ, target=str(path))]

    def summary(self, args: ListDirInput) -> str:
        return f"list {args.path}"

    async def run(self, args: ListDirInput, ctx: ToolContext) -> ToolResult:
        checked = self.checked_target(args, ctx)
        if isinstance(checked, ToolResult):
            return checked
        path, shown = checked, self.shown(checked, ctx)
        if not path.is_dir():
            return _not_a_dir(shown, path)
        cfg = tool_settings(ctx, "list_dir", ListSettings)
        try:
            return await asyncio.to_thread(self._list, path, shown, cfg)
        except (OSError, PathProblem) as exc:
            return os_error(exc, shown)

    def _list(self, path: Path, shown: str, cfg: ListSettings) -> ToolResult:
        dirs: list[str] = []
        files: list[str] = []
        kept: set[str] = set()
        for entry in walk(path, max_depth=1):
            kept.add(entry.path.name)
            name = shown_name(entry.path.name)
            if entry.is_symlink:
                try:
                    files.append(f"{name} -> {shown_name(os.readlink(entry.path))}")
                except OSError:
                    files.append(f"{name} -> ?")
            elif entry.is_dir:
                dirs.append(name + "/")
            else:
                try:
                    size = entry.path.stat(follow_symlinks=False).st_size
                except OSError:
                    size = 0
                files.append(f"{name}  ({human_size(size)})")
        everything = set(os.listdir(path)) - {".git"}
        ignored = len(everything - kept)
        lines = sorted(dirs, key=str.lower) + sorted(files, key=str.lower)
        total = len(lines)
        notes: list[str] = []
        if total > cfg.max_entries:
            lines = lines[: cfg.max_entries]
            notes.append(
                f"[{total - cfg.max_entries} more entries not shown; use glob to narrow it down]"
            )
        if ignored:
            notes.append(
                f"[{ignored} entr{'ies' if ignored != 1 else 'y'} ignored by .gitignore not shown]"
            )
        if not total:
            return ToolResult.success(
                f"{shown}/ is empty." + ("\n" + "\n".join(notes) if notes else "")
            )
        header = f"{shown}/ ({total} entr{'ies' if total != 1 else 'y'}):"
        return ToolResult.success("\n".join([header, *lines, *notes]))


class Glob(FsTool[GlobInput]):
    name = "glob"
    description = (
        "Find files by name pattern, e.g. `**/*.py` or `src/**/test_*.{js,ts}`. Returns paths relative to "
        "the workspace root, sorted. Files ignored by .gitignore are left out; `*` does not match names "
        "starting with a dot unless the pattern says so."
    )
    input_model = GlobInput
    effects = frozenset({Effect.READ})
    mutating = False

    def accesses(self, args: GlobInput, ctx: ToolContext) -> list[Access]:
        path = self.target(args, ctx)
        self.remember(ctx, path)
        return [Access(effect=Effect.READ, target=str(path))]

    def summary(self, args: GlobInput) -> str:
        return f"glob {args.pattern}" + (f" in {args.path}" if args.path != "." else "")

    async def run(self, args: GlobInput, ctx: ToolContext) -> ToolResult:
        checked = self.checked_target(args, ctx)
        if isinstance(checked, ToolResult):
            return checked
        base, shown = checked, self.shown(checked, ctx)
        if not base.is_dir():
            return _not_a_dir(shown, base)
        cfg = tool_settings(ctx, "glob", GlobSettings)
        try:
            return await asyncio.to_thread(self._glob, base, args.pattern, ctx, cfg)
        except (OSError, PathProblem) as exc:
            return os_error(exc, shown)

    def _glob(self, base: Path, pattern: str, ctx: ToolContext, cfg: GlobSettings) -> ToolResult:
        prefix, rest, depth = literal_prefix(pattern)
        root = base
        if prefix:
            candidate = Path(os.path.realpath(base / prefix))
            # A literal prefix that is a symlink out of the base is not followed.
            if is_within(candidate, base) and candidate.is_dir():
                root = candidate
            else:
                rest, depth = pattern, None
        if prefix and root == base and not Path(base / prefix).exists():
            return ToolResult.success(
                f"No files match {pattern!r}: {prefix} does not exist under {self.shown(base, ctx)}."
            )
        matcher = GlobPattern(rest)
        matches: list[tuple[str, Path]] = []
        scanned = 0
        stopped = False
        # The relative path is cut from the string, not computed by pathlib, and only the
        # matches that are shown are resolved for display: a 50k-file tree walks at the
        # speed of the walk itself.
        cut = len(str(root)) + 1
        for entry in walk(root, max_depth=depth):
            scanned += 1
            if scanned > cfg.max_scanned:
                stopped = True
                break
            if entry.is_dir:
                continue
            relative = str(entry.path)[cut:]
            if os.sep != "/":
                relative = relative.replace(os.sep, "/")
            if matcher.match(relative):
                matches.append((relative, entry.path))
        matches.sort()
        notes: list[str] = []
        if stopped:
            notes.append(
                f"[stopped after looking at {cfg.max_scanned} entries; give a narrower pattern or path]"
            )
        if len(matches) > cfg.max_results:
            notes.append(
                f"[{len(matches) - cfg.max_results} more matches not shown; narrow the pattern]"
            )
            matches = matches[: cfg.max_results]
        found = sorted(self.shown(path, ctx) for _, path in matches)
        if not found:
            return ToolResult.success(
                f"No files match {pattern!r} under {self.shown(base, ctx)}."
                + ("\n" + "\n".join(notes) if notes else "")
            )
        return ToolResult.success("\n".join(found + notes))
