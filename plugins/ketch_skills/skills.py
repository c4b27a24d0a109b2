"""The ``skill`` tool and what it loads (the system prompt's listing is in
``ketch_skills.listing``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from ketch.api import Effect, Tool, ToolContext, ToolResult
from ketch_prompt_kit.arguments import expand_arguments
from ketch_skills.discovery import MAX_FILES_LISTED, Skill, find, skills

if TYPE_CHECKING:  # pragma: no cover
    from pathlib import Path

    from ketch_prompt_kit.markdown_files import Folder


def body_for(
    skill: Skill, arguments: str = "", session_id: str = "", workspace: Path | None = None
) -> str:
    """A skill's instructions as they are loaded: the body (``${CLAUDE_SKILL_DIR}`` and
    the other Claude Code variables ketch knows expanded, an installed plugin's
    ``${CLAUDE_PLUGIN_ROOT}`` too; an unknown one is kept as written and said), the
    folder, the files beside it."""
    from ketch_claude_kit.claude_vars import expand, unknown_note

    body = (
        expand_arguments(skill.markdown.body, arguments)
        if arguments or "$ARGUMENTS" in skill.markdown.body
        else skill.markdown.body
    )
    folder = skill.markdown.folder
    if workspace is None and not folder.namespace:
        workspace = folder.path.parent.parent  # .claude/skills -> the workspace
    body, missing = expand(
        body,
        {
            "CLAUDE_SKILL_DIR": str(skill.directory),
            "CLAUDE_PROJECT_DIR": str(workspace) if workspace and not folder.users_own else None,
            "CLAUDE_SESSION_ID": session_id or None,
            **folder.variables(),
        },
    )
    if missing:
        body += f"\n\n[ketch: {unknown_note(missing, 'this skill')}]"
    files = sorted(p for p in skill.directory.rglob("*") if p.is_file() and p.name != "SKILL.md")
    listing = "\n".join(
        f"- {p.relative_to(skill.directory).as_posix()}" for p in files[:MAX_FILES_LISTED]
    )
    more = (
        f"\n- … and {len(files) - MAX_FILES_LISTED} more" if len(files) > MAX_FILES_LISTED else ""
    )
    beside = (
        f"\n\nFiles beside it (read them with read_file when the instructions say so):\n{listing}{more}"
        if files
        else ""
    )
    return f'<skill name="{skill.name}" folder="{skill.directory}">\n{body}{beside}\n</skill>'


class SkillInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="The skill's name, as listed under Skills in the system prompt.")


class SkillTool(Tool[SkillInput]):
    name = "skill"
    description = "Load a skill's instructions (the skills available are listed in the system prompt under Skills). Call it before a task its description matches."
    input_model = SkillInput
    # it reads only the skill files the person installed or trusted
    effects: ClassVar[frozenset[Effect]] = frozenset()
    mutating = False

    def __init__(self, held: frozenset[str] = frozenset(), extra: tuple[Folder, ...] = ()) -> None:
        self.held = held  # project skills whose scripts the person has not trusted
        self.extra = extra  # folders other plugins added (an installed Claude Code plugin's)

    def summary(self, args: SkillInput) -> str:
        return f"load skill {args.name}"

    async def run(self, args: SkillInput, ctx: ToolContext) -> ToolResult:
        skill = find(ctx.workspace, args.name, self.extra)
        if skill is not None and skill.name in self.held:
            return ToolResult.error(
                f"The skill {skill.name!r} is not available: its scripts are not trusted in this workspace."
            )
        if skill is None or not skill.model_invocable:
            listed = skills(ctx.workspace, self.extra)
            names = ", ".join(s.name for s in listed if s.model_invocable) or "none"
            return ToolResult.error(f"There is no skill named {args.name!r}. Skills: {names}.")
        allowed = skill.markdown.meta.get("allowed-tools")
        if allowed is not None:  # the rest of this turn may use only those (a deny vote)
            ctx.plugin_state("skills")["narrow"] = {
                "source": f"the skill {skill.name}",
                "allowed": allowed,
            }
        return ToolResult.success(
            body_for(skill, session_id=ctx.session_id, workspace=ctx.workspace)
        )
