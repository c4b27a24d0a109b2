"""When a sandboxed command fails, say what the sandbox hid that it may have needed.

The failed command's output is read for what it could not find: absolute paths that
exist on the host but not in the command's view (outside the workspace and every tree
the sandbox shows, or hidden in one), and Python modules (``No module named 'x'``)
that a Python environment of the workspace installs from a directory the sandbox did
not show. The result then names each and says how to allow it (``[sandbox] read_only``
in the user config, or one command outside the sandbox, which asks). It reads the
host only where the output points: nothing is shown to the model that the person's
own config does not already name, besides a path the command itself printed.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ketch_policy_kit.paths import is_within

_PATH = re.compile(r"(?<![\w.~/-])(/[\w.+@%~-]+(?:/[\w.+@%~-]+)*)")
_MODULE = re.compile(r"No module named '([\w.]+)'")
MAX_REPORTED = 3


def _real(path: str | os.PathLike[str]) -> Path:
    return Path(os.path.realpath(path))


def visible(path: Path, view: Any) -> bool:
    """Whether ``path`` (real) is in the command's view and not hidden or covered."""
    real = _real(path)
    if any(is_within(real, h) for h in view.hide) or real in view.cover:
        return False
    shown = [*view.system, *view.read_only, *(p for p in [view.workspace] if p is not None)]
    return any(is_within(real, tree) for tree in shown)


def _paths(output: str) -> list[Path]:
    found: list[Path] = []
    for match in _PATH.finditer(output):
        text = match.group(1).rstrip(".,;:)")
        if text.startswith(("/dev/", "/proc/", "/sys/")) or text == "/":
            continue
        found.append(Path(text))
    return list(dict.fromkeys(found))


def _module_homes(output: str, workspace: Path, environ: Mapping[str, str]) -> list[Path]:
    """Directories a workspace Python environment imports from that hold a missing module."""
    from ketch_sandbox.dependencies import _named_by_site, python_environments, site_packages

    modules = {m.split(".")[0] for m in _MODULE.findall(output)}
    if not modules:
        return []
    homes: list[Path] = []
    for prefix in python_environments(workspace, [], environ):
        for site in site_packages(prefix):
            for directory in _named_by_site(site):
                if any(
                    (directory / m).is_dir() or (directory / f"{m}.py").is_file() for m in modules
                ):
                    homes.append(directory)
    return homes


def explain(
    output: str, view: Any, workspace: Path, environ: Mapping[str, str], config_file: str
) -> str:
    """Notes for the model and the person: what was hidden and how to allow it ("" if nothing)."""
    hidden: list[Path] = []
    for path in [*_paths(output), *_module_homes(output, workspace, environ)]:
        if path.exists() and not visible(path, view) and path not in hidden:
            hidden.append(path)
    if not hidden:
        return ""
    shown = ", ".join(str(p) for p in hidden[:MAX_REPORTED])
    more = f" (and {len(hidden) - MAX_REPORTED} more)" if len(hidden) > MAX_REPORTED else ""
    return (
        f"[sandbox] this command could not see {shown}{more}: it exists on this machine but the "
        "sandbox does not show it (only the workspace, system and toolchain directories, and the "
        "dependencies it finds). To let commands read it, the user adds the directory to "
        f"[sandbox] read_only in {config_file}; or run this one command outside the sandbox "
        "(dangerously_disable_sandbox, the user is asked)."
    )
