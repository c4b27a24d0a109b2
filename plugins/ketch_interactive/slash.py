"""Slash commands: the shell's own (/help /exit /clear /model /status) and every
``slash=True`` command plugins register (``/mode``, ``/compact``, ...), dispatched by name.

The shell's own commands come first, so a plugin cannot take over /exit or /help.
While a turn runs only the harmless ones (/help, /status) and /exit are accepted; the
rest would change the session under the running loop's feet.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ketch.api import Command, KetchError, PromptRequest, SlashContext

if TYPE_CHECKING:  # pragma: no cover
    from ketch_interactive.shell import Shell


KEYS_HELP = (
    "keys: Enter sends · Alt-Enter (Esc Enter) adds a line · ↑/↓ history · Ctrl-R searches the history\n"
    "      Tab completes /commands and @paths · Esc Esc puts your previous prompt back to edit\n"
    "      Shift-Tab switches plan/build mode · Ctrl-C cancels a running turn or clears the line · Ctrl-D quits\n"
    "      while a turn runs, type and press Enter to steer: the model gets it at its next step\n"
    "in a prompt: @path attaches a file (@dir/ a listing) · !command runs your own command in the workspace"
)


def parse(text: str) -> tuple[str, str] | None:
    """``/name rest`` -> (name, rest); None when the line is not a command (e.g. ``/usr/bin ...``).
    ``/git:commit`` is a name (ketch_prompt_kit.slash)."""
    from ketch_prompt_kit.slash import parse as parse_slash

    return parse_slash(text)


@dataclass
class Builtin:
    name: str
    help: str
    run: Callable[[Shell, str], Awaitable[bool]]  # True: leave the shell
    during_turn: bool = False
    aliases: tuple[str, ...] = ()


async def _help(shell: Shell, argument: str) -> bool:
    say = shell.renderer.say
    rows = [(f"/{b.name}", b.help) for b in BUILTINS] + [
        (f"/{c.name}", command_meta(c)) for c in plugin_commands(shell)
    ]
    width = max(len(name) for name, _ in rows) + 2
    say("commands:")
    for name, text in rows:
        say(f"  {name.ljust(width)}{text}")
    say(KEYS_HELP)
    return False


async def _exit(shell: Shell, argument: str) -> bool:
    return True


async def _clear(shell: Shell, argument: str) -> bool:
    shell.renderer.line("· new session (the previous one stays saved)", "dim")
    await shell.new_session()
    return False


async def _model(shell: Shell, argument: str) -> bool:
    session, say = shell.session, shell.renderer.say
    words = argument.split()
    if not words:
        say(f"model: {session.model} via {session.provider.name}")
        say("switch with /model MODEL (same provider) or /model PROVIDER MODEL")
        return False
    if len(words) > 2:
        say("usage: /model MODEL, or /model PROVIDER MODEL")
        return False
    provider_name = words[0] if len(words) == 2 else session.provider.name
    try:
        provider = shell.kernel.build_provider(provider_name, words[-1])
    except KetchError as exc:
        shell.renderer.line(f"ketch: {exc.message.splitlines()[0]}", "red")
        return False
    old, session.provider = session.provider, provider
    await shell.close_provider(old)
    from ketch.api import NoticeEvent

    shell.kernel.emit(session, NoticeEvent(message=f"model: {provider.model} via {provider.name}"))
    return False


async def _status(shell: Shell, argument: str) -> bool:
    from ketch_interactive.render import meter_for

    session, say = shell.session, shell.renderer.say
    meter = meter_for(session, shell.renderer.last_usage)
    resumed = " (resumed)" if session.resumed else ""
    say(f"session    {session.id}{resumed}")
    say(f"model      {session.model} via {session.provider.name}")
    say(f"mode       {session.mode} · profile {session.profile}")
    held = [
        lay
        for lay in shell.kernel.loaded_settings.layers
        if lay.name == "workspace" and lay.ignored
    ]
    off = f" ({len(held[0].ignored)} config value(s) off until trusted: /trust)" if held else ""
    say(f"workspace  {session.workspace}{off}")
    say(f"context    {meter.detail()}")
    say(
        f"usage      in {session.usage.input_tokens:,} · out {session.usage.output_tokens:,} tokens this session"
    )
    say(f"history    {shell.history_status()}")
    return False


async def _reasoning(shell: Shell, argument: str) -> bool:
    renderer = shell.renderer
    words = argument.split()
    if words and words[0] in ("on", "off"):
        renderer.show_reasoning = words[0] == "on"
        renderer.say(
            f"reasoning: {'streamed as it comes (dimmed)' if renderer.show_reasoning else 'collapsed to one line'}"
        )
        return False
    if not renderer.reasoning.strip():
        renderer.say("no reasoning yet in this session (the model may not reason, or not show it)")
        return False
    renderer.line(renderer.reasoning.strip(), "dim italic")
    return False


async def _sessions(shell: Shell, argument: str) -> bool:
    from ketch_interactive.sessions import sessions_command

    return await sessions_command(shell, argument)


async def _resume(shell: Shell, argument: str) -> bool:
    from ketch_interactive.sessions import resume_command

    return await resume_command(shell, argument)


async def _rename(shell: Shell, argument: str) -> bool:
    from ketch_interactive.sessions import rename_command

    return await rename_command(shell, argument)


async def _btw(shell: Shell, argument: str) -> bool:
    import asyncio

    from ketch_interactive.btw import ask

    question = argument.strip()
    if not question:
        shell.renderer.say(
            "usage: /btw QUESTION (answered on the side; the conversation is not changed)"
        )
        return False
    if shell.busy is not None and not shell.busy.done():  # beside the running turn
        shell.side_tasks.add(task := asyncio.ensure_future(ask(shell, question)))
        task.add_done_callback(shell.side_tasks.discard)
        return False
    await shell.run_cancellable(ask(shell, question))
    return False


async def _diff(shell: Shell, argument: str) -> bool:
    from ketch_interactive.sessions import diff_command

    return await diff_command(shell, argument)


BUILTINS: list[Builtin] = [
    Builtin("help", "list the commands and keys", _help, during_turn=True),
    Builtin("exit", "leave the shell (also Ctrl-D)", _exit, during_turn=True, aliases=("quit",)),
    Builtin("clear", "start a new session (the current one stays saved)", _clear),
    Builtin("model", "show the model, or switch: /model MODEL, /model PROVIDER MODEL", _model),
    Builtin(
        "status", "session, model, mode, profile and the context meter", _status, during_turn=True
    ),
    Builtin(
        "sessions",
        "this workspace's saved sessions: name, age, first prompt",
        _sessions,
        during_turn=True,
    ),
    Builtin(
        "resume",
        "pick a session of this workspace to continue (/resume ID goes straight there)",
        _resume,
    ),
    Builtin("rename", "name this session: /rename NAME", _rename),
    Builtin(
        "btw",
        "a side question, answered without tools and not added to the conversation: /btw QUESTION",
        _btw,
        during_turn=True,
    ),
    Builtin(
        "diff",
        "every file change this session made (/diff PATH: only that file)",
        _diff,
        during_turn=True,
    ),
    Builtin(
        "reasoning",
        "show the model's last reasoning; /reasoning on|off streams it or keeps it collapsed",
        _reasoning,
        during_turn=True,
    ),
]


def builtin(name: str) -> Builtin | None:
    return next((b for b in BUILTINS if name == b.name or name in b.aliases), None)


def plugin_commands(shell: Shell) -> list[Command]:
    own = {b.name for b in BUILTINS} | {a for b in BUILTINS for a in b.aliases}
    found = [
        c
        for c in shell.kernel.commands.values()
        if c.slash and c.slash_run is not None and c.name not in own
    ]
    return sorted(found, key=lambda c: c.name)


def plugin_command(shell: Shell, name: str) -> Command | None:
    for command in plugin_commands(shell):
        if name == command.name or name in command.aliases:
            return command
    return None


def completions(shell: Shell) -> list[tuple[str, str]]:
    """(``/name``, what to show beside it) for every command the shell can run."""
    rows = {f"/{b.name}": b.help for b in BUILTINS}
    for command in plugin_commands(shell):
        rows.setdefault(f"/{command.name}", command_meta(command))
    return sorted(rows.items())


def command_meta(command: Command) -> str:
    """A command's help line with its argument hint and where it comes from."""
    hint = command.extra.get("argument_hint") or ""
    source = command.extra.get("source") or command.plugin
    return " ".join(filter(None, [hint, command.help, f"({source})" if source else ""]))


