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
does not trust: what of it applies is a plugin's answer (the kernel asks the
``ketch_workspace_config`` hook: keys that cannot raise authority as written, the rest
as far as the person trusted it); what is held back is ignored with a notice, and with
no answer none of the file applies. A layer that is corrupt is reported with its path
and line and dropped, never fatal.
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
    for all, a set of key names, or a nested dict of key names (``"*"`` for any) whose
    values are ``True`` or such a dict (read by whoever answers ``ketch_workspace_config``).
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


KeyPath = tuple[str, ...]
# What of a workspace's own config applies (``ketch_workspace_config``): the data that
# applies, the values held back as ``(path of table names, value)`` pairs, and the dotted
# names of the held-back values that do not (wholly) apply.
WorkspaceSplit = tuple[dict[str, Any], list[tuple[KeyPath, Any]], list[str]]
SplitWorkspace = Callable[[dict[str, Any], list[SettingsSection]], WorkspaceSplit | None]


def held_whole(data: dict[str, Any]) -> WorkspaceSplit:
    """Nothing of the workspace's config applies (nobody decided what may): fail closed."""
    return {}, [((str(key),), value) for key, value in data.items()], sorted(map(str, data))


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
    split_workspace: SplitWorkspace | bool = False,
    cli: dict[str, Any] | None = None,
    environ: dict[str, str] | None = None,
    user_file: Path | None = None,
    layers: list[Layer] | None = None,
    sections: list[SettingsSection] | None = None,
) -> LoadedSettings:
    """Validate and merge the layers. Never raises for a bad file: it reports and skips it.

    ``split_workspace`` decides what of the workspace layer applies: a callable (see
    :data:`SplitWorkspace`; no answer: none of it), True for all of it as written,
    False for none of it."""
    layers = (
        layers
        if layers is not None
        else read_layers(workspace, cli=cli, environ=environ, user_file=user_file)
    )
    sections = list(sections or [])
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
        if layer.name == "workspace" and data and split_workspace is not True:
            split = split_workspace(data, sections) if callable(split_workspace) else None
            if not (isinstance(split, tuple) and len(split) == 3 and isinstance(split[0], dict)):
                split = None  # no answer, a failed or a malformed one: none of it applies
            data, layer.held, layer.ignored = split or held_whole(data)
            if split is None and callable(split_workspace):
                notices.append(
                    f"{layer.source}: ignoring this file: no plugin decides what a workspace's config may set (`ketch plugins` lists what loaded)"
                )
            elif layer.ignored:
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
