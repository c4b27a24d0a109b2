"""What the model is told of skills before it loads one: whether the ``skill`` tool is
offered, and the system prompt's listing. Light (no tool module, no input model): both
are read before the first request, the tool's schema coming from the tool cache."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ketch_skills.discovery import extra_folders, held_back, skills

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Kernel, PromptPart, Session
    from ketch_skills.discovery import Skill


def listed(kernel: Kernel) -> list[Skill]:
    """The skills the model may load here: model-invocable, and not held back."""
    held = held_back(kernel)
    return [
        s
        for s in skills(kernel.workspace, extra_folders(kernel))
        if s.model_invocable and s.name not in held
    ]


def offered(kernel: Kernel) -> bool:
    """Whether the ``skill`` tool is offered: there is a skill to load (no skill: no tool,
    and no schema tokens in any request). The registration and the tool cache both ask."""
    return bool(listed(kernel))


def prompt_part(session: Session) -> PromptPart | None:
    shown = listed(session.kernel)
    if not shown or "skill" not in session.kernel.tools:
        return None
    from ketch.api import PromptPart

    lines = [f"- {s.name}: {s.description}" for s in shown]
    text = (
        "Skills are instructions for particular kinds of task, kept out of this prompt until needed. "
        "When a task matches a skill's description, call the `skill` tool with its name first, then follow what it says.\n"
        + "\n".join(lines)
    )
    return PromptPart(text=text, title="Skills", order=450, source="skills")
