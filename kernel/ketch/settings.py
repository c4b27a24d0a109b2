"""Typed settings, loaded in layers: defaults < user < workspace < environment < CLI.

The kernel validates only its own keys (:class:`Settings`: providers, plugins, the
loop, and the session's mode and profile *names*). Every other
table belongs to the plugin that declares it with ``ketch_register_settings``
(a :class:`SettingsSection`): the kernel validates each such table with the plugin's
model, reports a bad value as ``path:line: key: what`` and drops that layer's table
(a plugin's table is one unit: a table of rules never half-applies), and
``settings.of(Model)`` (or ``settings.NAME``) returns the typed result.

A kernel key of the wrong type (``[loop] max_iterations = "many"``) drops that key of
that file only, with ``path:line: key: what``; the rest of the file applies. Only a
problem no single key explains drops the file's kernel keys.

The workspace layer (``.ketch/config.toml``) comes from the repository, which ketch
does not trust: only keys that cannot raise authority apply as written (the kernel's
:data:`WORKSPACE_SAFE_KEYS` plus what each section declares safe). Every other value
is held back and offered, key by key, to ``admit`` (the kernel asks the
``ketch_workspace_setting`` hook), which answers with what of it the person trusted;
what is not admitted is ignored with a notice. A layer that is corrupt is reported
with its path and line and dropped, never fatal.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError

from ketch.config import Layer, deep_merge, line_of_key, read_layers

M = TypeVar("M", bound=BaseModel)


class Section(BaseModel):
    """Base for a settings table: unknown keys are kept (a newer config on an older ketch)."""

    model_config = ConfigDict(extra="allow")


class PluginsSettings(Section):
    disable: list[str] = Field(default_factory=list)
    # Allow-list form: only these (plus the essential set) load. None = all.
    only: list[str] | None = None


class LoopSettings(Section):
    max_iterations: int = Field(100, ge=1)
    # The same call with the same input this many times in a row is refused.
    duplicate_call_limit: int = Field(3, ge=2)
    max_retries: int = Field(3, ge=0)
    max_output_tokens: int | None = Field(None, ge=1)


@dataclass(frozen=True)
class SettingsSection:
    """A configuration table a plugin owns (registered with ``ketch_register_settings``).

    ``workspace_safe`` says which keys an untrusted workspace config may set: ``True``
    for all, a set of key names, or a nested dict in :func:`restrict`'s format.
    """

    name: str
    model: type[BaseModel]
    workspace_safe: bool | frozenset[str] | dict[str, Any] = False
    doc: str = ""
    plugin: str = field(default="", compare=False)
    # How this section's table in the managed policy narrows the effective config:
    # ``narrow(effective, managed_table, origin)`` may change ``effective`` (the merged
    # config, every table) in place to the narrower of the two, and returns refusals:
    # one line each, for a value a user, workspace or command line asked for that the
    # policy forbids (``origin(dotted_key)`` names the layer that set it). Without it,
    # the managed table's values are enforced as they are (they replace the others').
    narrow: Callable[[dict[str, Any], dict[str, Any], Callable[[str], str]], list[str]] | None = (
        field(default=None, compare=False)
    )

    def safe_rule(self) -> Any:
        if self.workspace_safe is True:
            return True
        if isinstance(self.workspace_safe, dict):
            return self.workspace_safe
        if self.workspace_safe:
            return {key: True for key in self.workspace_safe}
        return None


class Settings(BaseModel):
    """The kernel's own settings. Plugins' tables are validated by their own models."""

    model_config = ConfigDict(extra="allow")

    default_provider: str | None = None
    provider: str | None = None  # chosen for this run (--provider / KETCH_PROVIDER)
    model: str | None = None
    mode: str | None = None  # a mode a plugin registered (ketch_register_modes)
    profile: str | None = None  # a profile a plugin registered (ketch_register_profiles)
    providers: dict[str, dict[str, Any]] = Field(default_factory=dict)
    plugins: PluginsSettings = Field(default_factory=PluginsSettings)
    loop: LoopSettings = Field(default_factory=LoopSettings)
    # ``[tools.NAME]``: each tool's own table (caps and the like), read by the tool.
    tools: dict[str, Any] = Field(default_factory=dict)

    _typed: dict[type[BaseModel], BaseModel] = PrivateAttr(default_factory=dict)
    _by_name: dict[str, list[type[BaseModel]]] = PrivateAttr(default_factory=dict)

    def of(self, model: type[M]) -> M:
        """A plugin's typed section (its defaults when the section is absent or broken)."""
        found = self._typed.get(model)
        if found is None:
            found = model()
            self._typed[model] = found
        return found  # type: ignore[return-value]

    def section(self, name: str) -> dict[str, Any]:
        """A table (``[NAME]``) as a plain dict: the kernel's keys and every declaring
        plugin's, validated; a table nobody declared, as it was written."""
        if name in type(self).model_fields:
            value = getattr(self, name)
            table = (
                value.model_dump()
                if isinstance(value, BaseModel)
                else dict(value)
                if isinstance(value, dict)
                else {}
            )
        else:
            raw = (self.model_extra or {}).get(name)
            table = dict(raw) if isinstance(raw, dict) else {}
        for model in self._by_name.get(name, []):
            table.update(self.of(model).model_dump())
        return table

    def __getattr__(self, name: str) -> Any:
        # ``settings.permissions`` is the section its plugin declared, typed.
        private = object.__getattribute__(self, "__pydantic_private__") or {}
        models = private.get("_by_name", {}).get(name)
        if models:
            return self.of(models[0])
        return super().__getattr__(name)  # type: ignore[misc]


