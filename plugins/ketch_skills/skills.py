"""Finding skills, the system-prompt listing, the ``skill`` tool and ``/NAME``."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from ketch.commands import Command, PromptRequest, SlashContext
from ketch.policy import Vote
from ketch.prompt import PromptPart
from ketch.tools import Tool, ToolContext, ToolResult
from ketch_prompt_kit.allowed_tools import tool_filter
from ketch_prompt_kit.arguments import expand_arguments
from ketch_prompt_kit.markdown_files import MarkdownFile, first_line, folders, read

if TYPE_CHECKING:  # pragma: no cover
    from ketch.kernel import Kernel
    from ketch.policy import ProposedCall
    from ketch.session import Session

MAX_SKILLS = 200
MAX_DESCRIPTION = 1024  # the Agent Skills spec's limit
MAX_FILES_LISTED = 50


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    markdown: MarkdownFile

    @property
    def directory(self) -> Path:
        return self.markdown.path.parent

    @property
    def user_invocable(self) -> bool:
        return self.markdown.meta.get("user-invocable", True) is not False

    @property
    def model_invocable(self) -> bool:
        return self.markdown.meta.get("disable-model-invocation", False) is not True


@lru_cache(maxsize=8)
def _discover(workspace: Path) -> tuple[Skill, ...]:
    found: dict[str, Skill] = {}
    for folder in folders(workspace, "skills"):
        if not folder.path.is_dir():
            continue
        for path in sorted(folder.path.glob("*/SKILL.md"))[:MAX_SKILLS]:
            name = path.parent.name.lower()
            if name in found or " " in name or name.startswith("."):
                continue  # a project skill shadows a user skill of the same name
            markdown = read(path, folder)
            if markdown is None:
                continue
            description = (markdown.text("description") or first_line(markdown.body))[:MAX_DESCRIPTION]
            found[name] = Skill(name, description, markdown)
    return tuple(found.values())


def skills(workspace: Path) -> tuple[Skill, ...]:
    return _discover(Path(workspace))


def find(workspace: Path, name: str) -> Skill | None:
    wanted = name.strip().lstrip("/").lower()
    return next((s for s in skills(workspace) if s.name == wanted), None)


# --- what the model sees ------------------------------------------------------------------


def prompt_part(session: Session) -> PromptPart | None:
    listed = [s for s in skills(session.workspace) if s.model_invocable]
    if not listed or "skill" not in session.kernel.tools:
        return None
    lines = [f"- {s.name}: {s.description}" for s in listed]
    text = (
        "Skills are instructions for particular kinds of task, kept out of this prompt until needed. "
        "When a task matches a skill's description, call the `skill` tool with its name first, then follow what it says.\n"
        + "\n".join(lines)
    )
    return PromptPart(text=text, title="Skills", order=450, source="skills")


def body_for(skill: Skill, arguments: str = "") -> str:
    """A skill's instructions as they are loaded: the body, the folder, the files beside it."""
    body = expand_arguments(skill.markdown.body, arguments) if arguments or "$ARGUMENTS" in skill.markdown.body else skill.markdown.body
    files = sorted(p for p in skill.directory.rglob("*") if p.is_file() and p.name != "SKILL.md")
    listing = "\n".join(f"- {p.relative_to(skill.directory).as_posix()}" for p in files[:MAX_FILES_LISTED])
    more = f"\n- … and {len(files) - MAX_FILES_LISTED} more" if len(files) > MAX_FILES_LISTED else ""
    beside = f"\n\nFiles beside it (read them with read_file when the instructions say so):\n{listing}{more}" if files else ""
    return f'<skill name="{skill.name}" folder="{skill.directory}">\n{body}{beside}\n</skill>'


class SkillInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="The skill's name, as listed under Skills in the system prompt.")


class SkillTool(Tool):
    name = "skill"
    description = "Load a skill's instructions (the skills available are listed in the system prompt under Skills). Call it before a task its description matches."
    input_model = SkillInput
    effects: frozenset[Any] = frozenset()  # reads only the skill files the user installed or trusted
    mutating = False

    def summary(self, args: SkillInput) -> str:  # type: ignore[override]
        return f"load skill {args.name}"

    async def run(self, args: SkillInput, ctx: ToolContext) -> ToolResult:  # type: ignore[override]
        skill = find(ctx.workspace, args.name)
        if skill is None or not skill.model_invocable:
            names = ", ".join(s.name for s in skills(ctx.workspace) if s.model_invocable) or "none"
            return ToolResult.error(f"There is no skill named {args.name!r}. Skills: {names}.")
        allowed = skill.markdown.meta.get("allowed-tools")
        if allowed is not None:
            ctx.plugin_state("skills")["narrow"] = {"skill": skill.name, "allowed": allowed}
        return ToolResult.success(body_for(skill))


def narrowing_vote(call: ProposedCall, session: Session) -> Vote | None:
    """After the model loaded a skill with ``allowed-tools``, the rest of that turn may use
    only those tools: other calls are denied (a deny vote; it can never allow anything)."""
    state = session.state.get("skills")
    narrow = state.get("narrow") if isinstance(state, dict) else None
    if not narrow:
        return None
    source = f"the skill {narrow.get('skill')}"
    limit, _ = tool_filter(narrow.get("allowed"), session.kernel.tools, source)
    if limit is None or call.tool == "skill":
        return None
    refusal = limit.refusal(call.tool, call.input)
    return Vote(decision="deny", reason=refusal, plugin="skills") if refusal else None


# --- /NAME --------------------------------------------------------------------------------


def skill_commands(kernel: Kernel) -> list[Command]:
    commands = []
    for skill in skills(kernel.workspace):
        if not skill.user_invocable:
            continue

        def run(ctx: SlashContext, skill: Skill = skill) -> None:
            run_skill(ctx, skill)

        commands.append(
            Command(
                name=skill.name,
                help=skill.description or "a skill",
                slash=True,
                slash_run=run,
                extra={"source": f"skill, {skill.markdown.folder.label}", "argument_hint": skill.markdown.text("argument-hint"), "prompt": True},
            )
        )
    return commands


def run_skill(ctx: SlashContext, skill: Skill) -> None:
    if ctx.submit is None:
        ctx.print(f"/{skill.name}: this frontend cannot send a skill's prompt")
        return
    narrow, unknown = tool_filter(skill.markdown.meta.get("allowed-tools"), ctx.kernel.tools, f"the skill {skill.name}")
    if unknown:
        ctx.print(f"/{skill.name}: allowed-tools names no loaded tool for: {', '.join(unknown)} (they allow nothing)")
    text = f"Use the skill {skill.name} for this request." + (f"\n\n{ctx.argument}" if ctx.argument.strip() else "") + "\n\n" + body_for(skill, ctx.argument)
    ctx.submit(PromptRequest(text=text, model=skill.markdown.text("model") or None, tool_filter=narrow, source=f"/{skill.name}"))
