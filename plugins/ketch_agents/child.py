"""Running one subagent: a child session with its own context and its parent's authority.

The child session starts empty (no parent history) with the parent's provider (or the
definition's model on it), workspace (or, isolated, a git worktree of its own: its
result then carries its diff, for the parent to merge what it keeps), trust and sandbox, and shares the parent's
"allow for this session" approvals. Its permission snapshot is its parent's, taken at
each of its steps: the same rules, profile and mode (plan stays plan). Its tools are
the parent turn's, less the ``agent`` tool, narrowed by the definition. An ask goes to
the parent's approver, one at a time, naming the subagent; with no approver it is
denied, as for the parent. Its events carry its ``agent_id`` and reach the parent's
listeners; the store keeps them under the parent session.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ketch.api import NoticeEvent, Session, SessionEvent, new_id
from ketch_agents.events import SubagentEvent
from ketch_agents.runtime import CHILD, ChildState

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import (
        ApprovalAnswer,
        ApprovalRequest,
        Approver,
        PermissionSnapshot,
        Provider,
        RunningCall,
        TurnEndEvent,
    )
    from ketch_agents.definitions import Definition
    from ketch_agents.runtime import Runtime
    from ketch_agents.settings import AgentsSettings

AGENT_TOOL = "agent"
# Claude Code's model aliases: without a mapping in [agents] models they mean "the parent's".
CLAUDE_ALIASES = frozenset({"inherit", "sonnet", "opus", "haiku", "fable", "default"})


@dataclass(frozen=True)
class Subagent:
    """Who a subagent's session is: ``id`` (its events carry it as ``agent_id``), the
    name of its definition, the task's short description, its parent session and the
    parent's tool call that started it."""

    id: str
    name: str
    parent_id: str
    description: str = ""
    tool_call_id: str = ""
    background: bool = False


@dataclass
class ChildSession(Session):
    """A subagent's session: its authority is read from its parent at every step."""

    agent: Subagent | None = None

    def snapshot(self) -> PermissionSnapshot:
        parent = self.parent
        assert parent is not None
        self.mode, self.profile = parent.mode, parent.profile
        snapshot = parent.snapshot()
        if self.workspace != parent.workspace:  # its own worktree: paths are judged there
            return snapshot.model_copy(update={"workspace": self.workspace})
        return snapshot


@dataclass
class Isolated:
    """The worktree a subagent worked in, and what it changed there."""

    name: str
    branch: str
    path: str
    stat: str = ""
    files: list[tuple[str, str]] = field(default_factory=list)
    patch: str = ""
    problem: str = ""  # why its changes could not be read
    merge_tool: bool = True  # whether the parent has worktree_merge

    def report(self) -> list[str]:
        lines = [
            "",
            f"It worked in its own git worktree {self.name!r} (branch {self.branch}, at {self.path}); "
            "none of it is in your files yet.",
        ]
        if self.problem:
            return [*lines, f"Its changes could not be read: {self.problem}"]
        if not self.files:
            return [*lines, "It changed nothing there."]
        lines.append(f"Its changes ({self.stat}):")
        lines += [f"- {status} {path}" for status, path in self.files[:100]]
        patch = self.patch
        if len(patch) > PATCH_LIMIT:
            patch = (
                patch[:PATCH_LIMIT]
                + f"\n… (the diff goes on: {len(self.patch) - PATCH_LIMIT:,} more characters)"
            )
        lines += ["", "```diff", patch.rstrip("\n"), "```", ""]
        how = (
            f"merge them with worktree_merge (name: {self.name!r}); the user approves the merge"
            if self.merge_tool
            else f"the user merges them (`ketch worktrees merge {self.name}`)"
        )
        lines.append(
            f"To keep them, {how}. Otherwise leave them: the user can look "
            f"(`ketch worktrees diff {self.name}`) and remove the worktree."
        )
        return lines


PATCH_LIMIT = 20_000  # characters of a worktree's diff in the parent's tool result


@dataclass
class Outcome:
    agent: Subagent
    stop_reason: str
    text: str
    changed: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    iterations: int = 0
    problem: str = ""  # why it could not run at all
    isolated: Isolated | None = None  # its worktree, when it worked in one

    @property
    def ok(self) -> bool:
        return self.stop_reason == "end_turn"

    def report(self) -> str:
        """What the parent model gets back."""
        agent = self.agent
        if self.problem:
            return f"[ketch] Agent '{agent.name}' could not run: {self.problem}"
        head = f"Agent '{agent.name}' ({agent.id}) " + (
            "finished."
            if self.ok
            else f"stopped early ({STOPS.get(self.stop_reason, self.stop_reason)}); what it had so far:"
        )
        lines = [head, "", self.text.strip() or "(it gave no final answer)"]
        if self.changed:
            lines += ["", "Files it changed:", *(f"- {path}" for path in self.changed)]
        if self.commands:
            lines += [
                "",
                "Commands it ran (they may have changed files too):",
                *(f"- {c if len(c) <= 200 else c[:197] + '...'}" for c in self.commands),
            ]
        if self.isolated is not None:
            lines += self.isolated.report()
        return "\n".join(lines)


