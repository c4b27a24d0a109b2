"""Run ``ketch`` and record which modules were loaded when its first model request left.

Started as ``python first_request_probe.py KETCH-ARGS...`` with ``PROBE_PORT`` (the model
server's port on 127.0.0.1) and ``PROBE_OUT`` (a JSON file). An audit hook waits for the
``socket.connect`` to that port, the moment the first request goes out, and writes:
``loaded`` (``sys.modules`` then, minus what the interpreter had loaded before ketch
started) and ``concurrent`` (modules another thread imported meanwhile, such as the
store opening beside the request: not on the first request's path). A thread's imports are
seen where every import goes, ``importlib._bootstrap._find_and_load``: the ``import`` audit
event alone misses ``importlib.import_module`` (how ``ketch.api`` resolves its names lazily),
and the store's thread imported ``ketch.storage`` that way, unseen.
"""

from __future__ import annotations

import importlib._bootstrap
import json
import os
import sys
import threading
from typing import Any

PORT = int(os.environ["PROBE_PORT"])
OUT = os.environ["PROBE_OUT"]
BEFORE = set(sys.modules)
MAIN = threading.main_thread()
concurrent: set[str] = set()
written: list[bool] = []


def hook(event: str, args: tuple[Any, ...]) -> None:
    if written:
        return
    if event == "import" and threading.current_thread() is not MAIN:
        concurrent.add(args[0])
    elif event == "socket.connect" and isinstance(args[1], tuple) and args[1][1:2] == (PORT,):
        written.append(True)
        loaded = sorted(set(sys.modules) - BEFORE)
        with open(OUT, "w", encoding="utf-8") as fh:
            json.dump({"loaded": loaded, "concurrent": sorted(concurrent)}, fh)


def _find_and_load(name: str, import_: Any) -> Any:
    if not written and threading.current_thread() is not MAIN:
        concurrent.add(name)
    return _load(name, import_)


sys.addaudithook(hook)
_load = importlib._bootstrap._find_and_load  # type: ignore[attr-defined]
importlib._bootstrap._find_and_load = _find_and_load  # type: ignore[attr-defined]

from ketch.cli import main  # noqa: E402  (after the hook: ketch's own imports are counted)

sys.exit(main(sys.argv[1:]))
