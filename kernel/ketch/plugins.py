"""The plugin manager: discovery, blocking, failure isolation and tracing.

Plugins are entry points in the ``ketch`` group. Blocking (``--no-plugin``,
``KETCH_DISABLE_PLUGINS``, ``[plugins] disable``, and the allow-list forms
``KETCH_PLUGINS`` / ``[plugins] only``) is decided from entry-point *names*, before
anything is imported: a blocked plugin's module is never imported.

A plugin whose import or registration raises is reported (``ketch plugins``, stderr)
and skipped. At call time every hook implementation is isolated: one that raises is
reported and treated as having returned None (a policy vote fails closed: deny).
"""

from __future__ import annotations

import importlib
import os
import sys
import time
import traceback
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pluggy

from ketch import PROJECT_NAME, hookspecs
from ketch.config import split_names
from ketch.hooks import Policy, isolate, policy_of
from ketch.stash import StashKey

# The essential set: plugins that cannot be disabled. Kept small: the hard guards,
# ``provider_setup`` (which provider a session uses: the kernel builds none without it),
# ``function_tools`` (a plugin that registers a typed function, as docs/plugins.md
# teaches, would lose its tools under an allow-list without it) and ``mode_options``
# (the --mode/--profile choices of whichever plugin declares modes and profiles).
# ``guards`` holds the hard guards (writes outside the workspace, to .git internals, to
# ketch's own config/hooks/MCP settings; reads of secret-looking files). Because votes
# combine deny > ask > allow, its ask/deny cannot be overridden by any other plugin,
# so it is the floor that holds whatever third-party policy plugins are installed.
# Everything else is safe to remove: without a policy plugin every call asks; without
# a store nothing is saved; without the crypto plugin the store refuses to open unless
# ``storage.encryption = "off"`` is set explicitly.
ESSENTIAL: dict[str, str] = {
    "guards": "the hard guards are the floor of the permission engine; no other plugin can override them",
    "provider_setup": "the kernel builds no model provider without it (it resolves [providers.NAME])",
    "plugin_list": "ketch plugins is how you find out why other plugins are broken, blocked or disabled",
    "function_tools": "a plugin's plain typed functions become its tools only through it",
    "workspace_settings": "it holds back what a repository's own config may not set; without it none of that file applies",
    "mode_options": "--mode and --profile offer the modes and profiles plugins declare only through it",
}

AUTOLOAD_ENV = "KETCH_AUTOLOAD"  # all (default) | bundled | none
LOAD_ENV = "KETCH_LOAD"  # extra plugin modules to load: "name=module,module2"
TRACE_ENV = "KETCH_TRACE_PLUGINS"


@dataclass
class PluginInfo:
    name: str
    module: str
    distribution: str = ""
    version: str = ""
    status: str = "ok"  # ok | disabled | failed
    error: str | None = None
    hooks: list[str] = field(default_factory=list)
    import_ms: float = 0.0
    essential: bool = False
    disabled_by: str | None = None
    provides: dict[str, list[str]] = field(default_factory=dict)  # tools, providers, ...
    dynamic: dict[str, str] = field(
        default_factory=dict
    )  # kind -> what else it registers (declared)
    warnings: list[str] = field(default_factory=list)


# --- declared registrations ---------------------------------------------------------

PROVIDES_ATTR = "ketch_provides"
# Set by ``ketch plugins --check``: every registration hook is called for real (no cache).
CHECKING_REGISTRATIONS = StashKey[bool]()
_Hook = TypeVar("_Hook", bound=Callable[..., Any])


@dataclass(frozen=True)
class Provided:
    """What a registration hook declares it registers (see :func:`provides`)."""

    names: tuple[str, ...]
    dynamic: str | None = None  # what else it may register, in words; None: nothing else
    offered_when: Callable[[Any], bool | str | None] | None = None  # see ketch_tool_cache


