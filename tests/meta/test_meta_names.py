"""Capabilities, not names: no plugin's code matches another plugin by its name or module.

A contract between plugins is a hook its owner declares (or a capability a tool or a
registration declares), never one plugin looking another up: ``info.module ==
"ketch_mcp"``, ``pm.infos.get("skills")``, ``pm.get_plugin("shell")``. This test finds
such matches in code and fails on any that is not listed in ``KNOWN`` below (the ones
still to be replaced, each with what should replace it; remove an entry when you fix
it, never add one):

- another plugin's module named in a string (``"ketch_mcp"``, ``"ketch_interactive.history"``);
- a plugin-ish value (``.plugin``, ``.module``, ``.name``, ``info``) compared with
  another plugin's name (``c.name == "trust"``, ``info.plugin in ("skills", ...)``);
- a lookup by another plugin's name (``infos.get("skills")``, ``get_plugin("shell")``);
- anything compared with a provider kind another plugin registers, as a literal or
  through a module constant of kinds (``kind == "ollama"``: the registration says
  ``needs_key``; ``"openai" in kinds``, ``kind in LOCAL_KINDS``: the provider plugin
  answers a hook the owner declares, ``frontend_setup_choices``, ``catalog_local_kinds``);
- another plugin's settings section written into a settings table (``cli["mcp_servers"]
  = ...``: hand it over through a hook the owner declares, ``mcp_extra_servers``);
- a private file's name or format restated: a module constant named ``*FILE*``,
  ``*HEADER*`` or ``*PURPOSE*`` whose value another package also spells (the prompt
  history's ``"prompt-history"``: one owner, ``ketch_prompt_kit.history_file``).
"""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PLUGINS = ROOT / "plugins"

# (file, what matched) -> what replaces it. Issue 25 item 4: these remain to be done.
KNOWN: dict[tuple[str, str], str] = {}

LOOKUP = re.compile(r"get_plugin|infos\.get|plugins\.get|is_blocked")
PLUGINISH = re.compile(r"plugin|module|\.name\b|info")
SETTINGSISH = re.compile(r"cli|settings|config|layer|section")
FILEISH = re.compile(r"FILE|HEADER|PURPOSE")


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


