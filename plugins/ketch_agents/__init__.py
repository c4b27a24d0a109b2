"""Subagents: the ``agent`` tool runs a task in a child session (docs/agents.md).

A child has its own context (its system prompt from the context plugins plus its
definition's instructions, the task, none of the parent's history) and its parent's
authority, never more: the same policy, rules, approvals, sandbox and mode, its asks
routed to the parent's approver, its tools the parent turn's less ``agent``, narrowed
by its definition. Several agent calls of one response run side by side, at most
``[agents] max_concurrent`` at once; each child has its own step limit. Definitions
are Markdown files in ``.ketch/agents/``, ``.claude/agents/`` and the user's
``agents/`` folders, and in the folders other plugins add through the
``agents_folders`` hook this plugin declares (an installed Claude Code plugin's,
``plugin-name:NAME``). Background subagents report at the parent's next step.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ketch.api import hookimpl, provides

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import (
        Event,
        HookVerdict,
        Kernel,
        PromptPart,
        ProposedCall,
        Session,
        ToolResult,
        TurnEndEvent,
    )

PREAMBLE = (
    "You are a subagent: another agent handed you one task, and your final answer is all it will see of your work. "
    "You cannot see its conversation, and you cannot ask it or the user questions: work with what the task says, "
    "and say what you assumed. When you are done, answer with the result itself, complete and concise (paths, "
    "line numbers, what you changed and why), not a description of your process."
)


@hookimpl
def ketch_add_hookspecs(pluginmanager: Any) -> None:
    from ketch_agents import hookspecs

    pluginmanager.add_hookspecs(hookspecs)  # agents_subagent_start/stop


@hookimpl
def ketch_register_events(register: Callable[[Any], None]) -> None:
    from ketch_agents.events import SubagentEvent

    register(SubagentEvent)


@hookimpl
def ketch_register_settings(register: Callable[[Any], None]) -> None:
    from ketch_agents.settings import AGENTS

    register(AGENTS)


def _offered_definitions(kernel: Kernel) -> dict[str, Any]:
    """The definitions the agent tool offers here (a problem found in one is a notice)."""
    from ketch_agents.definitions import extra_folders, load

    definitions, problems = load(kernel.workspace, extra_folders(kernel))
    kernel.notices.extend(p for p in problems if p not in kernel.notices)
    return trusted_definitions(kernel, definitions)


def _listed(kernel: Kernel) -> str:
    """What varies in the agent tool: the agents its description lists (the tool cache
    keeps its schema by this, so the tool module loads at its first call)."""
    from ketch_agents.definitions import listing, ordered

    return listing(ordered(_offered_definitions(kernel)))


@hookimpl
@provides(
    "agent",
    dynamic="its description lists the agents defined for this workspace and user",
    offered_when=_listed,
)
def ketch_register_tools(register: Callable[[Any], None], kernel: Kernel) -> None:
    from ketch_agents.tool import AgentTool

    register(AgentTool(_offered_definitions(kernel)))


def trusted_definitions(kernel: Kernel, definitions: dict[str, Any]) -> dict[str, Any]:
    """A project's (or an installed plugin's) definitions only while the person has
    each file trusted (pinned)."""
    from ketch_agents.definitions import trust_item
    from ketch_trust_kit import check

    return {
        name: d
        for name, d in definitions.items()
        if not d.project
        or d.path is None
        or check(kernel, trust_item(d, kernel.workspace), held="not offered", scope=d.scope)
    }


@hookimpl(optionalhook=True)
def trust_items(kernel: Kernel) -> list[Any]:
    from ketch_agents.definitions import project_items

    return project_items(kernel.workspace)


@hookimpl(optionalhook=True)
def claude_plugins_folder_items(kernel: Kernel, kind: str, folder: Any) -> list[Any] | None:
    """The agent definitions of an installed Claude Code plugin's folder, to be shown
    and pinned when it is installed."""
    if kind != "agents":
        return None
    from ketch_agents.definitions import folder_items

    return folder_items(kernel.workspace, folder)


@hookimpl
def ketch_system_prompt(session: Session) -> list[PromptPart] | None:
    if session.parent is None:
        return None
    from ketch.api import PromptPart
    from ketch_agents.runtime import CHILD

    parts = [PromptPart(text=PREAMBLE, title="Your task", order=50, source="agents")]
    state = session.stash.get(CHILD)
    if state is not None and state.definition.prompt:
        parts.append(
            PromptPart(
                text=state.definition.prompt,
                title=f"Your instructions ({state.definition.name})",
                order=60,
                source=f"agents:{state.definition.source}",
            )
        )
    return parts


@hookimpl
def ketch_after_tool_use(session: Session, call: ProposedCall, result: ToolResult) -> None:
    """Note what a subagent changed, for the result its parent gets."""
    if session.parent is None or not result.ok:
        return
    from ketch.api import Effect
    from ketch_agents.runtime import CHILD

    state = session.stash.get(CHILD)
    if state is None:
        return
    for access in call.accesses:
        if access.effect == Effect.WRITE:
            path = _shown_path(session, access.target)
            if path not in state.changed:
                state.changed.append(path)
        elif access.effect == Effect.EXECUTE:
            state.commands.append(access.target)


def _shown_path(session: Session, target: str) -> str:
    from pathlib import Path

    try:
        return str(Path(target).relative_to(session.workspace))
    except ValueError:
        return target


@hookimpl
async def ketch_stop(session: Session, event: TurnEndEvent) -> HookVerdict | None:
    """A turn does not end while background subagents it started still run: their
    results arrive as steers, and the loop goes on with them."""
    if session.parent is not None:
        return None
    from ketch_agents.background import wait_all

    await wait_all(session)
    return None


@hookimpl
def ketch_event(session: Session, event: Event) -> None:
    if (
        event.type == "turn_end"
        and session.parent is None
        and getattr(event, "stop_reason", "") == "cancelled"
    ):
        from ketch_agents.background import cancel_all

        cancel_all(session)  # Ctrl-C stops every subagent, background ones too


@hookimpl
def ketch_session_end(session: Session, reason: str) -> None:
    if session.parent is None:
        from ketch_agents.background import cancel_all

        cancel_all(session)
