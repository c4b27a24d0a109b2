"""``ketch -p PROMPT --background``: start a supervised run and return at once.

The option chooses the ``background`` frontend by name. It reads the prompt (``-p``
text, or a piped stdin), checks this machine's limits under a lock (``[background]
max_running`` and ``max_cost_usd``, refusals said plainly), starts the supervisor in a
new session (``setsid``) with the parsed options on its stdin, and waits for the
handshake: the session's id, printed on stdout (so ``id=$(ketch -p … --background)``
works), with how to follow it on stderr. The options are the person's as typed: the
run gets no profile, rule or trust it was not started with.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import os
import selectors
import subprocess
import sys
import time
from typing import TYPE_CHECKING, Any

from ketch_frontend_kit import WORKTREE_FRONTEND, WORKTREE_PREVIOUS

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Kernel


def read_prompt(args: argparse.Namespace) -> str:
    from ketch.api import UsageError

    prompt = args.prompt
    if not prompt and not sys.stdin.isatty():
        prompt = sys.stdin.read()
    if not prompt or not str(prompt).strip():
        raise UsageError(
            "--background runs a prompt: pass -p PROMPT (or pipe it on stdin); "
            "`ketch attach ID` opens a background session in the shell"
        )
    return str(prompt)


def worker_options(args: argparse.Namespace, prompt: str) -> argparse.Namespace:
    """The options the run's worker starts from: these, as a headless run of ``prompt``."""
    from ketch.api import UsageError

    if getattr(args, "input_format", "text") == "stream-json":
        raise UsageError(
            "--background takes one prompt; --input-format stream-json needs a pipe to stay open"
        )
    inner = copy.copy(args)
    inner.prompt = prompt
    inner.background = False
    inner.frontend = WORKTREE_FRONTEND if getattr(args, "worktree", None) else None
    if inner.frontend:
        setattr(inner, WORKTREE_PREVIOUS, None)
    for name in ("_command", "command"):
        if hasattr(inner, name):
            delattr(inner, name)
    return inner


def check_limits(kernel: Kernel) -> None:
    """Refuse (a KetchError saying which limit and what to do) when starting one more
    background run would go past this machine's limits. Call it holding the launch lock."""
    from ketch.api import KetchError
    from ketch_background.registry import live_runs
    from ketch_background.settings import BackgroundSettings

    limits = kernel.settings.of(BackgroundSettings)
    running = live_runs()
    if len(running) >= limits.max_running:
        raise KetchError(
            f"{len(running)} background session(s) already run on this machine, the "
            f"[background] max_running limit ({limits.max_running}); wait for one to finish "
            "(ketch ps) or stop one (ketch stop ID), or raise the limit in your config.toml"
        )
    spent = sum(s.cost_usd for s in running)
    if limits.max_cost_usd is not None and spent >= limits.max_cost_usd:
        raise KetchError(
            f"the running background sessions have cost ${spent:.4f} together, the "
            f"[background] max_cost_usd limit (${limits.max_cost_usd:.4f}); wait for one to "
            "finish or stop one (ketch stop ID), or raise the limit in your config.toml"
        )


def start(kernel: Kernel, args: argparse.Namespace, prompt: str) -> dict[str, Any]:
    """Start a run of ``prompt``; its handshake (``session_id``, ``run``, ``pid``)."""
    from ketch.api import KetchError, UsageError
    from ketch_background import registry
    from ketch_background.settings import BackgroundSettings
    from ketch_launch_kit import SpecError, to_spec

    limits = kernel.settings.of(BackgroundSettings)
    inner = worker_options(args, prompt)
    try:
        spec = to_spec(inner)
    except SpecError as exc:
        raise UsageError(f"--background: {exc}") from None
    with registry.launching():
        check_limits(kernel)
        run = registry.new_run_id()
        registry.write_status(registry.Status(run, worktree=getattr(args, "worktree", None) or ""))
        try:
            proc = subprocess.Popen(
                [sys.executable, "-m", "ketch_background.supervisor", run],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                cwd=kernel.workspace,
                env=kernel.environ,
                close_fds=True,
                start_new_session=True,
            )
        except OSError as exc:
            registry.forget(run)
            raise KetchError(f"the background run could not start: {exc}") from None
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(
            json.dumps({"args": spec, "stop_grace": limits.stop_grace}).encode() + b"\n"
        )
        proc.stdin.close()
        answer = _handshake(proc, limits.start_timeout)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=5)  # the first of the double fork, gone at once
    if answer is None:
        raise KetchError(
            f"the background run {run} has not started after {limits.start_timeout:g} s; "
            f"see `ketch ps --all`, or end it with `ketch stop {run}`"
        )
    if "session_id" not in answer:
        raise KetchError(
            f"the background run could not start: {answer.get('error') or 'no reason given'}"
        )
    status = registry.read_status(run)
    return {**answer, "run": run, "pid": status.supervisor_pid if status else 0}


def _handshake(proc: subprocess.Popen[bytes], timeout: float) -> dict[str, Any] | None:
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    data = b""
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ)
        while b"\n" not in data and time.monotonic() < deadline:
            if not selector.select(timeout=max(0.0, deadline - time.monotonic())):
                continue
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:
                break
            data += chunk
    if b"\n" not in data:
        return (
            None
            if time.monotonic() >= deadline
            else {"error": "its supervisor ended without a word"}
        )
    try:
        answer = json.loads(data.split(b"\n", 1)[0])
    except ValueError:
        return {"error": "its supervisor answered something unreadable"}
    return answer if isinstance(answer, dict) else None


def run_background(kernel: Kernel) -> int:
    from ketch_text_kit.terminal import line_for_terminal

    args = kernel.args
    answer = start(kernel, args, read_prompt(args))
    session = answer["session_id"]
    if getattr(args, "output_format", "text") in ("json", "stream-json"):
        print(
            json.dumps(
                {
                    "type": "background",
                    "session_id": session,
                    "run": answer["run"],
                    "pid": answer["pid"],
                }
            )
        )
    else:
        print(session)
    print(
        f"ketch: {line_for_terminal(session)} runs in the background · ketch attach {session} · "
        f"ketch ps · ketch stop {session}",
        file=sys.stderr,
    )
    return 0