async def run_plugin_command(shell: Shell, command: Command, argument: str) -> bool:
    """Run one plugin command, then the prompt it submitted, if any (a Markdown command's).
    Its failure is one line, never a traceback. True: leave the shell."""
    assert command.slash_run is not None
    queued: list[PromptRequest] = []
    ctx = SlashContext(
        kernel=shell.kernel,
        session=shell.session,
        argument=argument,
        print=shell.renderer.say,
        submit=queued.append,
        choose=_choose,
        prefill=lambda text: setattr(shell, "next_default", text),
    )
    try:
        result = command.slash_run(ctx)
        if inspect.isawaitable(result):
            await shell.run_cancellable(result)
    except KetchError as exc:
        shell.renderer.line(f"/{command.name}: {exc.message}", "red")
        return False
    except Exception as exc:  # noqa: BLE001 - a plugin's bug must not end the shell
        shell.renderer.line(f"/{command.name} failed: {type(exc).__name__}: {exc}", "red")
        return False
    for request in queued:
        if await shell.run_prompt_request(request):
            return True
    return False


async def _choose(title: str, options: list[str]) -> int | None:
    """A plugin command's pick-one list (SlashContext.choose): digits pick the first
    nine, arrows and Enter any; Esc or Ctrl-C cancel (None)."""
    from prompt_toolkit.formatted_text import FormattedText

    from ketch_interactive.approval import Interrupted, choose

    items = [
        (index, label, str(index + 1) if index < 9 else "") for index, label in enumerate(options)
    ]
    try:
        picked = await choose(FormattedText([("class:title", title + "\n")]), items, cancel=-1)
    except Interrupted:
        return None
    return None if picked < 0 else picked


