"""``worktree_merge``: the model merges a worktree (a subagent's, say) into the
repository's checked-out branch. It changes the person's files, so it asks in every
profile but ``full-access`` (and plan mode refuses it); the question shows what the
merge would bring. Conflicts change nothing and come back as the result."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from ketch.api import Effect, Tool, ToolContext, ToolResult


class MergeInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(
        min_length=1,
        max_length=64,
        description="The worktree's name (a subagent's result gives it).",
    )
    squash: bool = Field(
        False, description="One commit with all its changes instead of a merge commit."
    )


class MergeTool(Tool[MergeInput]):
    name: ClassVar[str] = "worktree_merge"
    description: ClassVar[str] = (  # type: ignore[misc]
        "Merge a git worktree (one a subagent worked in, named in its result) into the repository's "
        "checked-out branch, after the user approves. Its uncommitted edits are committed on its branch "
        "first. A conflict changes nothing and is reported with the files. Merge only the work you keep."
    )
    input_model = MergeInput
    effects: ClassVar[frozenset[Effect]] = frozenset({Effect.WRITE})
    mutating: ClassVar[bool] = True

    def summary(self, args: MergeInput) -> str:
        a: Any = args
        return f"merge worktree {a.name}" + (" (squash)" if a.squash else "")

    async def preview(self, args: MergeInput, ctx: ToolContext) -> str | None:
        import asyncio

        return await asyncio.to_thread(_preview, args, ctx)

    async def run(self, args: MergeInput, ctx: ToolContext) -> ToolResult:
        import asyncio

        return await asyncio.to_thread(_merge, args, ctx)


def _repo(ctx: ToolContext) -> Any:
    import os

    from ketch_worktree_kit import Repo

    return Repo.of(ctx.workspace, dict(os.environ))


def _preview(args: Any, ctx: ToolContext) -> str | None:
    from ketch_worktree_kit import WorktreeError, changes, find

    try:
        repo = _repo(ctx)
        found = changes(repo, find(repo, args.name))
    except WorktreeError as exc:
        return f"(this call will fail: {exc})"
    lines = [f"into {repo.main}: {found.stat()}"]
    lines += [f"  {status} {path}" for status, path in found.files[:40]]
    if len(found.files) > 40:
        lines.append(f"  … {len(found.files) - 40} more")
    return "\n".join(lines)


def _merge(args: Any, ctx: ToolContext) -> ToolResult:
    from ketch_worktree_kit import WorktreeError, find, merge

    try:
        repo = _repo(ctx)
        result = merge(repo, find(repo, args.name), squash=args.squash)
    except WorktreeError as exc:
        return ToolResult.error(f"[ketch] {exc}")
    if result.merged:
        files = "\n".join(f"- {p}" for p in result.files[:100])
        return ToolResult.success(f"{result.message}\n{files}")
    if result.conflicts:
        listed = "\n".join(f"- {p}" for p in result.conflicts)
        return ToolResult.error(
            f"[ketch] {result.message}:\n{listed}\nResolve it in the worktree, or leave it to the user."
        )
    return ToolResult.error(f"[ketch] {result.message}")