def provides(
    *names: str,
    dynamic: str | None = None,
    offered_when: Callable[[Any], bool | str | None] | None = None,
) -> Callable[[_Hook], _Hook]:
    """Declare the names a ``ketch_register_*`` hook registers, so that ``ketch plugins``
    can list them without calling the hook (and importing what the hook imports)::

        @hookimpl
        @provides("read_file", "write_file")
        def ketch_register_tools(register): ...

    ``dynamic`` says in words what the hook may register beyond ``names`` (tools
    that depend on the config, say). ``ketch plugins`` lists the declared names and
    calls only the implementations without a declaration; ``ketch plugins --check``
    calls them all and reports any declaration that does not match what was
    registered. A declaration never decides what runs.

    Without ``dynamic`` it also says that what the hook registers (names, descriptions,
    schemas) depends on the plugin's code alone, not on the config or the workspace:
    a session then takes a tool plugin's schemas from the tool cache while it is
    current (the ``tool_cache`` plugin) and calls the hook when one of its tools is
    first needed beyond its schema. A hook whose registration depends on anything else
    says so in ``dynamic`` and is always called, unless ``offered_when(kernel)``, cheap
    and without the tool modules, decides what varies (``ketch_tool_cache``).
    """

    def mark(hook: _Hook) -> _Hook:
        setattr(hook, PROVIDES_ATTR, Provided(tuple(names), dynamic, offered_when))
        return hook

    return mark


def declared(impl: Any) -> Provided | None:
    """The :class:`Provided` of a hook implementation (pluggy ``HookImpl``), if any."""
    found = getattr(impl.function, PROVIDES_ATTR, None)
    return found if isinstance(found, Provided) else None


@dataclass
class HookFailure:
    plugin: str
    hook: str
    error: str
    count: int = 1  # how many calls failed this way (recorded once, counted after)


@dataclass
class Blocking:
    """Which plugin names are blocked, and why (for ``ketch plugins``)."""

    disabled: dict[str, str] = field(default_factory=dict)  # name -> source
    only: list[str] | None = None
    only_source: str = ""
    required: set[str] = field(default_factory=set)  # the managed policy's: never blocked by others

    def reason(self, name: str) -> str | None:
        if name in ESSENTIAL:
            return None
        if name in self.disabled:
            return self.disabled[name]
        if self.only is not None and name not in self.only and name not in self.required:
            return f"not in {self.only_source}"
        return None


def blocking_from(
    *,
    cli_disabled: Iterable[str] = (),
    config_plugins: dict[str, Any] | None = None,
    environ: dict[str, str] | None = None,
    managed_plugins: dict[str, Any] | None = None,
    managed_source: str = "",
) -> tuple[Blocking, list[str]]:
    """Combine the block lists. Returns the blocking and notices (e.g. essential refusals).

    The managed policy's ``[plugins] disable`` always applies, and its ``required``
    plugins cannot be disabled by anyone else (as the essential set)."""
    env = os.environ if environ is None else environ
    blocking = Blocking()
    notices: list[str] = []
    config_plugins = config_plugins or {}
    managed_plugins = managed_plugins or {}
    required = managed_plugins.get("required") or []
    required = {str(n) for n in required} if isinstance(required, list) else set()
    sources = [
        ("config [plugins] disable", config_plugins.get("disable") or []),
        ("KETCH_DISABLE_PLUGINS", split_names(env.get("KETCH_DISABLE_PLUGINS"))),
        ("--no-plugin", list(cli_disabled)),
    ]
    for source, names in sources:
        if not isinstance(names, list):
            notices.append(f"{source}: expected a list of plugin names; ignored")
            continue
        for name in names:
            if name in required:
                notices.append(
                    f"plugin '{name}' is required by the managed policy {managed_source} and cannot be disabled ({source})"
                )
                continue
            if name in ESSENTIAL:
                notices.append(
                    f"plugin '{name}' is essential and cannot be disabled ({ESSENTIAL[name]})"
                )
                continue
            blocking.disabled[str(name)] = source
    blocking.required = required
    forced = managed_plugins.get("disable") or []
    for name in forced if isinstance(forced, list) else []:
        if str(name) not in ESSENTIAL:
            blocking.disabled[str(name)] = f"the managed policy {managed_source}"
    only_env = split_names(env.get("KETCH_PLUGINS"))
    only_cfg = config_plugins.get("only")
    if only_env:
        blocking.only, blocking.only_source = only_env, "KETCH_PLUGINS"
    elif isinstance(only_cfg, list):
        blocking.only, blocking.only_source = [str(n) for n in only_cfg], "config [plugins] only"
    return blocking, notices


