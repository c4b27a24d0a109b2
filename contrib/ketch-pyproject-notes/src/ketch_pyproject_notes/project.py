"""What a workspace's pyproject.toml says that is worth a line to the model."""

from __future__ import annotations

import tomllib
from pathlib import Path


def notes(workspace: Path) -> list[str] | None:
    """The project's name, Python versions and test runner; None without a pyproject.toml.

    A pyproject.toml that is not TOML raises (``tomllib.TOMLDecodeError``): the notes
    hook's error policy reports it once, and the other plugins' notes are still given.
    """
    path = workspace / "pyproject.toml"
    if not path.is_file():
        return None
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    project = data.get("project") if isinstance(data.get("project"), dict) else {}
    found = []
    name = project.get("name")
    if isinstance(name, str):
        python = project.get("requires-python")
        needs = f" (Python {python})" if isinstance(python, str) else ""
        found.append(f"a Python project named {name!r}{needs}")
    tool = data.get("tool") if isinstance(data.get("tool"), dict) else {}
    if "pytest" in tool:
        found.append("its tests run with pytest (configured in pyproject.toml)")
    return found
