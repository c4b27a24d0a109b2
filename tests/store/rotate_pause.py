"""A test plugin that stops ``ketch store key rotate`` at one phase (fault injection).

Loaded with ``KETCH_LOAD=rotate_pause=tests.store.rotate_pause``; ``ROTATE_PAUSE=<phase>``
names the phase (see :mod:`ketch_store.rotate`). The process prints that it paused and
stops itself (SIGSTOP), so the test can SIGKILL it exactly there. Production code reads
no such variable: this plugin is what the test installs.
"""

from __future__ import annotations

import os
import signal
import sys

from ketch.api import hookimpl

PAUSE = "ROTATE_PAUSE"
PLUGIN = "rotate_pause=tests.store.rotate_pause"


@hookimpl(optionalhook=True)
def store_rotation_phase(phase: str) -> None:
    if os.environ.get(PAUSE) == phase:
        print(f"ketch: paused at {phase}", file=sys.stderr, flush=True)
        os.kill(os.getpid(), signal.SIGSTOP)
