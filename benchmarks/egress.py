"""What the sandbox's egress proxy adds to a command's start.

    .venv/bin/python benchmarks/egress.py [--runs 30] [--json]

A command with the network gets a listening socket inside its own network namespace,
made by ketch before the command starts (ketch_sandbox/netns.py): from a thread of
ketch where ketch may enter network namespaces (root), else by a per-session helper
process that enters the sandbox's user namespace (every unprivileged user); where
neither works, the command starts under the forwarder (a Python process in the
sandbox). Measured, interleaved run by run so that the machine's load falls on all
alike: starting ``true`` in the sandbox without network, and the same with the
network by each route this machine can use -- each run opening the command's channel,
running it and letting the channel go. Before timing, each route proves it works: a
command in the sandbox asks the proxy for a host no rule allows and gets its 403.
The target: the proxy adds under 20 ms to a command's start (median with, minus
median without), for each route that listens inside; the forwarder is shown for
comparison. The load average is recorded before and after. ``--json`` prints one JSON
object, the form benchmarks/run.py reads.
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
from pathlib import Path
from typing import Any

ADDED_TARGET_MS = 20.0
ROUTES = {
    "thread": "setns from a thread of ketch",
    "helper": "the helper process enters the user namespace",
    "forwarder": "the forwarder (fallback)",
}
# Asks the proxy (from inside the sandbox) for a host no rule allows: the answer is 403.
ASK = (
    "import os, socket; port = int(os.environ['HTTPS_PROXY'].rsplit(':', 1)[1]); "
    "s = socket.create_connection(('127.0.0.1', port), timeout=10); "
    "s.sendall(b'CONNECT refused.invalid:443 HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n'); "
    "print(s.recv(100).split(b'\\r\\n')[0].decode())"
)


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
    from ketch_sandbox.netns import Helper

    found = probe()
    rows: list[tuple[str, float, str]] = []
    info: dict[str, Any] = {"runs": args.runs, "cpus": os.cpu_count()}
    targets: list[dict[str, Any]] = []
    notes: list[str] = []
    failed = False
    if not found.available:
        say(f"(no sandbox here: {found.reason})")
        info["sandbox"] = f"unavailable: {found.reason}"
        return _emit(args.json, rows, targets, info, notes, failed)
    base = Path(tempfile.mkdtemp(prefix="ketch-bench-egress-"))
    repo = base / "ws"
    repo.mkdir()
    view = ketch_sandbox.view_of(repo)
    # The protected paths' placeholders, held as the sandbox's wrap holds them per command.
    from ketch_sandbox.reserve import reserve

    claim = reserve(view.reserve, view.reserve_files)
    masks = MaskSet.create()
    egresses: dict[str, Egress] = {}
    try:
        started = time.perf_counter()
        default = Egress("bench", found.path)
        default.start()
        first = (time.perf_counter() - started) * 1000
        info["route here"] = default.route or f"forwarder ({default.fallback})"
        egresses[default.route or "forwarder"] = default
        if default.route == "thread":  # the route of every unprivileged user, too
            helper = Egress("bench-helper", found.path)
            helper.start()
            helper.route, helper.helper = "helper", Helper()
            egresses["helper"] = helper
        if "forwarder" not in egresses:
            forwarder = Egress("bench-forwarder", found.path)
            forwarder.start()
            forwarder.degrade("benchmark")
            egresses["forwarder"] = forwarder

        def networked(egress: Egress, argv: list[str]) -> subprocess.CompletedProcess[bytes]:
            channel = egress.channel(NetworkRules(), None, None)
            try:
                wrapped = channel.launcher() + command_line(
                    channel.prefix() + argv,
                    view,
                    masks,
                    extra=channel.bwrap_args(),
                    bwrap=found.path,
                )
                return subprocess.run(wrapped, check=True, capture_output=True)
            finally:
                channel.report(True)

        plain = command_line(["true"], view, masks, bwrap=found.path)
        for name, egress in egresses.items():
            answer = networked(egress, [sys.executable, "-I", "-S", "-c", ASK]).stdout.decode()
            if "403" not in answer:
                raise SystemExit(f"the {name} route does not reach the proxy: {answer!r}")
            if name != "forwarder" and egress.route != name:
                raise SystemExit(f"the {name} route fell back: {egress.fallback}")
        subprocess.run(plain, check=True)  # warm
        info["load average before"] = round(os.getloadavg()[0], 2)
        times: dict[str, list[float]] = {"none": [], **{name: [] for name in egresses}}
        for _ in range(args.runs):
            for name in times:
                begin = time.perf_counter()
                if name == "none":
                    subprocess.run(plain, check=True)
                else:
                    networked(egresses[name], ["true"])
                times[name].append((time.perf_counter() - begin) * 1000)
        info["load average after"] = round(os.getloadavg()[0], 2)
        without = statistics.median(times["none"])
        rows.append(("start `true` in the sandbox, no network", without, ""))
        for name in egresses:
            rows.append(
                (
                    f"start `true` with the network: {ROUTES[name]}",
                    statistics.median(times[name]),
                    "",
                )
            )
        for name in egresses:
            added = statistics.median(times[name]) - without
            listening = name != "forwarder"
            rows.append(
                (
                    f"added by the proxy: {ROUTES[name]}",
                    added,
                    f"target < {ADDED_TARGET_MS:g} ms" if listening else "for comparison",
                )
            )
            if listening:
                met = added < ADDED_TARGET_MS
                failed = failed or not met
                targets.append(
                    {
                        "name": f"added to a command's start by the proxy ({ROUTES[name]})",
                        "value": round(added, 3),
                        "limit": ADDED_TARGET_MS,
                        "op": "<",
                        "unit": "ms",
                        "met": met,
                        "judged_on": "wall-time medians, interleaved",
                    }
                )
        rows.append(("the proxy's first start (once per session)", first, ""))
        notes.append(
            "Each networked run includes opening the command's channel and letting it go. "
            f"This machine uses the {info['route here']} route by default; unprivileged users "
            "get the helper route."
        )
    finally:
        for egress in egresses.values():
            egress.close()
        masks.close()
        claim.release()
        shutil.rmtree(base, ignore_errors=True)
    return _emit(args.json, rows, targets, info, notes, failed)


def _emit(
    as_json: bool,
    rows: list[tuple[str, float, str]],
    targets: list[dict[str, Any]],
    info: dict[str, Any],
    notes: list[str],
    failed: bool,
) -> int:
    if as_json:
        print(
            json.dumps(
                {
                    "benchmark": "egress",
                    "title": "Sandbox egress proxy",
                    "runs": info["runs"],
                    "rows": [
                        {"measure": n, "value": round(ms, 3), "unit": "ms", "note": note}
                        for n, ms, note in rows
                    ],
                    "targets": targets,
                    "info": info,
                    "notes": notes,
                }
            )
        )
        return 1 if failed else 0
    width = max((len(r[0]) for r in rows), default=0)
    for name, ms, note in rows:
        print(f"{name:<{width}}  {ms:9.2f} ms  {note}")
    for key, value in info.items():
        print(f"{key}: {value}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
