"""The first request's tool schemas without importing the tool modules.

A plugin whose ``ketch_register_tools`` is declared ``@provides(names)`` with nothing
``dynamic`` registers what its code alone decides. What it registered (each tool's name,
description, input schema, effects) is kept in ``KETCH_CACHE_DIR/tools.json`` under the
installation's fingerprint (:mod:`ketch.plugin_cache`: a distribution installed, removed
or upgraded is a new key) and the size and mtime of every module file the schemas were
built from outside the installed locations (an editable install, a source tree on
``PYTHONPATH``): a changed docstring or input model there is a new key too. On a hit
the kernel takes a :class:`CachedTool` for each instead of calling the hook: the
model gets the same schema, byte for byte, and the tool's plugin registers for real
(importing its modules) the first time anything else is needed, in practice when the
model first calls one of its tools. Plugins declared ``dynamic`` (the config, the
workspace or a server decides what they register) are always called.

Unless they also declare ``offered_when``: a cheap function of the kernel, kept beside
the hook and importing none of its tool modules, that decides what the config or the
workspace changes in the registration. It returns False (or None) when the hook would
register nothing (the hook is not called: a language server's tools with no server
found, the skill tool with no skill), True when the hook registers what its code alone
decides, or a string when the registration also depends on that string (the agents
listed in the agent tool's description): the cache keeps one entry per distinct string
(the last few of each plugin). The hook itself must decide by the same function, so the
cache stays exact; ``ketch plugins --check`` calls every hook and says where they differ.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ketch.api import (
    CHECKING_REGISTRATIONS,
    Effect,
    StashKey,
    Tool,
    ToolContext,
    ToolResult,
    as_tool,
    cache_dir,
    declared,
    plugin_cache,
)

if TYPE_CHECKING:  # pragma: no cover
    from pydantic import BaseModel

    from ketch.api import Kernel

TOOLS_FILE = "tools.json"


def _installed_roots() -> tuple[str, ...]:
    """Directories whose modules change only with an install (caught by the fingerprint)."""
    import site
    import sysconfig

    roots: set[str] = set()
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        with contextlib.suppress(KeyError):
            roots.add(sysconfig.get_paths()[key])
    with contextlib.suppress(AttributeError):
        roots.update(site.getsitepackages())
    with contextlib.suppress(AttributeError):
        roots.add(site.getusersitepackages())
    for base in (sys.prefix, sys.base_prefix, sys.exec_prefix):
        roots.add(os.path.join(base, "lib"))
    return tuple(os.path.join(os.path.realpath(r), "") for r in roots if r)


def source_files() -> list[list[Any]]:
    """(path, mtime_ns, size) of every loaded module file outside the installed locations."""
    roots = _installed_roots()
    seen: dict[str, list[Any]] = {}
    for module in list(sys.modules.values()):
        file = getattr(module, "__file__", None)
        if not isinstance(file, str) or file in seen:
            continue
        real = os.path.realpath(file)
        if real.startswith(roots):
            continue
        try:
            st = os.stat(file)
        except OSError:
            continue
        seen[file] = [file, st.st_mtime_ns, st.st_size]
    return sorted(seen.values())


def _unchanged(files: Any) -> bool:
    if not isinstance(files, list):
        return False
    for row in files:
        try:
            path, mtime, size = row
            st = os.stat(path)
        except (OSError, TypeError, ValueError):
            return False
        if st.st_mtime_ns != mtime or st.st_size != size:
            return False
    return True


VARIANTS_KEPT = 8  # per plugin: the offered_when strings of the last few workspaces


def plugin_key(info: Any, variant: str = "") -> str:
    key = f"{info.name}\0{info.module}\0{info.distribution}\0{info.version}"
    if not variant:
        return key
    import hashlib

    return f"{key}\0{hashlib.sha256(variant.encode('utf-8', 'surrogateescape')).hexdigest()[:32]}"


def cacheable(info: Any, provided: Any) -> bool:
    """A registration that depends on its plugin's code alone, or on its code and what
    its ``offered_when`` returns: declared with ``@provides(names)`` and nothing
    ``dynamic`` (or an ``offered_when``), by an installed distribution."""
    if provided is None or info is None:
        return False
    if provided.dynamic is not None and provided.offered_when is None:
        return False
    return bool(info.distribution) and not info.distribution.startswith(("(", "ketch (kernel)"))


def offered(kernel: Any, provided: Any) -> str | bool | None:
    """What ``offered_when`` says: False (nothing offered), "" (offered, as the code
    decides), a variant string; None when it cannot say (it raised: the hook decides)."""
    if provided.offered_when is None:
        return ""
    try:
        said = provided.offered_when(kernel)
    except Exception:  # noqa: BLE001 - the hook runs for real, under its own policy
        return None
    if said is None or said is False:
        return False
    return said if isinstance(said, str) else ""


def _prune(plugins: dict[str, Any]) -> dict[str, Any]:
    """At most ``VARIANTS_KEPT`` variant entries per plugin (the newest, in file order)."""
    seen: dict[str, int] = {}
    kept: list[tuple[str, Any]] = []
    for key, rows in reversed(list(plugins.items())):
        base, _, variant = key.rpartition("\0") if key.count("\0") == 4 else (key, "", "")
        if variant:
            seen[base] = seen.get(base, 0) + 1
            if seen[base] > VARIANTS_KEPT:
                continue
        kept.append((key, rows))
    return dict(reversed(kept))


class ToolCache:
    """The ``tools.json`` of one kernel: read once, written when a miss filled it."""

    def __init__(self, kernel: Kernel, *, read: bool = True) -> None:
        self.path = cache_dir(kernel.environ) / TOOLS_FILE
        self.key = plugin_cache.fingerprint()
        self.plugins: dict[str, list[dict[str, Any]]] = {}
        self.valid = False
        if not read:
            return
        data = plugin_cache.read(self.path)
        if data is None or data.get("key") != self.key or not _unchanged(data.get("files")):
            return
        plugins = data.get("plugins")
        if isinstance(plugins, dict):
            self.valid = True
            self.plugins = {k: v for k, v in plugins.items() if isinstance(v, list)}

    def records(self, key: str) -> list[dict[str, Any]] | None:
        return self.plugins.get(key) if self.valid else None

    def save(self, registered: dict[str, list[Tool]]) -> None:
        """Keep what each cacheable plugin registered (``registered``: by plugin key)."""
        plugins = dict(self.plugins) if self.valid else {}
        changed = not self.valid
        for key, tools in registered.items():
            rows = [record(t) for t in tools]
            if plugins.get(key) != rows:
                plugins.pop(key, None)  # the newest last: pruning keeps it
                plugins[key] = rows
                changed = True
        if changed:
            plugin_cache.write(
                self.path, {"key": self.key, "files": source_files(), "plugins": _prune(plugins)}
            )


def record(tool: Tool) -> dict[str, Any]:
    return {
        "name": tool.name,
        "description": tool.description,
        "input_schema": tool.input_schema(),
        "effects": sorted(str(e) for e in tool.effects),
        "mutating": bool(tool.mutating),
        "concurrent": tool.concurrent,
        "repeatable": bool(tool.repeatable),
        "capabilities": sorted(str(c) for c in tool.capabilities),
    }


class CachedTool(Tool):
    """A tool as the cache knows it: what the model sees (name, description, schema)
    and what the loop reads first (effects, mutating). The real tool, and its module,
    come the first time anything else is needed (its input model, its accesses, running
    it): ``resolve`` runs its plugin's registration then."""

    def __init__(self, row: dict[str, Any], resolve: Callable[[str], Tool | None]) -> None:
        self.name = str(row["name"])  # type: ignore[misc]
        self.description = str(row.get("description") or "")  # type: ignore[misc]
        self._schema = row.get("input_schema") or {"type": "object", "properties": {}}
        self.effects = frozenset(Effect(e) for e in row.get("effects") or ())  # type: ignore[misc]
        self.mutating = bool(row.get("mutating", True))  # type: ignore[misc]
        concurrent = row.get("concurrent")
        self.concurrent = concurrent if isinstance(concurrent, bool) else None  # type: ignore[misc]
        self.repeatable = bool(row.get("repeatable", False))  # type: ignore[misc]
        # What the tool is (running sandboxed, delegating to a child session): read with
        # the call's proposal, before anything resolves the real tool.
        self.capabilities = frozenset(str(c) for c in row.get("capabilities") or ())  # type: ignore[misc]
        self._resolve = resolve
        self._real: Tool | None = None
        self._missing = ""

    def input_schema(self) -> dict[str, Any]:
        return json.loads(json.dumps(self._schema))  # type: ignore[no-any-return]

    def __getattr__(self, name: str) -> Any:
        """Anything else a tool class declares (a plugin's own attribute): the real tool's."""
        if name.startswith("_"):
            raise AttributeError(name)
        real = self.real
        if real is None:
            raise AttributeError(name)
        return getattr(real, name)

    @property
    def real(self) -> Tool | None:
        if self._real is None and not self._missing:
            self._real = self._resolve(self.name)
            if self._real is None:
                self._missing = f"the tool {self.name} is not available: its plugin '{self.plugin}' no longer registers it"
        return self._real

    @property
    def input_model(self) -> type[BaseModel]:  # type: ignore[override]
        real = self.real
        if real is not None:
            return real.input_model
        from pydantic import BaseModel, ConfigDict

        class Anything(BaseModel):
            model_config = ConfigDict(extra="allow")

        return Anything

    def accesses(self, args: BaseModel, ctx: ToolContext) -> Any:
        real = self.real
        return real.accesses(args, ctx) if real is not None else []

    def summary(self, args: BaseModel) -> str:
        real = self.real
        return real.summary(args) if real is not None else super().summary(args)

    async def preview(self, args: BaseModel, ctx: ToolContext) -> str | None:
        real = self.real
        return await real.preview(args, ctx) if real is not None else None

    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolResult:
        real = self.real
        if real is None:
            return ToolResult.error(self._missing)
        return await real.run(args, ctx)


