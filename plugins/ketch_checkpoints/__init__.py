"""ketch_checkpoints: undo any turn, file tools and shell commands alike, and rewind.

Right before every call that can change the workspace (``ketch_before_tool_effect``)
and right after it (``ketch_after_tool_use``), the workspace's state is checkpointed:
its files as content-addressed, encrypted blobs in the session store (never plaintext,
never inside the workspace's ``.git``), incrementally. Because it is the workspace's
state and not a log of ketch's own writes, what a shell command did (``rm``, ``mv``,
``sed -i``, a formatter) is covered too.

``/undo``, ``/redo`` and ``/rewind`` in the shell, ``ketch sessions undo|redo|rewind``
headless: a file is only put back when it is still as ketch left it; one that
someone else changed since is listed and left alone unless confirmed or forced.
Which files each call changed is told to other plugins through the hook this plugin
declares, ``checkpoints_files_changed`` (a language server's diagnostics of what a
shell command changed). See docs/checkpoints.md. Heavy modules load inside the hooks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ketch.api import Command, StashKey, hookimpl

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Event, HookVerdict, ProposedCall, Session, ToolResult

STATE = "checkpoints"  # session.state key: the last action the model was told about


@hookimpl
def ketch_add_hookspecs(pluginmanager: Any) -> None:
    from ketch_checkpoints import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


@hookimpl
def ketch_register_settings(register: Callable[[Any], None]) -> None:
    from ketch_checkpoints.settings import CHECKPOINTS

    register(CHECKPOINTS)


@hookimpl
def ketch_register_events(register: Callable[[Any], None]) -> None:
    from ketch_checkpoints.conversation import ChangesEvent, RewindEvent

    register(ChangesEvent)
    register(RewindEvent)


@hookimpl
def ketch_register_commands(register: Callable[[Command], None]) -> None:
    from ketch_checkpoints import commands as c

    register(
        Command(
            name="undo",
            parent="sessions",
            help="revert the files of a session's latest turn that changed any",
            cli=True,
            configure=c.configure_undo,
            run=c.run_undo,
        )
    )
    register(
        Command(
            name="redo",
            parent="sessions",
            help="put back what the latest undo reverted",
            cli=True,
            configure=c.configure_undo,
            run=c.run_redo,
        )
    )
    register(
        Command(
            name="rewind",
            parent="sessions",
            help="restore the files and/or conversation to before turn TURN",
            cli=True,
            configure=c.configure_rewind,
            run=c.run_rewind,
        )
    )
    register(
        Command(
            name="turns",
            parent="sessions",
            help="a session's turns: prompt, time, files changed, undone or rewound",
            cli=True,
            configure=c.configure_turns,
            run=c.run_turns,
        )
    )
    register(
        Command(
            name="undo",
            help="revert the files the last turn changed: /undo [--force | --keep-changed]",
            slash=True,
            slash_run=c.slash_undo,
        )
    )
    register(
        Command(
            name="redo", help="put back what /undo reverted", slash=True, slash_run=c.slash_redo
        )
    )
    register(
        Command(
            name="rewind",
            help="restore code and/or conversation to before a turn: /rewind [N] [code|conversation|both]",
            slash=True,
            slash_run=c.slash_rewind,
        )
    )


def _live(session: Session) -> Any:
    """The session's checkpointer, made on first use (None: checkpoints are off)."""
    from ketch_checkpoints.live import live

    return live(session)


def _existing(session: Session) -> Any:
    """The session's checkpointer if one was made already (never makes one)."""
    from ketch_checkpoints.live import LIVE

    return session.stash.get(LIVE)


@hookimpl
async def ketch_before_tool_effect(session: Session, call: ProposedCall) -> None:
    from ketch_checkpoints.live import changes_workspace, say_off

    if changes_workspace(call):
        found = _live(session)
        if found is not None:
            await found.before(call)
        else:
            say_off(session)


@hookimpl
async def ketch_after_tool_use(session: Session, call: ProposedCall, result: ToolResult) -> None:
    found = _existing(session)
    if found is not None and call.id in found.open:
        await found.after(call)


# The prompt that starts a turn while the store still opens beside the first request:
# its checkpoint is recorded once the store is open (here, not in live.py: the prompt
# arrives before the first request, and the checkpoint machinery loads after it).
PENDING_TURN = StashKey[str]()


@hookimpl
def ketch_event(session: Session, event: Event) -> None:
    if event.type == "message":
        from ketch_context_kit.turns import is_prompt

        message = event.message  # type: ignore[attr-defined]
        if is_prompt(message):
            if session.kernel.hooks.first("store_pending", kernel=session.kernel):
                session.stash[PENDING_TURN] = message.id  # recorded once the store is open
                return
            found = _live(session)
            if found is not None:
                found.prompt(message.id)
    elif event.type == "tool_call":
        from ketch_checkpoints.live import changes_workspace

        tool = session.kernel.tools.get(event.name)  # type: ignore[attr-defined]
        if tool is not None and changes_workspace(tool):
            found = _live(session)
            if found is not None:
                found.warm()
    elif event.type == "turn_end":
        if PENDING_TURN in session.stash:
            _live(session)  # the store is open by now: the turn is recorded
        found = _existing(session)
        if found is not None:
            found.turn_ended()


@hookimpl(optionalhook=True)
def verbatim_prompts(session: Session) -> str:
    """A fresh session has no undo, redo or rewind to tell the model about."""
    return "(?s).*"


@hookimpl
def ketch_user_prompt_submit(session: Session, prompt: str) -> HookVerdict | None:
    """Tell the model what an undo, redo or rewind changed under it since it last looked."""
    if session.kernel.hooks.first("store_pending", kernel=session.kernel):
        return None  # a new session (a resumed one opens its store first): nothing to tell
    from ketch.api import HookVerdict
    from ketch_checkpoints.timeline import COLLECTION, Timeline

    found = _live(session)
    if found is None:
        return None
    state = session.state.setdefault(STATE, {})
    try:
        records = found.blobs.records(session.id, COLLECTION)
    except Exception:  # noqa: BLE001 - the notes are a courtesy; a failing store says so elsewhere
        return None
    if not records:
        return None
    line = Timeline.read(records)
    told = int(state.get("told") or 0)
    notes = [a.data["tell"] for a in line.notes_after(told)]
    state["told"] = line.last_seq
    return HookVerdict(context="\n".join(notes)) if notes else None


@hookimpl
def ketch_session_end(session: Session, reason: str) -> None:
    found = _existing(session)
    if found is not None:
        found.end()