@dataclass
class Candidate:
    name: str
    module: str
    load: Callable[[], Any]
    distribution: str = ""
    version: str = ""
    explicit: bool = False  # named in KETCH_LOAD: an allow-list does not apply, a disable does


def discover(environ: dict[str, str] | None = None) -> list[Candidate]:
    """Entry points of the ``ketch`` group (without importing them), plus KETCH_LOAD.

    The entry points come from a cache keyed by what is installed
    (:mod:`ketch.plugin_cache`): reading every distribution's metadata is the slow
    part, and it only changes when a distribution is installed, removed or upgraded."""
    env = os.environ if environ is None else environ
    autoload = env.get(AUTOLOAD_ENV, "all").strip().lower() or "all"
    found: list[Candidate] = []
    if autoload != "none":
        from ketch.plugin_cache import entry_points, load_entry_point

        seen: set[tuple[str, str]] = set()
        rows, _ = entry_points(PROJECT_NAME, env)
        for ep_name, value, dist_name, dist_version in rows:
            if autoload == "bundled" and dist_name.lower() != PROJECT_NAME:
                continue
            # The same distribution on sys.path twice is one plugin; two distributions
            # using one name are two (the loader reports the second, never drops it).
            if (ep_name, dist_name.lower()) in seen:
                continue
            seen.add((ep_name, dist_name.lower()))
            found.append(
                Candidate(
                    name=ep_name,
                    module=value,
                    load=_entry_point_loader(value, load_entry_point),
                    distribution=dist_name,
                    version=dist_version,
                )
            )
        # Bundled plugins first, then third-party ones; each group by name. Deterministic.
        found.sort(
            key=lambda c: (c.distribution.lower() != PROJECT_NAME, c.distribution.lower(), c.name)
        )
    for spec in split_names(env.get(LOAD_ENV)):
        name, _, module = spec.rpartition("=")
        module = module.strip()
        name = name.strip() or module.rsplit(".", 1)[-1]
        found.append(
            Candidate(
                name=name,
                module=module,
                load=_importer(module),
                distribution="(KETCH_LOAD)",
                explicit=True,
            )
        )
    return found


def _entry_point_loader(value: str, load: Callable[[str], Any]) -> Callable[[], Any]:
    return lambda: load(value)


def _importer(module: str) -> Callable[[], Any]:
    return lambda: importlib.import_module(module)