STOPS = {
    "max_iterations": "it reached its step limit",
    "cancelled": "it was cancelled",
    "error": "an error ended its turn",
    "context_overflow": "its context did not fit the model",
}


class Child:
    def __init__(
        self,
        parent: Session,
        definition: Definition,
        *,
        task: str,
        description: str,
        scope: RunningCall,
        runtime: Runtime,
        settings: AgentsSettings,
        background: bool,
        worktree: bool = False,
    ) -> None:
        self.parent = parent
        self.worktree = worktree
        self.kernel = parent.kernel
        self.definition = definition
        self.task = task
        self.scope = scope
        self.runtime = runtime
        self.settings = settings
        self.agent = Subagent(
            id=new_id("agt_")[:16],
            name=definition.name,
            parent_id=parent.id,
            description=description,
            tool_call_id=scope.call_id,
            background=background,
        )

    # --- running -------------------------------------------------------------------------

    async def run(self) -> Outcome:
        """The whole task in a task of its own (a cancel reaches the child's turn and
        still ends it cleanly), then the cancel goes on to the caller."""
        outcome = await asyncio.ensure_future(self._run())
        current = asyncio.current_task()
        if current is not None and current.cancelling():
            raise asyncio.CancelledError
        return outcome

    async def _run(self) -> Outcome:
        async with self.runtime.limit:
            try:
                provider, owned = self._provider()
            except Exception as exc:  # noqa: BLE001 - a bad model name is the parent's problem to hear
                return self._finished(
                    Outcome(self.agent, "error", "", problem=str(getattr(exc, "message", exc)))
                )
            place: tuple[Any, Any, Path] | None = None
            if self.worktree:
                try:
                    place = await self._make_worktree()
                except Exception as exc:  # noqa: BLE001 - WorktreeError, said to the parent model
                    if owned:
                        with contextlib.suppress(Exception):
                            await provider.aclose()
                    return self._finished(
                        Outcome(
                            self.agent,
                            "error",
                            "",
                            problem=f"it needs a worktree of its own, which could not be made: {exc}",
                        )
                    )
            child = self._session(provider, place[2] if place else self.parent.workspace)
            self._emit_parent(self._event("started", session_id=child.id))
            self._start(child)
            try:
                end = await self._turns(child)
            finally:
                with contextlib.suppress(Exception):
                    self.kernel.end(child, "subagent")
                # The parent's spend includes its children's.
                self.parent.usage = self.parent.usage + child.usage
                if owned:
                    with contextlib.suppress(Exception):
                        await provider.aclose()
            state = child.stash[CHILD]
            isolated = await self._worktree_changes(place) if place is not None else None
            return self._finished(
                Outcome(
                    self.agent,
                    end.stop_reason,
                    end.text,
                    list(state.changed),
                    list(state.commands),
                    end.iterations,
                    isolated=isolated,
                )
            )

    async def _make_worktree(self) -> tuple[Any, Any, Path]:
        """A worktree of the parent's repository for this subagent (one at a time: git
        takes the repository's locks), and the folder its session works in."""
        from ketch_worktree_kit import Repo, create, relative_start

        parent = self.parent
        async with self.runtime.worktrees:
            repo = Repo.of(parent.workspace, self.kernel.environ)
            record = await asyncio.to_thread(create, repo, f"agent-{self.agent.id[4:]}")
        return repo, record, relative_start(repo, parent.workspace, record)

    async def _worktree_changes(self, place: tuple[Any, Any, Path]) -> Isolated:
        from ketch_worktree_kit import changes

        repo, record, _ = place
        found = Isolated(record.name, record.branch, record.path)
        found.merge_tool = "worktree_merge" in self.kernel.tools
        try:
            got = await asyncio.to_thread(changes, repo, record, patch=True)
        except Exception as exc:  # noqa: BLE001 - WorktreeError: the parent hears why
            found.problem = str(exc)
            return found
        found.stat, found.files, found.patch = got.stat(), got.files, got.patch
        return found

    def _finished(self, outcome: Outcome) -> Outcome:
        result = outcome.text if not outcome.problem else outcome.report()
        self._emit_parent(
            self._event(
                "finished",
                stop_reason=outcome.stop_reason,
                result=result,
                files_changed=outcome.changed,
            )
        )
        return outcome

    def _event(self, status: str, **extra: Any) -> SubagentEvent:
        agent = self.agent
        return SubagentEvent(
            status=status,
            subagent_id=agent.id,
            name=agent.name,
            description=agent.description,
            tool_call_id=agent.tool_call_id,
            background=agent.background,
            **extra,
        )  # type: ignore[arg-type]

    async def _turns(self, child: ChildSession) -> TurnEndEvent:
        from ketch.api import Turn

        hooks = self.kernel.hooks
        started = await hooks.values_async(
            "agents_subagent_start", session=self.parent, agent=self.agent
        )
        contexts = [v.context for v in started if v.context]
        prompt = "\n\n".join([self.task, *contexts])
        allowed = self._tools()
        approver = self._approver()
        limit = min(
            self.settings.max_iterations, self.definition.max_turns or self.settings.max_iterations
        )
        for attempt in range(2):  # a SubagentStop hook may keep it going once
            turn = Turn(child, approver, allowed_tools=allowed)
            turn.max_iterations = limit
            end = await turn.run(prompt)
            if end.stop_reason != "end_turn" or attempt:
                break
            more = next(
                (
                    v
                    for v in await hooks.values_async(
                        "agents_subagent_stop",
                        session=self.parent,
                        agent=self.agent,
                        result=end.text,
                    )
                    if v.block
                ),
                None,
            )
            if more is None:
                break
            prompt = f"[ketch] A SubagentStop hook asked you to continue: {more.reason}"
        return end

    # --- the child's parts --------------------------------------------------------------------

    def _provider(self) -> tuple[Provider, bool]:
        """The parent's provider, or the definition's model on it (then owned here)."""
        parent = self.parent
        model = self.definition.model
        if model:
            model = self.settings.models.get(model, model)
        if not model or model in CLAUDE_ALIASES or model == parent.model:
            if model and model != "inherit" and model != parent.model:
                self._emit_parent(
                    NoticeEvent(
                        level="info",
                        message=f"agent '{self.agent.name}' names model '{model}', which [agents] models does not map; it uses {parent.model}",
                    )
                )
            return parent.provider, False
        return self.kernel.build_provider(parent.provider.name, model), True

    def _session(self, provider: Provider, workspace: Path) -> ChildSession:
        parent = self.parent
        child = ChildSession(
            kernel=self.kernel,
            provider=provider,
            workspace=workspace,
            mode=parent.mode,
            profile=parent.profile,
            listeners=parent.listeners,  # the parent's frontends see the child's events
            context_window=parent.context_window,
            parent=parent,  # its snapshot, approvals included, is its parent's
            agent_id=self.agent.id,
            agent_name=self.agent.name,
            agent=self.agent,
        )
        child.stash[CHILD] = ChildState(self.definition)
        return child

    def _start(self, child: ChildSession) -> None:
        self.kernel.emit(
            child,
            SessionEvent(
                session_id=child.id,
                model=child.model,
                mode=child.mode,
                profile=child.profile,
                provider=child.provider.name,
            ),
        )
        self.kernel.hooks.call("ketch_session_start", session=child)

    def _tools(self) -> frozenset[str]:
        """The parent turn's tools less ``agent``, narrowed by the definition."""
        from ketch_claude_kit.tool_names import ketch_tools

        tools = self.kernel.tools
        names = (
            set(tools)
            if self.scope.allowed_tools is None
            else set(self.scope.allowed_tools) & set(tools)
        )
        names.discard(AGENT_TOOL)  # a subagent never starts subagents
        definition = self.definition
        if definition.tools is not None:
            wanted, _ = ketch_tools(definition.tools, names)
            names &= wanted
        if definition.disallowed:
            unwanted, _ = ketch_tools(definition.disallowed, names)
            names -= unwanted
        if definition.read_only:
            names = {n for n in names if not tools[n].mutating}
        return frozenset(names)

    def _approver(self) -> Approver | None:
        parent_approver = self.scope.approver
        if parent_approver is None:
            return None  # no one can approve: asks are denied, exactly as for the parent
        lock = self.runtime.approvals
        label = (
            f"{self.agent.name}: {self.agent.description}"
            if self.agent.description
            else self.agent.name
        )

        async def approve(request: ApprovalRequest) -> ApprovalAnswer:
            async with lock:  # one question at a time, whichever subagent asks
                return await parent_approver(request.model_copy(update={"agent": label}))

        return approve

    def _emit_parent(self, event: Any) -> None:
        self.kernel.emit(self.parent, event)
