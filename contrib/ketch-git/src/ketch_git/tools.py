"""The git tools: read-only, so plan mode offers them, and each declares what it reads.

They are class tools (``ketch.Tool`` with a pydantic input model) rather than plain
functions because each one scopes its call: ``accesses()`` names the workspace and
every path it reads, so the guards can ask about a path that looks like a secret
and policy rules can match on paths.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ketch.api import Access, Effect, Tool, ToolContext, ToolResult
from pydantic import BaseModel, ConfigDict, Field

from ketch_git.gitrun import GitError, GitOutput, check_revision, relative_path, run_git

DIFF_SAFETY = ("--no-ext-diff", "--no-textconv", "--no-color")


class _Input(BaseModel):
    model_config = ConfigDict(extra="forbid")


class GitTool(Tool[_Input]):
    """Shared behaviour: read-only effects, access scoping, errors as results."""

    effects = frozenset({Effect.READ})
    mutating = False

    def paths(self, args: Any) -> list[str]:
        return list(
            getattr(args, "paths", None) or ([args.path] if getattr(args, "path", None) else [])
        )

    def accesses(self, args: BaseModel, ctx: ToolContext) -> list[Access]:
        found = [
            Access(effect=Effect.READ, target=str(ctx.workspace.resolve()), detail={"git": True})
        ]
        for path in self.paths(args):
            target = (
                (ctx.workspace / path).resolve()
                if not Path(path).is_absolute()
                else Path(path).resolve()
            )
            found.append(Access(effect=Effect.READ, target=str(target), detail={"git": True}))
        return found

    def summary(self, args: BaseModel) -> str:
        shown = " ".join(f"{k}={v}" for k, v in args.model_dump(exclude_defaults=True).items())
        return f"{self.name} {shown}".strip()

    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolResult:
        try:
            argv = self.command(args, ctx.workspace)
            output = await run_git(ctx.workspace, argv)
        except GitError as exc:
            return ToolResult.error(f"{self.name}: {exc}")
        return ToolResult.success(self.render(args, output), data={"truncated": output.truncated})

    def command(self, args: Any, workspace: Path) -> list[str]:
        raise NotImplementedError

    def render(self, args: Any, output: GitOutput) -> str:
        text = output.text.rstrip("\n") or self.empty(args)
        if output.truncated:
            text += f"\n[ketch-git: output truncated, {output.truncated} more characters; narrow it with paths, a revision or a smaller count]"
        return text

    def empty(self, args: Any) -> str:
        return "(no output)"

    def pathspec(self, args: Any, workspace: Path) -> list[str]:
        paths = [relative_path(workspace, p) for p in self.paths(args)]
        return ["--", *paths] if paths else []


# --- git_status ---------------------------------------------------------------------


class StatusInput(_Input):
    paths: list[str] = Field(
        default_factory=list,
        description="limit to these files or directories (relative to the workspace)",
    )


class GitStatus(GitTool):
    name = "git_status"
    description = (
        "Show the working tree status: the current branch and its upstream, then one line per "
        "changed file (XY codes as in `git status --short`: M modified, A added, D deleted, "
        "R renamed, ?? untracked; first column staged, second unstaged)."
    )
    input_model = StatusInput

    def command(self, args: StatusInput, workspace: Path) -> list[str]:
        return [
            "status",
            "--short",
            "--branch",
            "--untracked-files=normal",
            *self.pathspec(args, workspace),
        ]

    def render(self, args: Any, output: GitOutput) -> str:
        text = super().render(args, output)
        lines = text.splitlines()
        if len(lines) == 1 and lines[0].startswith("##"):
            text += "\n(working tree clean)"
        return text


# --- git_diff -------------------------------------------------------------------------


class DiffInput(_Input):
    staged: bool = Field(
        False, description="show staged changes (the index against HEAD) instead of unstaged ones"
    )
    revision: str | None = Field(
        None,
        description="compare the working tree with this revision, or give a range such as 'main..HEAD' or 'HEAD~3..HEAD'",
    )
    paths: list[str] = Field(
        default_factory=list, description="limit to these files or directories"
    )
    stat: bool = Field(False, description="only a summary of changed files and line counts")
    context_lines: int = Field(3, ge=0, le=50, description="lines of context around each change")


class GitDiff(GitTool):
    name = "git_diff"
    description = "Show changes as a unified diff: unstaged by default, staged with staged=true, or against a revision or range."
    input_model = DiffInput

    def command(self, args: DiffInput, workspace: Path) -> list[str]:
        argv = ["diff", *DIFF_SAFETY, f"-U{args.context_lines}"]
        if args.staged:
            argv.append("--cached")
        if args.stat:
            argv.append("--stat")
        argv.append("--end-of-options")
        if args.revision:
            argv.append(check_revision(args.revision))
        return argv + (self.pathspec(args, workspace) or ["--"])

    def empty(self, args: Any) -> str:
        return "(no differences)"


# --- git_log -------------------------------------------------------------------------------


class LogInput(_Input):
    revision: str | None = Field(
        None, description="start from this revision or range (default: HEAD), e.g. 'main..topic'"
    )
    paths: list[str] = Field(
        default_factory=list, description="only commits that touch these files or directories"
    )
    max_count: int = Field(20, ge=1, le=500, description="at most this many commits, newest first")
    patch: bool = Field(False, description="include each commit's diff")


class GitLog(GitTool):
    name = "git_log"
    description = (
        "List commits, newest first: hash, date, author and subject (and the diff with patch=true)."
    )
    input_model = LogInput

    def command(self, args: LogInput, workspace: Path) -> list[str]:
        argv = [
            "log",
            *DIFF_SAFETY,
            f"--max-count={args.max_count}",
            "--date=short",
            "--format=%h %ad %an%d%n    %s",
        ]
        if args.patch:
            argv.append("--patch")
        argv.append("--end-of-options")
        if args.revision:
            argv.append(check_revision(args.revision))
        return argv + (self.pathspec(args, workspace) or ["--"])

    def empty(self, args: Any) -> str:
        return "(no commits)"


# --- git_show -------------------------------------------------------------------------------


class ShowInput(_Input):
    revision: str = Field("HEAD", description="the commit (or tag) to show")
    path: str | None = Field(
        None, description="show this file's content as of the revision instead of the commit"
    )
    stat: bool = Field(False, description="only the changed-file summary, not the full diff")


class GitShow(GitTool):
    name = "git_show"
    description = (
        "Show a commit (message and diff), or a file's content at a revision when path is given."
    )
    input_model = ShowInput

    def command(self, args: ShowInput, workspace: Path) -> list[str]:
        revision = check_revision(args.revision)
        if args.path:
            rel = relative_path(workspace, args.path)
            return ["show", *DIFF_SAFETY, "--end-of-options", f"{revision}:./{rel}"]
        argv = ["show", *DIFF_SAFETY, "--format=fuller"]
        if args.stat:
            argv.append("--stat")
        return [*argv, "--end-of-options", revision, "--"]

    def paths(self, args: Any) -> list[str]:
        return [args.path] if args.path else []


# --- git_blame ------------------------------------------------------------------------------


class BlameInput(_Input):
    path: str = Field(description="the file to annotate")
    start_line: int | None = Field(None, ge=1, description="first line (1-based)")
    end_line: int | None = Field(None, ge=1, description="last line")
    revision: str | None = Field(None, description="annotate the file as of this revision")


class GitBlame(GitTool):
    name = "git_blame"
    description = (
        "Show which commit and author last changed each line of a file (optionally a line range)."
    )
    input_model = BlameInput

    def command(self, args: BlameInput, workspace: Path) -> list[str]:
        argv = ["blame", "--no-textconv", "--date=short"]
        if args.start_line or args.end_line:
            start = args.start_line or 1
            end = args.end_line or ""
            if args.end_line and args.end_line < start:
                raise GitError(f"end_line {args.end_line} is before start_line {start}")
            argv.append(f"-L{start},{end}")
        if args.revision:  # blame takes --end-of-options only in front of a revision
            argv += ["--end-of-options", check_revision(args.revision)]
        return [*argv, "--", relative_path(workspace, args.path)]


TOOLS: tuple[type[Tool], ...] = (GitStatus, GitDiff, GitLog, GitShow, GitBlame)
