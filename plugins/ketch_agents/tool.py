"""The ``agent`` tool: delegate a task to a subagent (offered to root sessions only)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from ketch.api import DELEGATES, Effect, Tool, ToolContext, ToolResult
from ketch_agents.child import AGENT_TOOL
from ketch_agents.definitions import DEFAULT

if TYPE_CHECKING:  # pragma: no cover
    from ketch_agents.definitions import Definition

DESCRIPTION = """Delegate a task to a subagent. It works in a fresh context of its own (it sees nothing of this conversation: give it every fact it needs), with your tools and permissions or fewer, and returns its final answer and the files it changed. Use it for research that would fill your context, for independent tasks in parallel (several agent calls in one response run at the same time), or for a review with a fresh eye. With background=true you go on at once, and its result arrives later as a message.

Agents (the `agent` parameter):
"""


class AgentInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    description: str = Field(
        min_length=1,
        max_length=200,
        description="A short (3-8 words) summary of the task, shown to the user.",
    )
    prompt: str = Field(
        min_length=1,
        max_length=200_000,
        description="The complete task: what to do, what to return, and every fact the agent needs (it cannot see this conversation).",
    )
    agent: str = Field(
        DEFAULT, description="Which agent to use (listed in this tool's description)."
    )
    background: bool = Field(
        False,
        description="Run it in the background: you go on at once, and its result arrives as a message when it is done.",
    )
    isolation: Literal["worktree"] | None = Field(
        None,
        description="worktree: it works in a git worktree of its own (a checkout of the last commit on a new "
        "branch), so agents run in parallel without touching each other's or the user's files; its result "
        "carries its diff, and you merge what you keep with worktree_merge.",
    )


class AgentTool(Tool[AgentInput]):
    name: ClassVar[str] = AGENT_TOOL
    input_model = AgentInput
    effects: ClassVar[frozenset[Effect]] = (
        frozenset()
    )  # it touches nothing itself: its subagent's calls are checked one by one
    mutating: ClassVar[bool] = False  # offered in plan mode too, where its subagents can only read
    concurrent: ClassVar[bool | None] = True
    # It runs a turn of its own for the person: the kernel tells it the call's session,
    # approver and tool narrowing (running_call), which it passes on unchanged.
    capabilities: ClassVar[frozenset[str]] = frozenset({DELEGATES})

    def __init__(self, definitions: dict[str, Definition]) -> None:
        from ketch_agents.definitions import listing, ordered

        self.definitions = ordered(definitions)
        self.description = DESCRIPTION + listing(self.definitions)  # type: ignore[misc]

    def summary(self, args: AgentInput) -> str:
        a: Any = args
        return (
            f"{a.agent}: {a.description}"
            + (" (background)" if a.background else "")
            + (" (in a worktree)" if a.isolation == "worktree" else "")
        )

    async def run(self, args: AgentInput, ctx: ToolContext) -> ToolResult:
        from ketch.api import running_call
        from ketch_agents.child import Child
        from ketch_agents.runtime import runtime_of
        from ketch_agents.settings import AgentsSettings

        a: Any = args
        scope = running_call()
        if scope is None:
            return ToolResult.error("[ketch] The agent tool runs only inside a turn.")
        parent = scope.session
        if parent.parent is not None:
            return ToolResult.error(
                "[ketch] A subagent cannot start subagents; do the work yourself."
            )
        definition = self.definitions.get(a.agent)
        if definition is None:
            return ToolResult.error(
                f"[ketch] There is no agent named '{a.agent}'. Agents: {', '.join(self.definitions)}."
            )
        settings = parent.kernel.settings.of(AgentsSettings)
        runtime = runtime_of(parent, settings.max_concurrent)
        child = Child(
            parent,
            definition,
            task=a.prompt,
            description=a.description,
            scope=scope,
            runtime=runtime,
            settings=settings,
            background=a.background,
            worktree=a.isolation == "worktree" or definition.isolation == "worktree",
        )
        if a.background:
            from ketch_agents.background import start

            start(parent, child, runtime)
            return ToolResult.success(
                f"Started agent '{definition.name}' ({child.agent.id}) in the background. Its result will arrive as a message "
                "when it finishes; go on with other work meanwhile, and do not repeat its task."
            )
        outcome = await child.run()
        return ToolResult(ok=outcome.ok, output=outcome.report())
