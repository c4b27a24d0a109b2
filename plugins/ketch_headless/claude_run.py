"""What Claude Code's options change about a headless run, applied in one place.

* ``--tools LIST`` narrows every turn's tools (never widens them);
* ``--permission-prompt-tool stdio`` makes the program on the other end of the control
  protocol ketch's approver (``--input-format stream-json`` only);
* ``/name args`` as the prompt runs your slash command (``/git:commit`` for
  ``git/commit.md``), as in the shell: its text, its model, its narrowed tools;
* the options that do nothing in ketch are said, one notice line each.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ketch.api import UsageError

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Approver, Kernel, Session, TurnEndEvent


@dataclass
class ClaudeRun:
    kernel: Kernel
    allowed_tools: frozenset[str] | None = None
    stdio_approver: bool = False
    notices: list[str] = field(default_factory=list)

    def turn_tools(self) -> frozenset[str] | None:
        """What ``--tools`` leaves of the tools (MCP tools are never taken away, as in
        Claude Code), or None: no narrowing."""
        if self.allowed_tools is None:
            return None
        mcp = {name for name in self.kernel.tools if name.startswith("mcp__")}
        return self.allowed_tools | mcp

    async def run_prompt(
        self, session: Session, prompt: str, approver: Approver | None, parts: tuple[Any, ...] = ()
    ) -> TurnEndEvent:
        """One turn for ``prompt``: a slash command's expansion when it names one."""
        request = await self._command(session, prompt)
        if request is None:
            return await self.kernel.run_turn(  # type: ignore[no-any-return]
                session, prompt, approver=approver, parts=parts, allowed_tools=self.turn_tools()
            )
        allowed = self.turn_tools()
        if request.allowed_tools is not None:
            allowed = request.allowed_tools if allowed is None else allowed & request.allowed_tools
        provider = None
        if request.model and request.model != session.model:
            provider = self.kernel.build_provider(session.provider.name, request.model)
            old, session.provider = session.provider, provider
        try:
            return await self.kernel.run_turn(  # type: ignore[no-any-return]
                session, request.text, approver=approver, parts=parts, allowed_tools=allowed
            )
        finally:
            if provider is not None:
                session.provider = old
                await provider.aclose()

    async def _command(self, session: Session, prompt: str) -> Any:
        """The prompt a Markdown command or skill hands over, or None (not a command)."""
        import inspect

        from ketch.api import NoticeEvent, SlashContext
        from ketch_prompt_kit.slash import find

        found = find(self.kernel.commands.values(), prompt)
        if found is None or not found[0].extra.get("prompt"):
            return None
        command, argument = found
        queued: list[Any] = []

        def say(line: str) -> None:
            self.kernel.emit(session, NoticeEvent(level="info", message=line))

        ctx = SlashContext(
            kernel=self.kernel, session=session, argument=argument, print=say, submit=queued.append
        )
        result = command.slash_run(ctx)
        if inspect.isawaitable(result):
            await result
        return queued[0] if queued else None


def prepare(kernel: Kernel) -> ClaudeRun:
    """Check Claude Code's options (a usage error before anything runs) and collect
    what they change."""
    from ketch_claude_kit.tool_names import ketch_tools, split_list
    from ketch_headless.claude_options import ignored_notices

    args = kernel.args
    run = ClaudeRun(kernel)
    prompt_tool = getattr(args, "permission_prompt_tool", None)
    if prompt_tool is not None:
        if prompt_tool != "stdio":
            raise UsageError(
                f"--permission-prompt-tool {prompt_tool}: ketch asks a program with "
                "--permission-prompt-command CMD, or the Agent SDK with stdio"
            )
        if getattr(args, "input_format", "text") != "stream-json":
            raise UsageError(
                "--permission-prompt-tool stdio needs --input-format stream-json (the answers come on stdin)"
            )
        run.stdio_approver = True
    tools = getattr(args, "tools", None)
    if tools is not None and tools.strip() != "default":
        wanted = split_list(tools)
        found, unknown = ketch_tools(wanted, kernel.tools)
        if unknown:
            from ketch_claude_kit.tool_names import why_unmapped

            run.notices += [
                f"--tools: {why_unmapped(name, kernel.tools)}; left out" for name in unknown
            ]
        run.allowed_tools = frozenset(found)
    run.notices += list(getattr(args, "claude_notices", None) or [])
    run.notices += ignored_notices(args)
    kernel.notices.extend(run.notices)
    return run
