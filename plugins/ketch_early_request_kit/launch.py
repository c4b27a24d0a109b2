"""The ``ketch`` console script: the first request on its way before ketch loads.

``ketch -p PROMPT`` spends most of its start importing libraries and building the
first request, which is the same request as the last run's but for the prompt. When
the record of that run (:mod:`ketch_early_request_kit.record`) still holds -- same
command line but for the prompt, same directory, environment, date, files, git state
and installation -- this sends its bytes with the new prompt in its place, on a thread,
using nothing but the standard library, and then runs ketch as always. ketch builds
its first request exactly as before; if the bytes are the same, it reads the answer
to the request already sent (:mod:`ketch_early_request_kit.handoff`), and if not, the
early one is closed unread and ketch sends its own.

Nothing is sent early unless the record says the run that made it was eligible
(a fresh session, a prompt every plugin that could change or stop it leaves alone,
the key from an environment variable) and the same template was built twice in a row;
anything unexpected here means no early request, never an error.
"""

from __future__ import annotations

import sys
from typing import Any

_PRINT = ("-p", "--print")


def main() -> Any:
    argv = sys.argv[1:]
    if any(a in _PRINT for a in argv):
        try:  # noqa: SIM105 - contextlib is not worth loading here
            from ketch_early_request_kit.early import start

            start(argv)
        except Exception:  # noqa: BLE001 - an early request is never worth an error
            pass
    from ketch.api import main as ketch_main

    return ketch_main()
