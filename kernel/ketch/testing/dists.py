"""Fake installed distributions, for testing plugin discovery without pip.

``write_distribution(root, "my-plugin", entry_points={"ketch": {"mine": "my_plugin"}},
modules={"my_plugin/__init__.py": "..."})`` writes a ``*.dist-info`` directory and the
given source files under ``root``. Put ``root`` on ``PYTHONPATH`` (or ``sys.path``) and
``importlib.metadata`` sees an installed distribution with those entry points, exactly
as after ``pip install``; ketch discovers its plugins the same way.
"""

from __future__ import annotations

import re
from pathlib import Path


def normalized(name: str) -> str:
    """The dist-info directory form of a distribution name (PEP 503 + wheel escaping)."""
    return re.sub(r"[-_.]+", "_", name).lower()


def write_distribution(
    root: Path,
    name: str,
    *,
    version: str = "0.1.0",
    entry_points: dict[str, dict[str, str]] | None = None,
    modules: dict[str, str] | None = None,
    requires: list[str] | None = None,
) -> Path:
    """Write ``name``'s dist-info (METADATA, entry_points.txt, RECORD) and its modules.

    ``entry_points`` maps a group (``"ketch"``) to ``{entry point name: "module[:attr]"}``;
    ``modules`` maps paths relative to ``root`` to file contents. Returns the dist-info
    directory.
    """
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    info = root / f"{normalized(name)}-{version}.dist-info"
    info.mkdir(exist_ok=True)
    metadata = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    metadata += [f"Requires-Dist: {req}" for req in requires or []]
    (info / "METADATA").write_text("\n".join(metadata) + "\n", encoding="utf-8")
    lines: list[str] = []
    for group, points in (entry_points or {}).items():
        lines.append(f"[{group}]")
        lines += [f"{ep} = {value}" for ep, value in points.items()]
        lines.append("")
    (info / "entry_points.txt").write_text("\n".join(lines), encoding="utf-8")
    written = [f"{info.name}/METADATA,,", f"{info.name}/entry_points.txt,,"]
    for rel, source in (modules or {}).items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source, encoding="utf-8")
        written.append(f"{rel},,")
    (info / "RECORD").write_text(
        "\n".join([*written, f"{info.name}/RECORD,,"]) + "\n", encoding="utf-8"
    )
    return info
