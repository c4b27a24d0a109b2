"""ketch_skills: Agent Skills (``SKILL.md`` with ``name`` and ``description``).

From ``.ketch/skills/`` and ``.claude/skills/`` in the workspace, the user config dir's
``skills/`` and ``~/.claude/skills/``. Only each skill's name and description go into
the system prompt; the body (and the list of files beside it) is loaded when the model
calls the ``skill`` tool, or when the person types ``/NAME``. A skill's
``allowed-tools`` narrows, never widens: typed, it narrows that turn's tools; loaded by
the model, it narrows the rest of that turn (calls to other tools are refused). More folders come
through the ``skills_folders`` hook this plugin declares (an installed Claude Code
plugin's skills, ``plugin-name:NAME``). See docs/skills.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ketch.api import Command, hookimpl, provides

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Event, PermissionSnapshot, PromptPart, ProposedCall, Session, Vote


@hookimpl
def ketch_add_hookspecs(pluginmanager: Any) -> None:
    from ketch_skills import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


def _offered(kernel: Any) -> bool:
    from ketch_skills.listing import offered

    return offered(kernel)


@hookimpl
@provides(
    dynamic="the skill tool, when the workspace or the user has a skill the model may load",
    offered_when=_offered,
)
def ketch_register_tools(register: Callable[[Any], None], kernel: Any) -> None:
    from ketch_skills.skills import SkillTool

    if kernel is None:
        register(SkillTool())
        return
    if not _offered(kernel):
        return  # no skill to load: no tool (and no schema tokens) for the model
    from ketch_skills.discovery import extra_folders, held_back

    register(SkillTool(held_back(kernel), extra_folders(kernel)))


@hookimpl(optionalhook=True)
def trust_items(kernel: Any) -> list[Any]:
    from ketch_skills.discovery import trust_items as items

    return items(kernel)


@hookimpl(optionalhook=True)
def commands_taken_names(kernel: Any) -> list[str]:
    """A skill beats a Markdown command of the same name."""
    from ketch_skills.discovery import extra_folders, skills

    return [s.name for s in skills(kernel.workspace, extra_folders(kernel))]


@hookimpl(optionalhook=True)
def claude_plugins_folder_items(kernel: Any, kind: str, folder: Any) -> list[Any] | None:
    """The skills with scripts in an installed Claude Code plugin's folder, to be
    shown and pinned when it is installed."""
    if kind != "skills":
        return None
    from ketch_skills.discovery import folder_items

    return folder_items(kernel, folder)


@hookimpl
def ketch_register_commands(register: Callable[[Command], None], kernel: Any) -> None:
    if kernel is None:
        return
    from ketch_skills.discovery import skill_commands

    for command in skill_commands(kernel):
        register(command)


@hookimpl
def ketch_system_prompt(session: Session) -> PromptPart | None:
    from ketch_skills.listing import prompt_part

    return prompt_part(session)


@hookimpl
def ketch_policy_vote(
    call: ProposedCall, snapshot: PermissionSnapshot, session: Session
) -> Vote | None:
    """After a skill with allowed-tools was loaded, other calls in its turn are denied."""
    if "skills" not in session.state:
        return None
    from ketch_prompt_kit.allowed_tools import narrowing_vote

    return narrowing_vote(call, session, "skills")


@hookimpl
def ketch_event(session: Session, event: Event) -> None:
    if event.type == "turn_end" and "skills" in session.state:  # a skill narrows only its own turn
        from ketch_prompt_kit.allowed_tools import end_of_turn

        end_of_turn(session, "skills")
