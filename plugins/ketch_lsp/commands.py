"""``/lsp`` and ``ketch lsp status``: the servers, their state, their last errors.

Import-light: ``configure`` runs whenever the command line is built (``ketch --help``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
from typing import Any


def rows(kernel: Any, workspace: Any = None) -> list[dict[str, Any]]:
    """One row per server: what it is, where it comes from, its state."""
    from pathlib import Path

    from ketch_lsp.runtime import existing
    from ketch_lsp.settings import LspSettings

    settings = kernel.settings.of(LspSettings)
    root = Path(workspace or kernel.workspace)
    found = existing(kernel, root)
    from ketch_lsp.servers import resolve

    out: list[dict[str, Any]] = []
    for spec in resolve(kernel):
        row: dict[str, Any] = {
            "name": spec.name,
            "origin": spec.origin,
            "command": list(spec.argv) if spec.argv else None,
            "looked_for": spec.wanted,
            "files": list(spec.patterns),
            "state": "not installed" if not spec.found else "not started",
            "last_error": "",
            "instances": [],
        }
        if not settings.enabled:
            row["state"] = "off ([lsp] enabled = false)"
        elif spec.found and spec.item is not None:
            from ketch_trust_kit import is_pinned

            if not is_pinned(root, spec.item):
                row["state"] = "held: not trusted (ketch trust)"
        if found is not None:
            if spec.name in found.off:
                row["state"] = "off"
                row["last_error"] = found.off[spec.name]
            for server in found.servers.values():
                if server.spec.name != spec.name:
                    continue
                from ketch_tool_kit.paths import display

                row["instances"].append(
                    {
                        "root": display(server.root, root),
                        "state": server.state,
                        "pid": server.pid,
                        "starts": server.starts,
                        "ready_in": round(server.ready_in, 3) if server.ready_in else None,
                        "open_files": len(server.docs),
                        "last_error": server.last_error,
                    }
                )
                row["state"] = server.state
                if server.last_error:
                    row["last_error"] = server.last_error
        out.append(row)
    return out


def lines(kernel: Any, workspace: Any = None) -> list[str]:
    table = rows(kernel, workspace)
    if not table:
        return ["no language servers"]
    out = []
    width = max(len(r["name"]) for r in table)
    for row in table:
        command = (
            " ".join(row["command"]) if row["command"] else f"(looked for {row['looked_for']})"
        )
        out.append(f"{row['name']:<{width}}  {row['state']}  [{row['origin']}]  {command}".rstrip())
        for instance in row["instances"]:
            facts = [f"root {instance['root']}", instance["state"]]
            if instance["pid"]:
                facts.append(f"pid {instance['pid']}")
            facts.append(f"started {instance['starts']}×")
            if instance["ready_in"]:
                facts.append(f"ready in {instance['ready_in']:.2f} s")
            facts.append(f"{instance['open_files']} open files")
            out.append("  " + ", ".join(facts))
        if row["last_error"]:
            out.append(f"  last error: {row['last_error']}")
    return out


def slash(ctx: Any) -> None:
    ctx.print(f"language servers of {ctx.session.workspace}:")
    for line in lines(ctx.kernel, ctx.session.workspace):
        ctx.print("  " + line)


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="lsp_command", metavar="ACTION")
    status = sub.add_parser(
        "status", help="the language servers of this workspace: found, trusted, their state"
    )
    status.add_argument(
        "--check",
        action="store_true",
        help="start each server that may start, wait for it to be ready, and stop it",
    )
    status.add_argument("--json", action="store_true", help="one JSON object")


def cli(kernel: Any, args: argparse.Namespace) -> int:
    failed = bool(getattr(args, "check", False)) and check_all(kernel)
    if getattr(args, "json", False):
        print(json.dumps({"workspace": str(kernel.workspace), "servers": rows(kernel)}, indent=2))
    else:
        print(f"language servers of {kernel.workspace}:")
        for line in lines(kernel):
            print("  " + line)
    return 1 if failed else 0


def check_all(kernel: Any) -> bool:
    """Start every server that may start (at the workspace root), wait until each is
    ready or failed, then stop them. True when one failed."""
    import time

    from ketch_lsp.client import READY
    from ketch_lsp.runtime import manager

    found = manager(kernel)
    servers = []
    for spec in found.specs:
        if spec.found and found.allowed(spec):
            server = found.server(spec, found.workspace / "x")
            if found.launch(server, None):
                servers.append(server)
    deadline = time.monotonic() + found.settings.start_timeout + 1.0

    async def wait() -> None:
        for server in servers:
            await found.ready(server, deadline)

    with contextlib.suppress(Exception):  # each server's own state says what went wrong
        found.thread.call(wait(), found.settings.start_timeout + 2.0)
    failed = any(server.state != READY for server in servers) or bool(found.off)
    states = [(server, server.state) for server in servers]
    found.stop_all()
    for server, state in states:  # what the check found, not that it stopped them after
        server.state = "ready (stopped after the check)" if state == READY else state
    for message in found.failures():
        kernel.notices.append(message)
    return failed