# --- the kernel's question: what need it not call? -------------------------------------

RESOLVED = StashKey[dict[str, dict[str, Tool]]]()
HOOK = "ketch_register_tools"


def cached_registrations(kernel: Kernel, plugins: list[str]) -> dict[str, list[Tool]]:
    """What each cacheable plugin of ``plugins`` registers, so that the kernel need not
    call it: from the cache when current, else its hook called now (its modules load)
    and the cache written back. ``ketch plugins --check`` (``CHECKING_REGISTRATIONS``):
    every cacheable hook called for real, the cache refreshed, and a warning on each
    plugin whose ``offered_when`` said nothing is offered while its hook registered tools."""
    checking = kernel.stash.get(CHECKING_REGISTRATIONS) or False
    impls = {i.plugin_name: i for i in getattr(kernel.pm.hook, HOOK).get_hookimpls()}
    cache: ToolCache | None = None
    standing: dict[str, list[Tool]] = {}
    fresh: dict[str, list[Tool]] = {}  # plugin key -> what its hook registered just now
    for plugin in plugins:
        impl, info = impls.get(plugin), kernel.pm.infos.get(plugin)
        provided = declared(impl) if impl is not None else None
        if info is None or not cacheable(info, provided):
            continue
        variant = offered(kernel, provided)
        if variant is None or (variant is False and not checking):
            if variant is False:  # nothing offered: the hook would register nothing
                standing[plugin] = []
            continue  # None: the hook decides
        if cache is None:
            cache = ToolCache(kernel, read=not checking)
        key = plugin_key(info, variant if isinstance(variant, str) else "")
        rows = cache.records(key)
        if rows is not None:
            resolve = _resolver(kernel, plugin)
            standing[plugin] = [CachedTool(row, resolve) for row in rows]
            continue
        standing[plugin] = tools = _register_one(kernel, plugin, report=False)
        if info.status != "ok":
            continue
        if variant is False and tools:
            info.warnings.append(
                f"offered_when says no tool is offered, but {HOOK} registered "
                + ", ".join(t.name for t in tools)
            )
        elif isinstance(variant, str):
            fresh[key] = tools
    if cache is not None and (fresh or checking):
        with contextlib.suppress(Exception):  # a schema that cannot be built is not cached
            cache.save(fresh)
    return standing


