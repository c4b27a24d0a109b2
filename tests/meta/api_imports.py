"""Rewrite plugins' kernel imports to the public API: ``from ketch.X import Y`` -> ``from ketch.api import Y``.

    python -m tests.meta.api_imports            # list what would change (exit 1 if anything)
    python -m tests.meta.api_imports --write    # rewrite, then sort the touched imports (ruff)
    python -m tests.meta.api_imports --write plugins/ketch_foo  # only these files or folders

Re-runnable and idempotent: a second run changes nothing. Only whole ``from ... import``
statements whose every name the API exports are rewritten (a name is found by where it
is defined, or by being the very object ``ketch.api`` exports: ``from ketch import Tool``);
the rest is listed as "not in ketch.api" — export the name deliberately (kernel/ketch/api.py
and the snapshot, ``python -m tests.meta.api_snapshot --write``) or stop using it.
Tests (``tests/`` folders) are left alone: they may use ``ketch.testing`` and internals.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import shutil
import subprocess
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
# What the rewrite covers: every bundled plugin and kit, and the contrib plugins.
SCOPES = ("plugins", "contrib")
API = "ketch.api"
# Kernel modules plugins may import other than the API: the testing kit (for tests).
ALLOWED = ("ketch.api", "ketch.testing")


def kernel_module(module: str | None) -> bool:
    return module is not None and (module == "ketch" or module.startswith("ketch."))


def allowed(module: str) -> bool:
    return any(module == m or module.startswith(m + ".") for m in ALLOWED)


def source_files(paths: Iterable[Path] = ()) -> Iterator[Path]:
    """The Python files the rule covers (``tests`` folders and caches excluded)."""
    roots = list(paths) or [ROOT / scope for scope in SCOPES]
    for root in roots:
        files = [root] if root.is_file() else sorted(root.rglob("*.py"))
        for path in files:
            parts = path.relative_to(ROOT).parts if path.is_relative_to(ROOT) else path.parts
            if "tests" in parts or "__pycache__" in parts or ".venv" in parts:
                continue
            yield path


class Exports:
    """The API's names: by where each is defined, and by identity (re-exports)."""

    def __init__(self) -> None:
        api = importlib.import_module(API)
        table: dict[str, tuple[str, str | None]] = api._EXPORTS
        self.by_origin = {(m, a if a is not None else ""): name for name, (m, a) in table.items()}
        self.by_object: dict[int, str] = {}
        for name in table:
            value = getattr(api, name)
            if isinstance(value, type) or callable(value) or inspect_module(value):
                self.by_object.setdefault(id(value), name)
        self._keep = api  # the objects stay alive, their ids valid

    def public(self, module: str, name: str) -> str | None:
        """The API's name for ``from module import name``, or None when it exports none."""
        found = self.by_origin.get((module, name))
        if found is not None:
            return found
        submodule = f"{module}.{name}"
        if (submodule, "") in self.by_origin:
            return self.by_origin[(submodule, "")]
        try:
            value = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError):
            return None
        if isinstance(value, type) or callable(value) or inspect_module(value):
            return self.by_object.get(id(value))
        return None


def inspect_module(value: Any) -> bool:
    return type(value).__name__ == "module"


@dataclass
class Report:
    changed: dict[Path, int] = field(default_factory=dict)  # file -> statements rewritten
    missing: list[str] = field(default_factory=list)  # "path:line: ketch.x.Name"


def rewrite_source(text: str, exports: Exports, where: str, report: Report) -> str:
    """``text`` with every rewritable kernel import statement pointing at ``ketch.api``."""
    tree = ast.parse(text)
    lines = text.splitlines(keepends=True)
    edits: list[tuple[int, int, str]] = []  # (first line, last line, replacement), 0-based
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if kernel_module(alias.name) and not allowed(alias.name):
                    report.missing.append(f"{where}:{node.lineno}: import {alias.name}")
            continue
        if not isinstance(node, ast.ImportFrom) or node.level or not kernel_module(node.module):
            continue
        module = str(node.module)
        if allowed(module):
            continue
        names: list[str] = []
        unknown = []
        for alias in node.names:
            public = exports.public(module, alias.name)
            if public is None:
                unknown.append(alias.name)
                continue
            local = alias.asname or alias.name
            names.append(public if public == local else f"{public} as {local}")
        if unknown:
            report.missing += [f"{where}:{node.lineno}: {module}.{n}" for n in unknown]
            continue
        first, last = node.lineno - 1, int(node.end_lineno or node.lineno) - 1
        head, tail = lines[first][: node.col_offset], lines[last][node.end_col_offset :]
        if head.strip() or (tail.strip() and not tail.strip().startswith("#")):
            report.missing.append(f"{where}:{node.lineno}: {module} (not alone on its lines)")
            continue
        comments = [
            line.split("#", 1)[1].strip()
            for line in lines[first : last + 1]
            if "#" in line and not line.lstrip().startswith("#")
        ]
        statement = f"{head}from {API} import {', '.join(names)}"
        if comments:
            statement += "  # " + "; ".join(comments)
        newline = "\n" if lines[last].endswith("\n") else ""
        edits.append((first, last, statement + newline))
    for first, last, replacement in sorted(edits, reverse=True):
        lines[first : last + 1] = [replacement]
    if edits:
        report.changed[Path(where)] = len(edits)
    return "".join(lines)


def run(paths: Iterable[Path], write: bool) -> Report:
    exports = Exports()
    report = Report()
    touched: list[Path] = []
    for path in source_files(paths):
        text = path.read_text(encoding="utf-8")
        where = str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)
        before = len(report.changed)
        new = rewrite_source(text, exports, where, report)
        if len(report.changed) > before and write:
            path.write_text(new, encoding="utf-8")
            touched.append(path)
    if touched:
        sort_imports(touched)
    return report


def sort_imports(paths: list[Path]) -> None:
    """Merge and sort the rewritten import blocks with the project's isort rules (ruff)."""
    ruff = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))
    if not Path(ruff).exists() and not shutil.which(ruff):
        print("ruff not found: run `ruff check --select I --fix` on the changed files")
        return
    subprocess.run(
        [ruff, "check", "--quiet", "--select", "I", "--fix", *map(str, paths)],
        cwd=ROOT,
        check=False,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.meta.api_imports", description=__doc__)
    parser.add_argument("--write", action="store_true", help="rewrite the files")
    parser.add_argument("paths", nargs="*", type=Path, help="files or folders (default: all)")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT / "kernel"))
    report = run([p.resolve() for p in args.paths], args.write)
    verb = "rewrote" if args.write else "would rewrite"
    for path, count in sorted(report.changed.items()):
        print(f"{verb} {count} import(s) in {path}")
    for item in report.missing:
        print(f"not in ketch.api: {item}")
    if report.missing:
        return 1
    return 0 if args.write or not report.changed else 1


if __name__ == "__main__":
    raise SystemExit(main())
