"""The session of one background run: ``python -m ketch_background.worker``.

Started by the run's supervisor, with the parsed options of ``ketch -p … --background``
on stdin (never on disk: the prompt is among them). It runs them as ``ketch`` would in
the same folder — ``-w NAME`` included — with the headless frontend, whose approvals go
to whoever attaches (``headless_approver``). Its stdout is the handshake to the
supervisor (one line once the session started); what the headless frontend prints goes
nowhere. SIGHUP is ignored: a background run outlives terminals; the supervisor's death
(even by SIGKILL) sends it SIGTERM, which cancels its turn.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path


def main() -> int:
    from ketch.api import KetchError
    from ketch_launch_kit import SpecError, from_spec, run_frontend

    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    _end_with_the_supervisor()
    try:
        request = json.loads(sys.stdin.buffer.readline() or b"{}")
        args = from_spec(request["args"])
    except (ValueError, KeyError, TypeError, SpecError) as exc:
        print(f"ketch: the background run got unusable options ({exc})", file=sys.stderr)
        return 2
    handshake = os.dup(1)
    nothing = os.open(os.devnull, os.O_RDWR)
    os.dup2(nothing, 0)
    os.dup2(nothing, 1)
    os.close(nothing)
    sys.stdin = open(os.devnull, encoding="utf-8")  # noqa: SIM115 - for the process's life
    args.background_run = str(request.get("run") or "")
    args.background_handshake_fd = handshake
    try:
        return run_frontend(args, Path.cwd(), environ=os.environ)
    except KetchError as exc:
        print(f"ketch: {exc.message}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130


def _end_with_the_supervisor() -> None:
    """SIGTERM when the supervisor dies (even by SIGKILL): the turn is cancelled as by
    ``ketch stop``, rather than going on unsupervised."""
    import ctypes

    pr_set_pdeathsig = 1
    parent = os.getppid()
    try:
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # it died before the request took effect
        os.kill(os.getpid(), signal.SIGTERM)


if __name__ == "__main__":
    sys.exit(main())