# Kernel keys a workspace config may set before the workspace is trusted: none of
# them can raise authority, change which code runs, or send data elsewhere. Plugin
# sections add theirs (``SettingsSection.workspace_safe``).
WORKSPACE_SAFE_KEYS: dict[str, Any] = {
    "model": True,
    "mode": True,
    "default_provider": True,
    "loop": True,
    "tools": True,
    "providers": {"*": {"model": True, "context_window": True, "max_output_tokens": True}},
}


def safe_keys(sections: list[SettingsSection]) -> dict[str, Any]:
    """The kernel's safe keys plus every section's."""
    allowed = dict(WORKSPACE_SAFE_KEYS)
    for section in sections:
        rule = section.safe_rule()
        if rule is None:
            continue
        current = allowed.get(section.name)
        if current is True or rule is True:
            allowed[section.name] = True
        else:
            allowed[section.name] = {**(current or {}), **rule}
    return allowed


KeyPath = tuple[str, ...]
# What of a held-back workspace value applies: the value itself, a narrowed copy (some
# entries of a list or table), or None for none of it.
Admit = Callable[[KeyPath, Any], Any]


def hold_back(
    data: dict[str, Any], allowed: Any, path: KeyPath = ()
) -> tuple[dict[str, Any], list[tuple[KeyPath, Any]]]:
    """Split ``data`` into what applies as written and what is held back, as
    ``(path of table names, value)`` pairs at the depth the rules say."""
    if allowed is True:
        return data, []
    kept: dict[str, Any] = {}
    held: list[tuple[KeyPath, Any]] = []
    for key, value in data.items():
        rule = allowed.get(key, allowed.get("*")) if isinstance(allowed, dict) else None
        where = (*path, str(key))
        if rule is True:
            kept[key] = value
        elif rule is not None and isinstance(value, dict):
            sub, sub_held = hold_back(value, rule, where)
            kept[key] = sub
            held.extend(sub_held)
        else:
            held.append((where, value))
    return kept, held


def restrict(
    data: dict[str, Any], allowed: Any, prefix: str = ""
) -> tuple[dict[str, Any], list[str]]:
    """Keep only allowed keys; return the kept data and the dotted names dropped."""
    kept, held = hold_back(data, allowed)
    return kept, [prefix + ".".join(path) for path, _ in held]


def _put(data: dict[str, Any], path: KeyPath, value: Any) -> None:
    target = data
    for key in path[:-1]:
        nested = target.get(key)
        if not isinstance(nested, dict):
            nested = {}
            target[key] = nested
        target = nested
    target[path[-1]] = value


def _admitted(
    data: dict[str, Any], allowed: Any, admit: Admit | bool
) -> tuple[dict[str, Any], list[tuple[KeyPath, Any]], list[str]]:
    """The workspace data to apply, what was held back, and the dotted names of the
    held-back values not (wholly) admitted."""
    if admit is True:
        return data, [], []
    kept, held = hold_back(data, allowed)
    ignored: list[str] = []
    for path, value in held:
        applied = admit(path, value) if callable(admit) else None
        if applied is not None:
            _put(kept, path, applied)
        if applied is None or applied != value:
            ignored.append(".".join(path))
    return kept, held, ignored


_UNTRUSTED_TAIL = "trust them (`ketch trust` shows what they would do)"


