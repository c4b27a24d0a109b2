"""Background runs: ``ketch -p PROMPT --background`` detaches a session into a supervised
process that outlives the terminal; ``ketch ps`` lists the running and waiting ones
(state, cost so far, what each waits for); ``ketch attach ID`` opens one on this
terminal (history, approvals it waits for, live output), then in the shell;
``ketch stop ID`` ends one cleanly; ``/background PROMPT`` starts one from the shell.
``[background] max_running`` and ``max_cost_usd`` cap them per machine.

A run's approvals wait for a person who attaches (``headless_approver``), never for a
timer; its profile, rules and sandbox are those it was started with. See
docs/parallel.md.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ketch.api import hookimpl, provides

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Approver, Command, Event, Frontend, Kernel, ProposedCall, Session, Vote


def _run(kernel: Kernel) -> str | None:
    """The run id when this process is a background run's worker (set by the worker
    on its own parsed options: a child process never inherits it)."""
    run = getattr(kernel.args, "background_run", None)
    return run if isinstance(run, str) and run else None


def _live(kernel: Kernel) -> Any:
    import sys

    live = sys.modules.get("ketch_background.live")  # not loaded: no run was ever live here
    return None if live is None else kernel.stash.get(live.LIVE)


FRONTEND = "background"


class BackgroundOption(argparse.Action):
    """``--background``: the background frontend (here, light: the parser is built at
    every start)."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, **kwargs)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        from ketch_frontend_kit import MAKES_WORKTREE

        setattr(namespace, self.dest, True)
        setattr(namespace, MAKES_WORKTREE, True)  # the run makes its -w worktree itself
        namespace.frontend = FRONTEND


def configure_ps(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--all", action="store_true", help="also runs that ended (the last day)")
    parser.add_argument("--json", action="store_true", help="as JSON")


def configure_id(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("id", help="the session id (or its run id, or a unique prefix)")


@hookimpl
def ketch_register_settings(register: Callable[[Any], None]) -> None:
    from ketch_background.settings import BACKGROUND

    register(BACKGROUND)


@hookimpl
def ketch_add_cli_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--background",
        action=BackgroundOption,
        default=False,
        help="with -p: run the session in the background and return at once "
        "(ketch ps lists it, ketch attach ID opens it, ketch stop ID ends it)",
    )


@hookimpl
@provides("background")
def ketch_register_frontends(register: Callable[[Frontend], None]) -> None:
    from ketch.api import Frontend

    def run(kernel: Kernel) -> int:
        from ketch_background.launch import run_background

        return run_background(kernel)

    register(Frontend(name="background", run=run, help="ketch -p … --background"))


@hookimpl
def ketch_register_commands(register: Callable[[Command], None]) -> None:
    from ketch.api import Command

    def lazy(name: str) -> Callable[..., Any]:
        def call(*args: Any) -> Any:
            from ketch_background import commands

            return getattr(commands, name)(*args)

        return call

    for name, help_text, configure, run in CLI_COMMANDS:
        register(Command(name=name, help=help_text, cli=True, configure=configure, run=lazy(run)))
    register(
        Command(
            name="background",
            help="/background PROMPT: run PROMPT in a new background session; /background lists them",
            slash=True,
            slash_run=lazy("slash_background"),
        )
    )


# name, help, what configures its parser, and the function of ketch_background.commands
# that runs it
CLI_COMMANDS = (
    (
        "ps",
        "background sessions: running and waiting ones, their cost so far, what they wait for",
        configure_ps,
        "run_ps",
    ),
    (
        "attach",
        "open background session ID here: its history, approvals it waits for, live output",
        configure_id,
        "run_attach",
    ),
    (
        "stop",
        "stop background session ID: its turn is cancelled, every process it started ended",
        configure_id,
        "run_stop",
    ),
)


@hookimpl(optionalhook=True)
def headless_approver(kernel: Kernel, session: Session) -> Approver | None:
    """In a background run, approvals wait for an attached person."""
    live = _live(kernel)
    return live.approve if live is not None and live.session is session else None


@hookimpl
def ketch_session_start(session: Session) -> None:
    kernel = session.kernel
    run = _run(kernel)
    if run is None or session.agent_id is not None or _live(kernel) is not None:
        return
    from ketch.api import KetchError
    from ketch_background.live import LIVE, Live
    from ketch_store_kit.keeping import cannot_keep

    live = Live(session, run, getattr(kernel.args, "background_handshake_fd", None))
    # Its store opens now, not concurrently with the first request (the headless
    # frontend's way): a background run is read by others while it runs (`ketch sessions
    # show`), and an approval may wait for hours before a tool is dispatched, so its events
    # reach the store as they happen instead of being kept until a tool starts.
    why = cannot_keep(kernel)
    if why is None:
        try:
            live.start()
        except OSError as exc:  # no socket, no one could ever answer: the run does not start
            why = f"cannot listen on {live.path}: {exc.strerror or exc}"
    if why is not None:
        live.fail(why)
        raise KetchError(f"the background run cannot start: {why}") from None
    kernel.stash[LIVE] = live


@hookimpl
def ketch_event(session: Session, event: Event) -> None:
    live = _live(session.kernel)
    if live is None:
        return
    live.on_event(session, event)
    if event.type == "usage" and getattr(event, "cost_usd", None):
        from ketch_background.limits import check_cost

        check_cost(session.kernel, live)


@hookimpl
def ketch_session_end(session: Session, reason: str) -> None:
    live = _live(session.kernel)
    if live is not None and live.session is session:
        live.close()


@hookimpl
def ketch_policy_vote(call: ProposedCall) -> Vote | None:
    """The model running ``ketch attach`` asks, in every profile: approvals of a
    background session are a person's to give."""
    from ketch_background.limits import runs_ketch_attach

    if not runs_ketch_attach(call):
        return None
    from ketch.api import Vote

    return Vote(
        decision="ask",
        reason="it runs `ketch attach`: a background session's approvals are yours to answer (type it yourself)",
    )