def refresh(shell: Shell) -> None:
    """Pick up commands added or changed since (Markdown commands, skills): between turns,
    and when a name is not known."""
    try:
        shell.kernel.reload_commands()
    except Exception as exc:  # noqa: BLE001 - a broken command file must not stop the shell
        shell.renderer.line(
            f"! could not reload the commands: {type(exc).__name__}: {exc}", "yellow"
        )


def waits_for_the_turn(shell: Shell, name: str) -> bool:
    """Whether ``/name`` cannot run while a turn runs (it would change the session
    under the loop, or it is not known yet)."""
    own = builtin(name)
    if own is not None:
        return not own.during_turn
    return True


async def dispatch(shell: Shell, name: str, argument: str, *, during_turn: bool) -> bool:
    """Run ``/name argument``. True when the shell should exit."""
    own = builtin(name)
    if own is not None:
        if during_turn and not own.during_turn:
            shell.renderer.line(
                f"/{name} has to wait until the turn ends (or press Ctrl-C to cancel it)", "yellow"
            )
            return False
        return await own.run(shell, argument)
    command = plugin_command(shell, name)
    if command is None and not during_turn:
        refresh(shell)  # a command file written since the prompt opened
        command = plugin_command(shell, name)
    if command is None:
        shell.renderer.line(f"unknown command /{name}: /help lists them", "yellow")
        return False
    if during_turn:
        shell.renderer.line(
            f"/{name} has to wait until the turn ends (or press Ctrl-C to cancel it)", "yellow"
        )
        return False
    return await run_plugin_command(shell, command, argument)
