"""What the sandbox's egress proxy adds to a command's start.

    .venv/bin/python benchmarks/egress.py [--runs 30] [--json]

A command with the network starts under the forwarder (ketch's Python, ``-I -S``,
built-in modules only) in its own network namespace, with a unix socket of its own
on this session's proxy. Measured: starting ``true`` in the sandbox without network,
the same with the proxy's socket and the forwarder, opening the socket (the per
command cost outside), and the proxy's first start (a thread and an event loop, once
per session). The target: the proxy adds under 20 ms to a command's start (the
forwarder's start plus the socket; medians of wall time, so a loaded machine shows).
``--json`` prints one JSON object, the form benchmarks/run.py reads.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ADDED_TARGET_MS = 20.0


def median_ms(fn: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    say = functools.partial(print, file=sys.stderr, flush=True) if args.json else print

    import ketch_sandbox
    from ketch_net_kit.rules import NetworkRules
    from ketch_sandbox.bwrap import command_line, probe
    from ketch_sandbox.egress import Egress
    from ketch_sandbox.masks import MaskSet
    from ketch_sandbox.network import bwrap_args, forwarded

    found = probe()
    rows: list[tuple[str, float, str]] = []
    info: dict[str, object] = {"runs": args.runs, "cpus": os.cpu_count()}
    targets: list[dict[str, object]] = []
    failed = False
    if not found.available:
        say(f"(no sandbox here: {found.reason})")
        info["sandbox"] = f"unavailable: {found.reason}"
    else:
        base = Path(tempfile.mkdtemp(prefix="ketch-bench-egress-"))
        repo = base / "ws"
        repo.mkdir()
        egress = Egress("bench")
        try:
            started = time.perf_counter()
            egress.start()
            first = (time.perf_counter() - started) * 1000
            view = ketch_sandbox.view_of(repo)
            masks = MaskSet.create()
            plain = command_line(["true"], view, masks, bwrap=found.path)
            channel = egress.channel(NetworkRules(), None, None)
            assert egress.resolv is not None
            proxied = command_line(
                forwarded(["true"]),
                view,
                masks,
                extra=bwrap_args(channel.path, egress.resolv),
                bwrap=found.path,
            )
            subprocess.run(proxied, check=True)  # warm
            without = median_ms(lambda: subprocess.run(plain, check=True), args.runs)
            with_proxy = median_ms(lambda: subprocess.run(proxied, check=True), args.runs)

            def open_and_drop() -> None:
                opened = egress.channel(NetworkRules(), None, None)
                opened.report(True)

            socket_ms = median_ms(open_and_drop, args.runs)
            added = with_proxy - without + socket_ms
            info["load average"] = os.getloadavg()[0]
            rows += [
                ("start `true` in the sandbox, no network", without, ""),
                ("start `true` in the sandbox, through the egress proxy", with_proxy, ""),
                ("open a command's proxy socket", socket_ms, ""),
                ("the proxy's first start (once per session)", first, ""),
                (
                    "added to a command's start by the proxy",
                    added,
                    f"target < {ADDED_TARGET_MS:g} ms",
                ),
            ]
            failed = added > ADDED_TARGET_MS
            targets.append(
                {
                    "name": "added to a command's start by the proxy",
                    "value": round(added, 3),
                    "limit": ADDED_TARGET_MS,
                    "unit": "ms",
                    "met": not failed,
                }
            )
            channel.report(True)
            masks.close()
        finally:
            egress.close()
            shutil.rmtree(base, ignore_errors=True)
    if args.json:
        print(
            json.dumps(
                {
                    "benchmark": "egress",
                    "title": "Sandbox egress proxy",
                    "runs": args.runs,
                    "rows": [
                        {"measure": n, "value": round(ms, 3), "unit": "ms", "note": note}
                        for n, ms, note in rows
                    ],
                    "targets": targets,
                    "info": info,
                }
            )
        )
        return 1 if failed else 0
    width = max((len(r[0]) for r in rows), default=0)
    for name, ms, note in rows:
        print(f"{name:<{width}}  {ms:9.2f} ms  {note}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
