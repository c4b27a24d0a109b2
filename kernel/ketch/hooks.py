"""A typed façade over ``pm.hook``: the only way the kernel calls plugins.

Each method says what the kernel expects back, so the loop reads as plain Python and
the hook calling conventions (keyword arguments, list vs firstresult, what a bad
return means) live in one place.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Callable

    from ketch.compaction import CompactionRequest, CompactionResult
    from ketch.events import Event, TurnEndEvent
    from ketch.plugins import PluginManager
    from ketch.policy import PermissionSnapshot, ProposedCall, Vote
    from ketch.prompt import PromptPart
    from ketch.session import Session
    from ketch.settings import Settings
    from ketch.storage import FieldCipher, Store
    from ketch.tools import ToolResult
    from ketch.verdicts import HookVerdict


class Hooks:
    def __init__(self, pm: PluginManager) -> None:
        self.pm = pm
        self._hook = pm.hook

    # --- policy -------------------------------------------------------------------

    def policy_votes(self, call: ProposedCall, snapshot: PermissionSnapshot, session: Session) -> list[Vote]:
        from ketch.policy import Vote

        votes: list[Vote] = []
        for impl in reversed(self._hook.ketch_policy_vote.get_hookimpls()):
            args = {"call": call, "snapshot": snapshot, "session": session}
            vote = impl.function(**{k: args[k] for k in impl.argnames})
            if vote is None:
                continue
            if not isinstance(vote, Vote):  # a malformed vote must not count as allow
                vote = Vote(decision="deny", reason=f"policy plugin '{impl.plugin_name}' returned {type(vote).__name__}, not a Vote")
            votes.append(vote if vote.plugin else vote.model_copy(update={"plugin": impl.plugin_name}))
        return votes

    def sandbox_command(
        self,
        argv: list[str],
        workspace: Path,
        network: bool,
        exposed: Callable[[Path], bool] | None = None,
        reporters: list[Callable[[bool], str | None]] | None = None,
    ) -> list[str] | None:
        result = self._hook.ketch_sandbox_command(argv=argv, workspace=workspace, network=network, exposed=exposed, reporters=reporters)
        return list(result) if result else None

    # --- context -----------------------------------------------------------------

    def system_prompt_parts(self, session: Session) -> list[PromptPart]:
        from ketch.prompt import PromptPart

        parts: list[PromptPart] = []
        for item in self._hook.ketch_system_prompt(session=session):
            for value in item if isinstance(item, list) else [item]:
                if isinstance(value, str):
                    parts.append(PromptPart(text=value))
                elif isinstance(value, PromptPart):
                    parts.append(value)
        return parts

    def compact(self, request: CompactionRequest) -> CompactionResult | None:
        return self._hook.ketch_compact(request=request)  # type: ignore[no-any-return]

    # --- storage -------------------------------------------------------------------

    def field_cipher(self, settings: Settings) -> FieldCipher | None:
        return self._hook.ketch_field_cipher(settings=settings)  # type: ignore[no-any-return]

    def open_store(self, settings: Settings, cipher: FieldCipher | None) -> Store | None:
        return self._hook.ketch_open_store(settings=settings, cipher=cipher)  # type: ignore[no-any-return]

    # --- config ---------------------------------------------------------------------

    def workspace_trusted(self, workspace: Path) -> bool:
        return bool(self._hook.ketch_workspace_trusted(workspace=workspace))

    def credential(self, provider: str, kind: str) -> str | None:
        value = self._hook.ketch_get_credential(provider=provider, kind=kind)
        return value if isinstance(value, str) and value else None

    # --- lifecycle ------------------------------------------------------------------

    def configure(self, kernel: Any) -> None:
        self._hook.ketch_configure(kernel=kernel)

    def session_start(self, session: Session) -> None:
        self._hook.ketch_session_start(session=session)

    def session_end(self, session: Session, reason: str) -> None:
        self._hook.ketch_session_end(session=session, reason=reason)

    def user_prompt_submit(self, session: Session, prompt: str) -> list[HookVerdict]:
        return _verdicts(self._hook.ketch_user_prompt_submit(session=session, prompt=prompt))

    def before_tool_use(self, session: Session, call: ProposedCall) -> list[HookVerdict]:
        return _verdicts(self._hook.ketch_before_tool_use(session=session, call=call))

    def after_tool_use(self, session: Session, call: ProposedCall, result: ToolResult) -> list[str]:
        notes = self._hook.ketch_after_tool_use(session=session, call=call, result=result)
        return [n for n in notes if isinstance(n, str) and n]

    def tool_result(self, session: Session, call: ProposedCall, result: ToolResult) -> ToolResult:
        """Each ``ketch_tool_result`` implementation in turn may replace the result."""
        from ketch.tools import ToolResult

        for impl in reversed(self._hook.ketch_tool_result.get_hookimpls()):
            args = {"session": session, "call": call, "result": result}
            replaced = impl.function(**{k: args[k] for k in impl.argnames})
            if isinstance(replaced, ToolResult):
                result = replaced
        return result

    def before_compaction(self, session: Session, reason: str) -> None:
        self._hook.ketch_before_compaction(session=session, reason=reason)

    def after_compaction(self, session: Session, result: CompactionResult) -> None:
        self._hook.ketch_after_compaction(session=session, result=result)

    def stop(self, session: Session, event: TurnEndEvent) -> list[HookVerdict]:
        return _verdicts(self._hook.ketch_stop(session=session, event=event))

    def event(self, session: Session, event: Event) -> None:
        self._hook.ketch_event(session=session, event=event)


def _verdicts(values: list[Any]) -> list[HookVerdict]:
    from ketch.verdicts import HookVerdict

    return [v for v in values if isinstance(v, HookVerdict)]
