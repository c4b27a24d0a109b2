"""Booting a kernel for parsed options in another folder, and running its frontend."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Kernel


def choose_frontend(kernel: Kernel, args: argparse.Namespace) -> Any:
    """``args.frontend`` by name, else the one whose role fits: a prompt (``-p`` or a
    piped stdin) or a terminal — as the ``ketch`` command chooses."""
    from ketch.api import KetchError

    name = getattr(args, "frontend", None)
    if name:
        frontend = kernel.frontends.get(name)
        if frontend is None:
            raise KetchError(f"no '{name}' frontend is loaded; see `ketch plugins`", exit_code=2)
        return frontend
    role = "prompt" if args.prompt is not None or not sys.stdin.isatty() else "terminal"
    frontend = next((f for f in kernel.frontends.values() if f.role == role), None)
    if frontend is None:
        what = "headless (-p)" if role == "prompt" else "interactive"
        raise KetchError(f"no {what} frontend is loaded; see `ketch plugins`")
    return frontend


def boot(args: argparse.Namespace, workspace: Path, *, environ: Mapping[str, str]) -> Kernel:
    """A kernel in ``workspace`` with ``args`` as its command line (plugins blocked as
    they were: ``--no-plugin`` is in the options, the variables in ``environ``)."""
    from ketch.api import Kernel, cli_settings

    disabled = [
        name
        for item in getattr(args, "no_plugin", None) or []
        for name in str(item).split(",")
        if name.strip()
    ]
    kernel = Kernel.boot(
        workspace=workspace,
        cli_disabled=disabled,
        cli_settings=cli_settings(args),
        environ=dict(environ),
        args=args,
    )
    return kernel


def run_frontend(args: argparse.Namespace, workspace: Path, *, environ: Mapping[str, str]) -> int:
    """Move into ``workspace`` and run the session ``args`` ask for there; the exit code."""
    workspace = Path(os.path.realpath(workspace))
    os.chdir(workspace)
    environ = {**environ, "PWD": str(workspace)}
    os.environ["PWD"] = str(workspace)
    kernel = boot(args, workspace, environ=environ)
    return int(choose_frontend(kernel, args).run(kernel) or 0)
