"""Run the ``ketch`` console script's ``main`` and note how its first request left.

Started as ``python launch_probe.py KETCH-ARGS...`` with ``PROBE_PORT`` (the model
server's port) and ``PROBE_OUT`` (a JSON file). An audit hook notes, for each
``socket.connect`` to that port, the connecting thread's name and whether pydantic
(the first library ketch itself needs) was loaded at that moment.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from typing import Any

PORT = int(os.environ["PROBE_PORT"])
OUT = os.environ["PROBE_OUT"]
connects: list[dict[str, Any]] = []


def hook(event: str, args: tuple[Any, ...]) -> None:
    if event == "socket.connect" and isinstance(args[1], tuple) and args[1][1:2] == (PORT,):
        connects.append(
            {"thread": threading.current_thread().name, "pydantic": "pydantic" in sys.modules}
        )


def write() -> None:
    with open(OUT, "w", encoding="utf-8") as fh:
        json.dump(connects, fh)


sys.addaudithook(hook)
import atexit  # noqa: E402

atexit.register(write)
from ketch_early_request_kit.launch import main  # noqa: E402

sys.exit(main())
