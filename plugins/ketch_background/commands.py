"""``ketch ps``, ``ketch stop ID``, ``ketch attach ID`` and ``/background``."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Kernel, SlashContext
    from ketch_background.registry import Status


# --- ketch ps ------------------------------------------------------------------------------


def rows(include_ended: bool) -> list[dict[str, Any]]:
    """One row per run: its status, and what the live worker says (workspace, model,
    what it waits for)."""
    from ketch_background.protocol import ask
    from ketch_background.registry import all_runs

    found = []
    for status in all_runs():
        if not status.alive and not include_ended:
            continue
        row: dict[str, Any] = {
            "session_id": status.session_id,
            "run": status.run,
            "state": status.state if status.alive else _ended(status),
            "cost_usd": status.cost_usd,
            "started": status.started,
            "pid": status.supervisor_pid,
            "worktree": status.worktree or None,
            "exit_code": status.exit_code,
            "waiting_for": [],
            "workspace": None,
            "model": None,
        }
        if status.alive and status.socket:
            live = ask(status.socket, {"op": "status"})
            if live is not None:
                row.update(
                    state=live.get("state", row["state"]),
                    cost_usd=live.get("cost_usd", row["cost_usd"]),
                    waiting_for=live.get("waiting") or [],
                    workspace=live.get("workspace"),
                    model=live.get("model"),
                )
        # A run that recorded its end is not running, though its supervisor may still be
        # on its way out (seen under load: `/background` listed a finished run).
        if not include_ended and row["state"] in _ENDED:
            continue
        found.append(row)
    return found


_ENDED = frozenset({"finished", "failed", "stopped"})


def _ended(status: Status) -> str:
    if status.state in ("finished", "failed", "stopped"):
        return status.state
    return "gone"  # its supervisor died without recording an outcome


def _age(started: float) -> str:
    seconds = max(0, int(time.time() - started))
    if seconds < 120:
        return f"{seconds}s"
    if seconds < 7200:
        return f"{seconds // 60}m"
    return f"{seconds // 3600}h"


def run_ps(kernel: Kernel, args: argparse.Namespace) -> int:
    from ketch_text_kit.terminal import line_for_terminal

    found = rows(bool(args.all))
    if args.json:
        print(json.dumps({"sessions": found}, indent=1))
        return 0
    if not found:
        print(
            "no background sessions are running"
            + ("" if args.all else " (ketch ps --all shows ended ones)")
        )
        return 0
    for row in found:
        state = row["state"]
        if row["waiting_for"]:
            first = row["waiting_for"][0]
            who = f" ({first['agent']})" if first.get("agent") else ""
            state = f"waiting for approval{who}: {first['tool']} {first['summary']}"
            if len(row["waiting_for"]) > 1:
                state += f" (+{len(row['waiting_for']) - 1} more)"
        cost = f"${row['cost_usd']:.4f}" if row["cost_usd"] else "$0"
        where = row["workspace"] or ""
        if row["worktree"]:
            where += f" (worktree {row['worktree']})"
        ended = f" exit {row['exit_code']}" if row["exit_code"] is not None else ""
        print(
            line_for_terminal(
                f"{row['session_id'] or row['run']}  {_age(row['started']):>4}  {cost:>9}  {state}{ended}  {where}"
            )
        )
    return 0


# --- ketch stop ------------------------------------------------------------------------------


def lookup(ident: str) -> Status:
    from ketch.api import KetchError
    from ketch_background.registry import find

    try:
        status = find(ident)
    except LookupError as exc:
        raise KetchError(str(exc), exit_code=2) from None
    if status is None:
        raise KetchError(f"no background session {ident!r} (ketch ps --all lists them)")
    return status


def stop(status: Status, grace: float) -> str:
    """End a live run through its supervisor: its turn is cancelled, every process it
    started ended. Returns what happened, in one line."""
    from ketch.api import KetchError
    from ketch_background import registry

    pid = status.supervisor_pid
    if not status.alive:
        return f"{status.session_id or status.run} is not running ({_ended(status)})"
    if not pid or registry.process_start(pid) != status.supervisor_start:
        raise KetchError(
            f"{status.run}'s supervisor (pid {pid}) cannot be found; nothing was signalled"
        )
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace + 10
    while registry.lock_held(status.run) and time.monotonic() < deadline:
        time.sleep(0.05)
    if registry.lock_held(status.run):
        raise KetchError(f"{status.run} did not end within {grace + 10:g} s (pid {pid})")
    after = registry.read_status(status.run)
    extra = (
        f"; {after.reaped} leftover process(es) ended" if after is not None and after.reaped else ""
    )
    return f"stopped {status.session_id or status.run}: its turn was cancelled{extra}"


def run_stop(kernel: Kernel, args: argparse.Namespace) -> int:
    from ketch_background.settings import BackgroundSettings

    status = lookup(args.id)
    if not status.alive:
        print(
            f"ketch: {status.session_id or status.run} is not running ({_ended(status)})",
            file=sys.stderr,
        )
        return 1
    print(stop(status, kernel.settings.of(BackgroundSettings).stop_grace))
    return 0


# --- ketch attach ------------------------------------------------------------------------------


def run_attach(kernel: Kernel, args: argparse.Namespace) -> int:
    from ketch_background.attach import attach

    return attach(kernel, args.id)


# --- /background ------------------------------------------------------------------------------


def slash_background(ctx: SlashContext) -> None:
    """``/background PROMPT``: a new session runs PROMPT in the background, in this
    workspace, with this session's model and mode and the profile you started with;
    ``/background`` lists the running ones."""
    import copy

    from ketch.api import KetchError
    from ketch_background.launch import start

    text = ctx.argument.strip()
    if not text:
        found = rows(False)
        if not found:
            ctx.print("no background sessions are running; /background PROMPT starts one")
        for row in found:
            waiting = " · waiting for approval" if row["waiting_for"] else ""
            ctx.print(f"{row['session_id']}  {row['state']}{waiting}  {row['workspace'] or ''}")
        return
    session, args = ctx.session, copy.copy(ctx.kernel.args)
    args.provider, args.model, args.mode = session.provider.name, session.model, session.mode
    args.continue_session, args.resume, args.output_format = False, None, "text"
    args.worktree = None
    try:
        answer = start(ctx.kernel, args, text)
    except KetchError as exc:
        ctx.print(f"/background: {exc.message}")
        return
    sid = answer["session_id"]
    ctx.print(
        f"started {sid} in the background: `ketch attach {sid}` opens it, `ketch ps` lists it"
    )
