"""Reading workspace files for the prompt: bounded, text only, components compared safely."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

# One definition of "inside the workspace" and "a secret" (by name or content): the
# essential guards' own (they always load), so the prompt never reads what a tool
# would ask for.
from ketch_policy_kit.paths import is_within as within
from ketch_policy_kit.paths import resolve as resolve


def looks_secret(path: Path) -> bool:
    """A secret by name or content (:mod:`ketch_secret_kit`): never put in the prompt."""
    from ketch_secret_kit import is_secret

    return is_secret(path)


@dataclass
class Read:
    text: str
    size: int  # bytes on disk
    truncated: bool


def read_text(path: Path, max_bytes: int) -> Read | str:
    """At most ``max_bytes`` of a UTF-8 text file (cut at a line end), or why not."""
    try:
        with path.open("rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            data = handle.read(max_bytes + 1)
    except OSError as exc:
        return f"cannot read ({exc.strerror or exc})"
    if b"\x00" in data[:8192]:
        return "binary file"
    truncated = len(data) > max_bytes
    if truncated:
        data = data[:max_bytes]
        cut = data.rfind(b"\n")
        if cut > max_bytes // 2:
            data = data[: cut + 1]
    return Read(data.decode("utf-8", errors="replace"), size, truncated)


def display(path: Path, workspace: Path) -> str:
    """A short name: relative to the workspace, else with ~ for the home directory."""
    if within(path, workspace):
        return path.relative_to(workspace).as_posix() or "."
    home = Path.home()
    if within(path, home):
        return "~/" + path.relative_to(home).as_posix()
    return str(path)