class LoadedSettings(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    settings: Settings
    layers: list[Layer]
    notices: list[str]
    # What in the config files could not be used (a subset of ``notices``): a frontend
    # that cannot start says these first, not a guess at what is missing.
    problems: list[str] = Field(default_factory=list)
    # dotted key -> "layer (source)" that set its value last (``ketch config show --origin``)
    origins: dict[str, str] = Field(default_factory=dict)
    # the managed policy's tables as written, and where it is ("" when there is none)
    managed: dict[str, Any] = Field(default_factory=dict)
    managed_source: str = ""
    # what the config asked for that the managed policy forbids: the run stops
    refusals: list[str] = Field(default_factory=list)


# Top-level keys of the managed file the kernel enforces itself (where the provider is
# chosen, and before plugins load): never merged as values.
KERNEL_MANAGED_KEYS = frozenset({"allowed_providers", "allowed_models", "plugins"})


_MISSING = object()


def _flat(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            out.update(_flat(value, name + "."))
        else:
            out[name] = value
    return out


def apply_managed(
    merged: dict[str, Any],
    layer: Layer,
    sections: list[SettingsSection],
    origins: dict[str, str],
) -> list[str]:
    """Narrow ``merged`` by the managed layer; returns refusals. Sections that declare
    ``narrow`` decide what narrower means for their keys; other tables' values are
    enforced as written. A managed file that exists but is broken refuses everything."""
    if layer.error:
        return [f"the managed policy cannot be read ({layer.error}); ketch does not run without it"]
    if not layer.data:
        return []
    where = f"managed ({layer.source})"

    def origin(key: str) -> str:
        return origins.get(key, "defaults (built-in)")

    refusals: list[str] = []
    narrowers: dict[str, list[Any]] = {}
    for section in sections:
        if section.narrow is not None:
            narrowers.setdefault(section.name, []).append(section.narrow)
    for name, table in layer.data.items():
        if name in narrowers and isinstance(table, dict):
            before = _flat(merged)
            for narrow in narrowers[name]:
                for line in narrow(merged, table, origin):
                    refusals.append(f"{line}: forbidden by the managed policy {layer.source}")
            after = _flat(merged)
            for key, value in after.items():
                if before.get(key, _MISSING) != value:
                    origins[key] = where  # narrowed: the managed policy decided this value
            continue
        if name in KERNEL_MANAGED_KEYS:
            continue
        merged.update(deep_merge(merged, {name: table}))
        for key in _flat({name: table}):
            origins[key] = where
    return refusals


def _key_path(data: dict[str, Any], loc: tuple[Any, ...]) -> tuple[str, ...]:
    """The longest run of ``loc`` that names nested keys present in ``data``."""
    path: list[str] = []
    here: Any = data
    for key in loc:
        if not isinstance(here, dict) or not isinstance(key, str) or key not in here:
            break
        path.append(key)
        here = here[key]
    return tuple(path)


def _without(data: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
    out = dict(data)
    if len(path) == 1:
        out.pop(path[0], None)
    else:
        out[path[0]] = _without(out[path[0]], path[1:])
    return out


def _validator(model: type[BaseModel], below: dict[str, Any]) -> Callable[[dict[str, Any]], Any]:
    """Validates a layer's table merged over what the layers below it gave."""
    return lambda data: model.model_validate(deep_merge(below, data))


def _pruned(
    layer: Layer,
    data: dict[str, Any],
    validate: Callable[[dict[str, Any]], Any],
    prefix: tuple[str, ...] = (),
) -> tuple[dict[str, Any] | None, list[str]]:
    """``data`` without each key that fails ``validate`` (a notice for each), or None
    when a problem is no single key's (the caller drops the whole table or layer)."""
    notices: list[str] = []
    for _ in range(100):
        try:
            validate(data)
            return data, notices
        except ValidationError as exc:
            path = _key_path(data, tuple(exc.errors()[0].get("loc", ())))
            if not path:
                return None, [*notices, _problem(layer, exc, prefix)]
            notices.append(_problem(layer, exc, prefix, dropped=prefix + path))
            data = _without(data, path)
    return None, notices


def _problem(
    layer: Layer,
    exc: ValidationError,
    prefix: tuple[str, ...] = (),
    dropped: tuple[str, ...] | None = None,
) -> str:
    first = exc.errors()[0]
    loc = prefix + tuple(str(k) for k in first.get("loc", ()))
    key = ".".join(loc)
    line = line_of_key(layer.source, loc) if layer.name in ("user", "workspace") else None
    where = f"{layer.source}:{line}" if line else layer.source
    what = "file" if layer.name in ("user", "workspace") else "layer"
    got = (
        f" (got {first['input']!r})"
        if "input" in first and not isinstance(first["input"], dict)
        else ""
    )
    if dropped is not None:
        name = ".".join(dropped)
        return f"{where}: {name}: {first.get('msg', 'invalid value')}{got}; ignoring {name}, the rest of this {what} applies"
    if prefix:
        return f"{where}: {key}: {first.get('msg', 'invalid value')}; ignoring [{prefix[0]}] in this {what}"
    return f"{where}: {key}: {first.get('msg', 'invalid value')}; ignoring this {what}"


def load_settings(
    workspace: Path,
    *,
    admit: Admit | bool = False,
    cli: dict[str, Any] | None = None,
    environ: dict[str, str] | None = None,
    user_file: Path | None = None,
    layers: list[Layer] | None = None,
    sections: list[SettingsSection] | None = None,
) -> LoadedSettings:
    """Validate and merge the layers. Never raises for a bad file: it reports and skips it.

    ``admit`` decides the workspace layer's held-back values: a callable answering per
    value (see :data:`Admit`), True for all of them as written, False for none."""
    layers = (
        layers
        if layers is not None
        else read_layers(workspace, cli=cli, environ=environ, user_file=user_file)
    )
    sections = list(sections or [])
    allowed = safe_keys(sections)
    # Tables only plugins validate (a plugin may also extend a kernel table, e.g. [loop]).
    owned = {s.name for s in sections} - set(Settings.model_fields)
    notices: list[str] = []
    problems: list[str] = []
    merged: dict[str, Any] = {}
    origins: dict[str, str] = {}
    managed = next((layer for layer in layers if layer.name == "managed"), None)
    for layer in layers:
        if layer.name == "managed":
            continue
        if layer.error:
            notices.append(layer.error)
            problems.append(layer.error)
            continue
        said = len(notices)
        data = layer.data
        if layer.name == "workspace" and data:
            data, layer.held, layer.ignored = _admitted(data, allowed, admit)
            if layer.ignored:
                notices.append(
                    f"{layer.source}: ignored {', '.join(sorted(layer.ignored))} until you "
                    + _UNTRUSTED_TAIL
                )
        # A plugin's table that does not validate drops that table of this layer only.
        data = dict(data)
        for section in sections:
            table = data.get(section.name)
            if table is None:
                continue
            if not isinstance(table, dict):
                notices.append(
                    f"{layer.source}: [{section.name}] must be a table, not {type(table).__name__}; ignoring it in this layer"
                )
                data.pop(section.name)
                continue
            # A plugin's table is one unit: half a table of rules is not what was written.
            try:
                _validator(section.model, merged.get(section.name) or {})(table)
            except ValidationError as exc:
                notices.append(_problem(layer, exc, (section.name,)))
                data.pop(section.name)
        kernel_part = {k: v for k, v in data.items() if k not in owned}
        base = {k: v for k, v in merged.items() if k not in owned}
        kept, said_here = _pruned(layer, kernel_part, _validator(Settings, base))
        notices.extend(said_here)
        problems.extend(n for n in notices[said:] if not n.endswith(_UNTRUSTED_TAIL))
        if kept is None:
            layer.error = notices[-1]
            continue
        data = {**{k: v for k, v in data.items() if k in owned}, **kept}
        merged = deep_merge(merged, data)
        for key in _flat(data):
            origins[key] = f"{layer.name} ({layer.source})"
    refusals = apply_managed(merged, managed, sections, origins) if managed is not None else []
    try:
        settings = Settings.model_validate(merged)
    except ValidationError as exc:  # a managed value of the wrong type: the policy is broken
        refusals.append(f"the managed policy sets an invalid value ({exc.errors()[0].get('msg')})")
        settings = Settings()
    for section in sections:
        settings._by_name.setdefault(section.name, []).append(section.model)
        try:
            settings._typed[section.model] = section.model.model_validate(
                merged.get(section.name) or {}
            )
        except ValidationError as exc:  # only a managed value can get here
            refusals.append(
                f"the managed policy's [{section.name}] is invalid ({exc.errors()[0].get('msg')})"
            )
            settings._typed[section.model] = section.model()
    return LoadedSettings(
        settings=settings,
        layers=layers,
        notices=notices,
        problems=problems,
        origins=origins,
        managed=dict(managed.data) if managed is not None and not managed.error else {},
        managed_source=managed.source if managed is not None and managed.data else "",
        refusals=refusals,
    )