def _resolver(kernel: Kernel, plugin: str) -> Callable[[str], Tool | None]:
    def resolve(name: str) -> Tool | None:
        done = kernel.stash.setdefault(RESOLVED, {})
        if plugin not in done:
            done[plugin] = {}
            for registered in _register_one(kernel, plugin, report=True):
                done[plugin].setdefault(registered.name, registered)
        tool = done[plugin].get(name)
        table = kernel.__dict__.get("tools")
        if tool is not None and isinstance(table, dict) and isinstance(table.get(name), CachedTool):
            table[name] = tool  # later lookups get the real tool
        return tool

    return resolve


def _register_one(kernel: Kernel, plugin: str, *, report: bool) -> list[Tool]:
    """Call one plugin's tool registration for real (its modules load now), under the
    registration hooks' policy: if it raises, the plugin fails and keeps nothing.
    ``report``: also say so on stderr (a tool resolved mid-session; at start-up the
    failed plugin is reported as any other)."""
    found: list[Tool] = []

    def register(obj: Any) -> None:
        tool = as_tool(obj, kernel.hooks)
        with contextlib.suppress(AttributeError, TypeError, ValueError):
            object.__setattr__(tool, "plugin", plugin)
        found.append(tool)

    others = frozenset(impl.plugin_name for impl in getattr(kernel.pm.hook, HOOK).get_hookimpls())
    _, failures = kernel.hooks.register(
        HOOK, withheld=others - {plugin}, register=register, kernel=kernel
    )
    if plugin in failures:
        error = failures[plugin]
        if report:
            kernel.pm.record_failure(plugin, HOOK, error)  # said once, on stderr
        kernel.fail_plugin(plugin, f"{HOOK} raised: {type(error).__name__}: {error}")
        return []
    return found