def _call_literals(tree: ast.AST, callee: str, keyword: str | None = None) -> set[str]:
    """The string literal each call to ``callee`` passes first (or as ``keyword``)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and ast.unparse(node.func).split(".")[-1] == callee:
            values = [k.value for k in node.keywords if k.arg == keyword] if keyword else []
            values += node.args[:1] if not keyword else []
            found.update(_strings(values))
    return found


def owned_names(paths: list[Path]) -> dict[str, dict[str, set[str]]]:
    """Per package: the settings sections (``SettingsSection("name", ...)``) and the
    provider kinds (``ProviderKind(kind="name", ...)``) it registers."""
    owned: dict[str, dict[str, set[str]]] = {}
    for path in paths:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        mine = owned.setdefault(
            path.relative_to(PLUGINS).parts[0], {"sections": set(), "kinds": set()}
        )
        mine["sections"] |= _call_literals(tree, "SettingsSection")
        mine["kinds"] |= _call_literals(tree, "ProviderKind", "kind")
    return owned


def _others(owned: dict[str, dict[str, set[str]]], own_module: str, what: str) -> set[str]:
    return {n for module, names in owned.items() if module != own_module for n in names[what]}


def matches(
    path: Path,
    own_module: str,
    plugins: dict[str, str],
    owned: dict[str, dict[str, set[str]]] | None = None,
) -> list[str]:
    """What in ``path`` (a file of package ``own_module``) names another plugin."""
    own_name = {m: n for n, m in plugins.items()}.get(own_module)
    others = {n for n in plugins if n != own_name}
    other_modules = [m for m in plugins.values() if m != own_module]
    sections = _others(owned or {}, own_module, "sections")
    kinds = _others(owned or {}, own_module, "kinds")
    found = []
    tree = ast.parse(path.read_text(encoding="utf-8"))
    # Module constants of kinds (``LOCAL_KINDS = ("ollama",)``), read where compared
    # (not other vocabularies that share a word: LiteLLM's provider names).
    constants = {
        target.id: _strings([node.value])
        for node in tree.body
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name) and "KIND" in target.id.upper()
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if any(re.fullmatch(rf"{m}(\..*)?", node.value) for m in other_modules):
                found.append(f"module {node.value!r}")
        elif isinstance(node, ast.Compare):
            parts = [node.left, *node.comparators]
            literal = (ast.Constant, ast.Tuple, ast.List, ast.Set)
            other = " ".join(ast.unparse(p) for p in parts if not isinstance(p, literal))
            named = [constants.get(p.id, []) for p in parts if isinstance(p, ast.Name)]
            for name in _strings(parts) + [n for names in named for n in names]:
                if name in others and PLUGINISH.search(other):
                    found.append(f"compares {other} with plugin {name!r}")
                if name in kinds:
                    found.append(f"compares {other} with provider kind {name!r}")
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store):
            table = ast.unparse(node.value)
            for name in _strings([node.slice]):
                if name in sections and SETTINGSISH.search(table):
                    found.append(f"writes settings section {name!r} into {table}")
        elif isinstance(node, ast.Call) and LOOKUP.search(ast.unparse(node.func)):
            for name in _strings(list(node.args)):
                if name in others:
                    found.append(f"{ast.unparse(node.func)}({name!r})")
    return found


def _sources() -> list[Path]:
    return [p for p in sorted(PLUGINS.rglob("*.py")) if "__pycache__" not in p.parts]


def restated_files(paths: list[Path], root: Path = PLUGINS) -> list[str]:
    """File names and formats (module constants named ``*FILE*``, ``*HEADER*``,
    ``*PURPOSE*``) that more than one package spells: each has one owner."""
    owners: dict[str | bytes, str] = {}
    spelled: dict[str | bytes, set[str]] = {}
    trees = [(p.relative_to(root).parts[0], ast.parse(p.read_text("utf-8"))) for p in paths]
    for package, tree in trees:
        for node in tree.body:
            value = getattr(node, "value", None)
            targets = getattr(node, "targets", None) or [getattr(node, "target", None)]
            if not (isinstance(value, ast.Constant) and isinstance(value.value, (str, bytes))):
                continue
            if len(value.value) >= 4 and any(
                isinstance(t, ast.Name) and FILEISH.search(t.id) for t in targets
            ):
                owners.setdefault(value.value, package)
    for package, tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and node.value in owners:
                spelled.setdefault(node.value, set()).add(package)
    return [
        f"{value!r} (a file of {owners[value]}) spelled in {sorted(where - {owners[value]})}"
        for value, where in sorted(spelled.items(), key=repr)
        if len(where) > 1
    ]


def test_a_private_file_format_has_one_owner() -> None:
    restated = restated_files(_sources())
    assert not restated, (
        "another package restates a file's name or format; import it from its owner "
        "(a *_kit library both use) or ask the owner through a hook:\n  " + "\n  ".join(restated)
    )


def test_no_plugin_matches_another_by_name() -> None:
    plugins = _plugins()
    paths = _sources()
    owned = owned_names(paths)
    seen: set[tuple[str, str]] = set()
    new = []
    for path in paths:
        package = path.relative_to(PLUGINS).parts[0]
        for what in matches(path, package, plugins, owned):
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
        "LOCAL_KINDS = ('ollama',)\n"
        "def f(pm, info):\n"
        "    a = pm.get_plugin('shell')\n"
        "    b = info.module == 'ketch_mcp'\n"
        "    c = info.plugin in ('skills', 'other')\n"
        "    d = 'shell'  # a tool's name, not a lookup\n"
        "    e = any(c.name == 'trust' for c in pm.commands)\n"
        "    f = pm.infos.get('skills')\n"
        "    g = kind == 'ollama'\n"
        "    i = 'ollama' in kinds\n"
        "    j = provider_kind in LOCAL_KINDS\n"
        "    cli['mcp_servers'] = {}\n"
        "    detail['mcp_servers'] = 1  # not a settings table\n"
        "    h = 'ketch_interactive.history'\n",
        encoding="utf-8",
    )
    plugins = {
        "shell": "ketch_shell",
        "mcp": "ketch_mcp",
        "skills": "ketch_skills",
        "trust": "ketch_trust",
        "interactive": "ketch_interactive",
    }
    owned = {"ketch_mcp": {"sections": {"mcp_servers"}, "kinds": set()}}
    owned["ketch_ollama"] = {"sections": set(), "kinds": {"ollama"}}
    assert sorted(matches(sample, "ketch_acp", plugins, owned)) == [
        "compares c.name with plugin 'trust'",
        "compares info.plugin with plugin 'skills'",
        "compares kind with provider kind 'ollama'",
        "compares kinds with provider kind 'ollama'",
        "compares provider_kind LOCAL_KINDS with provider kind 'ollama'",
        "module 'ketch_interactive.history'",
        "module 'ketch_mcp'",
        "pm.get_plugin('shell')",
        "pm.infos.get('skills')",
        "writes settings section 'mcp_servers' into cli",
    ]


def test_the_check_finds_a_restated_file_format(tmp_path: Path) -> None:
    for package, text in {
        "ketch_owner": 'FILE_NAME = "prompt-history"\nHEADER = b"v1 header"\n',
        "ketch_other": 'def f(d):\n    return d / "prompt-history"\n',
        "ketch_third": 'X = b"v1 header"\nY = "a-file"\n',
    }.items():
        (tmp_path / package).mkdir()
        (tmp_path / package / "m.py").write_text(text, encoding="utf-8")
    assert restated_files(sorted(tmp_path.rglob("*.py")), tmp_path) == [
        "'prompt-history' (a file of ketch_owner) spelled in ['ketch_other']",
        "b'v1 header' (a file of ketch_owner) spelled in ['ketch_third']",
    ]
