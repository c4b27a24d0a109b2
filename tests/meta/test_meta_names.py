"""Capabilities, not names: no plugin's code matches another plugin by its name or module.

A contract between plugins is a hook its owner declares (or a capability a tool or a
registration declares), never one plugin looking another up: ``info.module ==
"ketch_mcp"``, ``pm.infos.get("skills")``, ``pm.get_plugin("shell")``. This test finds
such matches in code (strings compared with plugin-ish values, lookups by a plugin's
name, another plugin's module named in a string) and fails on any that is not listed
in ``KNOWN`` below — the ones still to be replaced, each with what should replace it.
Remove an entry when you fix it; never add one.
"""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PLUGINS = ROOT / "plugins"

# (file, what matched) -> what replaces it. Issue 25 item 4: these remain to be done.
KNOWN: dict[tuple[str, str], str] = {
    (
        "ketch_interactive/shell.py",
        "compares c.name with plugin 'trust'",
    ): "a capability on the trust command (an offer to show), not its name",
}

LOOKUP = re.compile(r"get_plugin|infos\.get|plugins\.get|is_blocked")
PLUGINISH = re.compile(r"plugin|module|\.name\b|info")


def _plugins() -> dict[str, str]:
    """Entry-point name -> module, from pyproject.toml."""
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return dict(data["project"]["entry-points"]["ketch"])


def _strings(nodes: list[ast.expr]) -> list[str]:
    found = []
    for node in nodes:
        elements = node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else [node]
        found += [
            e.value for e in elements if isinstance(e, ast.Constant) and isinstance(e.value, str)
        ]
    return found


def matches(path: Path, own_module: str, plugins: dict[str, str]) -> list[str]:
    """What in ``path`` (a file of package ``own_module``) names another plugin."""
    own_name = {m: n for n, m in plugins.items()}.get(own_module)
    others = {n for n in plugins if n != own_name}
    other_modules = [m for m in plugins.values() if m != own_module]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if any(re.fullmatch(rf"{m}(\..*)?", node.value) for m in other_modules):
                found.append(f"module {node.value!r}")
        elif isinstance(node, ast.Compare):
            parts = [node.left, *node.comparators]
            literal = (ast.Constant, ast.Tuple, ast.List, ast.Set)
            other = " ".join(ast.unparse(p) for p in parts if not isinstance(p, literal))
            for name in _strings(parts):
                if name in others and PLUGINISH.search(other):
                    found.append(f"compares {other} with plugin {name!r}")
        elif isinstance(node, ast.Call) and LOOKUP.search(ast.unparse(node.func)):
            for name in _strings(list(node.args)):
                if name in others:
                    found.append(f"{ast.unparse(node.func)}({name!r})")
    return found


def test_no_plugin_matches_another_by_name() -> None:
    plugins = _plugins()
    seen: set[tuple[str, str]] = set()
    new = []
    for path in sorted(PLUGINS.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        package = path.relative_to(PLUGINS).parts[0]
        for what in matches(path, package, plugins):
            key = (str(path.relative_to(PLUGINS)), what)
            seen.add(key)
            if key not in KNOWN:
                new.append(f"{key[0]}: {what}")
    assert not new, (
        "a plugin matches another by name; declare a hook (ketch_add_hookspecs) or a "
        "capability instead (docs/plugins.md):\n  " + "\n  ".join(new)
    )
    fixed = sorted(set(KNOWN) - seen)
    assert not fixed, f"fixed: remove from KNOWN in {Path(__file__).name}: {fixed}"


def test_the_check_finds_a_name_match(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "def f(pm, info):\n"
        "    a = pm.get_plugin('shell')\n"
        "    b = info.module == 'ketch_mcp'\n"
        "    c = info.plugin in ('skills', 'other')\n"
        "    d = 'shell'  # a tool's name, not a lookup\n",
        encoding="utf-8",
    )
    plugins = {"shell": "ketch_shell", "mcp": "ketch_mcp", "skills": "ketch_skills"}
    assert sorted(matches(sample, "ketch_acp", plugins)) == [
        "compares info.plugin with plugin 'skills'",
        "module 'ketch_mcp'",
        "pm.get_plugin('shell')",
    ]