class PluginManager(pluggy.PluginManager):
    """pluggy's manager plus ketch's discovery, blocking, isolation and reporting."""

    def __init__(self) -> None:
        super().__init__(PROJECT_NAME)
        self._spec_sources: list[Any] = []
        self._policies: dict[str, Policy] = {}
        self.add_hookspecs(hookspecs)
        self.infos: dict[str, PluginInfo] = {}
        self.failures: list[HookFailure] = []
        self._reported: set[tuple[str, str]] = set()
        self._deferring = 0  # > 0 inside loading(): checks wait for its end
        self.report: Callable[[str], None] = lambda line: print(f"ketch: {line}", file=sys.stderr)
        self.tracing = os.environ.get(TRACE_ENV, "") not in ("", "0")
        if self.tracing:  # pluggy's tracer and call monitoring, written to stderr
            from ketch.hooks import trace_writer

            self.trace.root.setwriter(trace_writer)
            calls = self.trace.root.get("call")
            self.add_hookcall_monitoring(
                lambda name, impls, kwargs: calls(name, [i.plugin_name for i in impls]),
                lambda outcome, name, impls, kwargs: None,
            )
        # Plugins declare their own hooks as they register (historic: each one is
        # called when it registers), so any plugin may implement them.
        self.hook.ketch_add_hookspecs.call_historic(kwargs={"pluginmanager": self})

    # --- specs and their policies -------------------------------------------------

    def add_hookspecs(self, module_or_class: Any) -> None:
        """pluggy's, made idempotent: a library's spec module may be declared by each
        plugin that calls or implements it (whichever of them is loaded)."""
        if any(module_or_class is known for known in self._spec_sources):
            return
        super().add_hookspecs(module_or_class)
        self._spec_sources.append(module_or_class)
        self._policies.clear()

    def policy(self, name: str) -> Policy:
        """What hook ``name``'s spec declares (error policy, answer types, chaining)."""
        found = self._policies.get(name)
        if found is None:
            caller = getattr(self.hook, name, None)
            spec = caller.spec if caller is not None else None
            found = policy_of(spec.function) if spec is not None else Policy()
            self._policies[name] = found
        return found

    def register(self, plugin: Any, name: str | None = None) -> str | None:
        """pluggy's, with every implementation wrapped in its spec's error policy."""
        registered = super().register(plugin, name)
        for caller in self.get_hookcallers(plugin) or []:
            for impl in caller.get_hookimpls():
                if impl.plugin is plugin:
                    isolate(self, caller.name, impl)
        return registered

    # --- loading ------------------------------------------------------------------

    @contextmanager
    def loading(self) -> Iterator[None]:
        """Register several plugins, then check them: a plugin may implement a hook
        that a plugin registered after it declares (``ketch_add_hookspecs``), so
        unknown hooks are looked for once every plugin has declared its own."""
        self._deferring += 1
        try:
            yield
        finally:
            self._deferring -= 1
        if not self._deferring:
            for info in list(self.infos.values()):
                plugin = self.get_plugin(info.name) if info.status == "ok" else None
                if plugin is not None:
                    self._check(plugin, info)

    def load(self, candidates: list[Candidate], blocking: Blocking) -> None:
        with self.loading():
            self._load(candidates, blocking)

    def _load(self, candidates: list[Candidate], blocking: Blocking) -> None:
        for cand in candidates:
            info = PluginInfo(
                name=cand.name,
                module=cand.module,
                distribution=cand.distribution,
                version=cand.version,
                essential=cand.name in ESSENTIAL,
            )
            why = blocking.disabled.get(cand.name) if cand.explicit else blocking.reason(cand.name)
            first = self.infos.get(cand.name)
            if first is not None:  # two plugins, one name: the first (in load order) keeps it
                self.infos[f"{cand.name}@{cand.distribution}"] = info
                if why:
                    info.status, info.disabled_by = "disabled", why
                    continue
                info.status = "failed"
                info.error = f"plugin name '{cand.name}' is taken by {first.distribution or first.module} (loaded first); not loaded"
                first.warnings.append(
                    f"{cand.distribution or cand.module} also names a plugin '{cand.name}'; it was not loaded"
                )
                continue
            self.infos[cand.name] = info
            if why:
                info.status, info.disabled_by = "disabled", why
                continue
            start = time.perf_counter()
            try:
                plugin = cand.load()
            except BaseException as exc:  # noqa: BLE001 - a plugin's import may raise anything
                if isinstance(exc, KeyboardInterrupt):
                    raise
                info.import_ms = (time.perf_counter() - start) * 1000
                info.status, info.error = "failed", _one_line(exc, "import failed")
                continue
            info.import_ms = (time.perf_counter() - start) * 1000
            self.add_plugin(plugin, info)

    def add_plugin(self, plugin: Any, info: PluginInfo) -> bool:
        """Register an already-imported plugin object under ``info.name``."""
        self.infos[info.name] = info
        try:
            self.register(plugin, name=info.name)
        except Exception as exc:  # pluggy validation errors, duplicate registration
            if self.get_plugin(info.name) is plugin:  # a declaration raised half-way
                self.unregister(plugin)
            info.status, info.error = "failed", _one_line(exc, "registration failed")
            return False
        info.hooks = sorted(caller.name for caller in self.get_hookcallers(plugin) or [])
        return True if self._deferring else self._check(plugin, info)

    def _check(self, plugin: Any, info: PluginInfo) -> bool:
        """Fail a registered plugin that implements an unknown hook or a wrapper."""
        unknown = [
            impl.function.__name__
            for caller in self.get_hookcallers(plugin) or []
            if caller.spec is None
            for impl in caller.get_hookimpls()
            if impl.plugin is plugin and not impl.optionalhook
        ]
        if unknown:
            self.unregister(plugin)
            info.status = "failed"
            info.error = f"implements unknown hook(s) {', '.join(sorted(unknown))} (a typo, a ketch version mismatch, or the plugin that declares it is not loaded?)"
            return False
        wrappers = sorted(
            caller.name
            for caller in self.get_hookcallers(plugin) or []
            for impl in caller.get_hookimpls()
            if impl.plugin is plugin and (impl.wrapper or impl.hookwrapper)
        )
        if wrappers:
            self.unregister(plugin)
            info.status = "failed"
            info.error = f"uses hook wrappers ({', '.join(wrappers)}), which ketch does not support: implement the hook plainly"
            return False
        return True

    def fail(self, name: str, error: str) -> None:
        """Mark a loaded plugin failed (e.g. its registration hook raised) and remove it."""
        info = self.infos.get(name)
        plugin = self.get_plugin(name)
        if plugin is not None:
            self.unregister(plugin)
        if info is not None:
            info.status, info.error = "failed", error

    # --- failures -------------------------------------------------------------------

    def record_failure(
        self, plugin: str, hook: str, exc: BaseException, *, closed: bool = False
    ) -> None:
        """Keep and report a failure once per (plugin, hook, message); count repeats.
        ``closed``: the hook failed closed (the call was denied or withheld)."""
        message = _one_line(exc, "")
        known = next(
            (f for f in self.failures if (f.plugin, f.hook, f.error) == (plugin, hook, message)),
            None,
        )
        if known is not None:
            known.count += 1
            return
        self.failures.append(HookFailure(plugin, hook, message))
        info = self.infos.get(plugin)
        warning = f"{hook}: {message}"
        if info is not None and warning not in info.warnings:
            info.warnings.append(warning)
        if (plugin, hook) not in self._reported:
            self._reported.add((plugin, hook))
            consequence = (
                "failing closed: what it was asked about is refused"
                if closed
                else "continuing without it"
            )
            self.report(f"plugin '{plugin}' failed in {hook}: {message} ({consequence})")
            if self.tracing:
                traceback.print_exception(exc, file=sys.stderr)

    def in_load_order(self, impls: list[Any]) -> list[Any]:
        """The order plugins loaded in (bundled, then third-party by distribution and
        name), so that on a name clash the plugin that loaded first wins whatever
        pluggy's call order (LIFO, tryfirst) would be."""
        order = {name: index for index, name in enumerate(self.infos)}
        return sorted(impls, key=lambda impl: order.get(impl.plugin_name, len(order)))

    def loaded(self) -> list[PluginInfo]:
        return [i for i in self.infos.values() if i.status == "ok"]


def _one_line(exc: BaseException, prefix: str) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    if len(text) > 300:
        text = text[:297] + "..."
    head = f"{type(exc).__name__}: {text}" if type(exc).__name__ not in text else text
    return f"{prefix}: {head}" if prefix else head
