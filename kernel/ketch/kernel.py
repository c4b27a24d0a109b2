"""The kernel object: plugins, settings, registries, sessions. It knows no concrete plugin.

Everything is built lazily so that ``ketch --help`` pays only for what it uses:
commands are registered when the parser is built; settings are validated, tools and
providers registered the first time something needs them.
"""

from __future__ import annotations

import argparse
import contextlib
import os
from collections.abc import Callable
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ketch.config import Layer
from ketch.errors import KetchError
from ketch.hooks import Hooks
from ketch.plugins import Candidate, PluginInfo, PluginManager, blocking_from, discover
from ketch.stash import Stash

if TYPE_CHECKING:  # pragma: no cover
    from ketch.commands import Command
    from ketch.events import Event
    from ketch.frontends import Frontend
    from ketch.modes import Mode, Profile
    from ketch.policy import Approver
    from ketch.providers import Provider, ProviderConfig, ProviderKind, Secret
    from ketch.session import Session
    from ketch.settings import LoadedSettings, Settings, SettingsSection, WorkspaceSplit
    from ketch.storage import Store
    from ketch.tools import Tool


class Kernel:
    def __init__(
        self,
        pm: PluginManager,
        *,
        workspace: Path,
        layers: list[Layer] | None = None,
        args: argparse.Namespace | None = None,
        notices: list[str] | None = None,
        environ: dict[str, str] | None = None,
        trusted: bool | None = None,
    ) -> None:
        self.pm = pm
        self.hooks = Hooks(pm)
        self.workspace = workspace
        self.args = args or argparse.Namespace()
        self.notices: list[str] = list(notices or [])
        self.environ = dict(os.environ if environ is None else environ)
        self._layers = layers
        self._trusted = trusted
        self._configured = False
        self.stash = Stash()  # plugins' in-memory state (ketch.stash.StashKey)
        self._notices_said = 0  # how many of ``notices`` sessions were already told
        self._owners: dict[str, dict[str, str]] = {}  # registry kind -> name -> its plugin
        self._secrets: set[Secret] = set()  # every API key ``api_key`` handed out

    # --- building -------------------------------------------------------------------

    @classmethod
    def boot(
        cls,
        *,
        workspace: Path | None = None,
        cli_disabled: list[str] | tuple[str, ...] = (),
        cli_settings: dict[str, Any] | None = None,
        environ: dict[str, str] | None = None,
        plugins: list[tuple[str, Any]] | None = None,
        autoload: bool = True,
        trusted: bool | None = None,
        args: argparse.Namespace | None = None,
    ) -> Kernel:
        """Discover and load plugins, then return a kernel (settings still unvalidated).

        ``plugins`` adds already-imported plugin objects (name, object), as tests do;
        ``autoload=False`` skips entry-point discovery altogether.
        """
        from ketch.config import read_layers

        env = dict(os.environ if environ is None else environ)
        workspace = (workspace or Path.cwd()).resolve()
        layers = read_layers(workspace, cli=cli_settings, environ=env)
        user = next(layer for layer in layers if layer.name == "user")
        managed = next((layer for layer in layers if layer.name == "managed"), None)
        # Only the user's own config chooses plugins: a repository never decides what code runs.
        config_plugins = (
            user.data.get("plugins") if isinstance(user.data.get("plugins"), dict) else {}
        )
        managed_plugins = (
            managed.data.get("plugins")
            if managed is not None and isinstance(managed.data.get("plugins"), dict)
            else {}
        )
        blocking, notices = blocking_from(
            cli_disabled=cli_disabled,
            config_plugins=config_plugins,
            environ=env,
            managed_plugins=managed_plugins,
            managed_source=managed.source if managed is not None else "",
        )
        pm = PluginManager()
        candidates: list[Candidate] = discover(env) if autoload else []
        with pm.loading():
            pm.load(candidates, blocking)
            for name, obj in plugins or []:
                # Passed in explicitly: the allow-list does not apply, a disable still does.
                reason = blocking.disabled.get(name)
                info = PluginInfo(
                    name=name,
                    module=getattr(obj, "__name__", repr(obj)),
                    distribution="(in-process)",
                )
                if reason:
                    info.status, info.disabled_by = "disabled", reason
                    pm.infos[name] = info
                    continue
                pm.add_plugin(obj, info)
        kernel = cls(
            pm,
            workspace=workspace,
            layers=layers,
            args=args,
            notices=notices,
            environ=env,
            trusted=trusted,
        )
        return kernel

    # --- settings --------------------------------------------------------------------

    def _split_workspace(
        self, data: dict[str, Any], sections: list[SettingsSection]
    ) -> WorkspaceSplit | None:
        """What of the workspace's own config applies (``ketch_workspace_config``)."""
        return self.hooks.first(
            "ketch_workspace_config",
            kernel=self,
            data=data,
            sections=sections,
            admit=self._trusted is None,
        )

    @cached_property
    def loaded_settings(self) -> LoadedSettings:
        from ketch.settings import load_settings

        # ``trusted`` (an embedder's or a test's): the whole workspace layer, or none of
        # its held-back values; by default each value is asked for.
        loaded = load_settings(
            self.workspace,
            split_workspace=True if self._trusted else self._split_workspace,
            layers=self._layers,
            sections=list(self.settings_sections.values()),
        )
        if loaded.refusals:
            from ketch.errors import ConfigError

            raise ConfigError("; ".join(loaded.refusals), exit_code=2)
        self.notices.extend(loaded.notices)
        return loaded

    @property
    def settings(self) -> Settings:
        return self.loaded_settings.settings

    def reload_settings(self) -> Settings:
        """Read the config files again (e.g. right after the user trusted some of this
        workspace's settings).

        The command-line layer is kept. Sessions already open keep their profile and mode
        unless the caller applies the new ones.
        """
        from ketch.config import read_layers

        cli = next((layer.data for layer in self._layers or [] if layer.name == "cli"), {})
        self._layers = read_layers(self.workspace, cli=cli, environ=self.environ)
        self.__dict__.pop("loaded_settings", None)
        return self.settings

    @property
    def layers(self) -> tuple[Layer, ...]:
        """The configuration layers, lowest precedence first (read-only)."""
        return tuple(self._layers or ())

    def set_command_line_settings(self, data: dict[str, Any]) -> None:
        """Replace the command line's layer (a frontend that parses its own options,
        an editor's session settings); settings are validated again on next use."""
        for layer in self._layers or []:
            if layer.name == "cli":
                layer.data = data
        self.__dict__.pop("loaded_settings", None)

    # --- registries ------------------------------------------------------------------

    def _collect(
        self,
        hook: str,
        kind: str,
        key: Callable[[Any], str],
        convert: Callable[[Any], Any] | None = None,
    ) -> dict[str, Any]:
        """Run a registration hook (every plugin's ``register`` calls, staged per plugin).

        A plugin whose registration raises is failed and removed, and nothing it
        registered, in this registry or any other, is kept. A name registered twice
        keeps the plugin that loaded first, and the clash is reported on both plugins
        and as a notice. What a plugin answers for others is not called for
        (``ketch_cached_registrations``).
        """
        from ketch.hooks import registering_plugin

        staged: dict[str, list[Any]] = {}

        def register(obj: Any) -> None:
            staged.setdefault(registering_plugin(), []).append(convert(obj) if convert else obj)

        impls = self.pm.in_load_order(getattr(self.pm.hook, hook).get_hookimpls())
        calling = [i.plugin_name for i in impls]
        answer = self.hooks.first(
            "ketch_cached_registrations", kernel=self, hook=hook, plugins=calling
        )
        standing = {p: list(v) for p, v in (answer or {}).items() if p in calling}
        order, failures = self.hooks.register(
            hook, withheld=frozenset(standing), register=register, kernel=self
        )
        for plugin, error in failures.items():
            self.fail_plugin(plugin, f"{hook} raised: {type(error).__name__}: {error}")
        staged.update(standing)
        called = set(order) | set(standing)
        impls = getattr(self.pm.hook, hook).get_hookimpls()
        table: dict[str, Any] = {}
        owners = self._owners.setdefault(kind, {})
        owners.clear()
        for plugin in (i.plugin_name for i in self.pm.in_load_order(impls)):
            if plugin not in called:
                continue
            info = self.pm.infos.get(plugin)
            if plugin in failures or (info is not None and info.status != "ok"):
                continue
            for obj in staged.get(plugin, []):
                if hasattr(obj, "plugin"):
                    with contextlib.suppress(AttributeError, TypeError, ValueError):
                        object.__setattr__(obj, "plugin", plugin)
                name = key(obj)
                if name in table:
                    self.report_clash(kind, name, plugin, owners[name])
                    continue
                table[name] = obj
                owners[name] = plugin
                if info is not None and kind in _SHOWN_KINDS:
                    info.provides.setdefault(kind + "s", []).append(name)
        return table

    def fail_plugin(self, plugin: str, error: str) -> None:
        """Fail a plugin and withdraw everything it registered, from every registry
        built so far (its tools are no longer offered, its commands no longer run)."""
        self.pm.fail(plugin, error)
        for kind, owners in self._owners.items():
            table = self.__dict__.get(_REGISTRIES[kind])
            for name in [n for n, owner in owners.items() if owner == plugin]:
                del owners[name]
                if isinstance(table, dict):
                    table.pop(name, None)
        info = self.pm.infos.get(plugin)
        if info is not None:
            info.provides.clear()

    def report_clash(self, kind: str, name: str, loser: str, winner: str) -> None:
        """Report that ``loser`` registered a ``kind`` named ``name`` that ``winner``
        (loaded first) keeps: as a notice and a warning on both plugins."""
        message = f"{kind} '{name}' from plugin '{loser}' clashes with plugin '{winner}'; keeping '{winner}' (loaded first)"
        if message not in self.notices:
            self.notices.append(message)
        for who in (loser, winner):
            info = self.pm.infos.get(who)
            if info is not None and message not in info.warnings:
                info.warnings.append(message)

    @cached_property
    def settings_sections(self) -> dict[str, SettingsSection]:
        """Every config table a plugin declared, keyed ``NAME@plugin``."""
        return self._collect(
            "ketch_register_settings", "settings section", lambda s: f"{s.name}@{s.plugin or id(s)}"
        )

    @cached_property
    def modes(self) -> dict[str, Mode]:
        return self._collect("ketch_register_modes", "mode", lambda m: m.name)

    @cached_property
    def profiles(self) -> dict[str, Profile]:
        return self._collect("ketch_register_profiles", "profile", lambda p: p.name)

    def default_mode(self) -> str:
        """The mode new sessions start in: config/CLI's, else the one declared default."""
        return next((m.name for m in self.modes.values() if m.default), next(iter(self.modes), ""))

    def default_profile(self) -> str:
        return next(
            (p.name for p in self.profiles.values() if p.default), next(iter(self.profiles), "")
        )

    def check_mode(self, name: str | None, where: str = "mode") -> str:
        """A registered mode's name (the default for None), or a usage error naming the known ones."""
        if not name:
            return self.default_mode()
        if name not in self.modes:
            known = ", ".join(self.modes) or "none (no plugin declares modes)"
            raise KetchError(f"unknown {where} '{name}'; known modes: {known}", exit_code=2)
        return name

    def check_profile(self, name: str | None, where: str = "profile") -> str:
        if not name:
            return self.default_profile()
        if name not in self.profiles:
            known = ", ".join(self.profiles) or "none (no policy plugin is loaded)"
            raise KetchError(f"unknown {where} '{name}'; known profiles: {known}", exit_code=2)
        return name

    def read_only_mode(self, name: str) -> bool:
        mode = self.modes.get(name)
        return bool(mode and mode.read_only)

    @cached_property
    def commands(self) -> dict[str, Command]:
        return self._collect("ketch_register_commands", "command", lambda c: c.key)

    def reload_commands(self) -> dict[str, Command]:
        """Collect the commands again: plugins whose commands come from files (Markdown
        commands, skills) then see the ones added or changed since (a frontend calls
        this between turns)."""
        self.__dict__.pop("commands", None)
        for info in self.pm.infos.values():
            info.provides.pop("commands", None)
        return self.commands

    @cached_property
    def frontends(self) -> dict[str, Frontend]:
        return self._collect("ketch_register_frontends", "frontend", lambda f: f.name)

    @cached_property
    def provider_kinds(self) -> dict[str, ProviderKind]:
        return self._collect("ketch_register_providers", "provider", lambda p: p.kind)

    @cached_property
    def tools(self) -> dict[str, Tool]:
        """Every registered tool (a plugin may answer for others from a cache:
        ``ketch_cached_registrations``)."""
        from ketch.tools import as_tool

        return self._collect(
            "ketch_register_tools", "tool", lambda t: t.name, lambda obj: as_tool(obj, self.hooks)
        )

    @cached_property
    def events(self) -> dict[str, type[Event]]:
        """Every event model by its ``type``: the kernel's and those plugins register."""
        from ketch.events import CORE_EVENTS, event_type

        found = {event_type(model): model for model in CORE_EVENTS}
        registered = self._collect("ketch_register_events", "event", event_type)
        return {**registered, **found}

    def configure(self) -> None:
        """Fill every registry and tell plugins the kernel is ready (once)."""
        if self._configured:
            return
        self._configured = True
        _ = self.settings, self.tools, self.provider_kinds, self.commands
        self.hooks.call("ketch_configure", kernel=self)

    # --- providers ----------------------------------------------------------------------

    def provider_config(
        self, name: str | None = None, model: str | None = None
    ) -> tuple[ProviderConfig, ProviderKind]:
        """The configuration and kind of the provider to build (``ketch_resolve_provider``;
        ``name``/``model`` as asked, None for the configured choice), held to the managed
        policy's allow-lists whichever plugin answered."""
        found = self.hooks.first("ketch_resolve_provider", kernel=self, provider=name, model=model)
        if found is None:
            raise KetchError(
                "no plugin resolves the model provider (ketch_resolve_provider); check `ketch plugins`",
                exit_code=2,
            )
        config, kind = found
        self.check_managed_provider(config.name, kind.kind, str(config.model))
        return config, kind

    def check_managed_provider(self, name: str, kind: str, model: str) -> None:
        """The managed policy's ``allowed_providers`` (names or kinds) and ``allowed_models``
        (globs): whatever chose them (config, environment, detection, a resumed session)."""
        from fnmatch import fnmatchcase

        loaded = self.loaded_settings
        managed, source = loaded.managed, loaded.managed_source
        providers = managed.get("allowed_providers")
        if isinstance(providers, list) and name not in providers and kind not in providers:
            raise KetchError(
                f"provider '{name}' is not allowed by the managed policy {source} "
                f"(allowed: {', '.join(map(str, providers)) or 'none'})",
                exit_code=2,
            )
        models = managed.get("allowed_models")
        if isinstance(models, list) and not any(fnmatchcase(model, str(p)) for p in models):
            raise KetchError(
                f"model '{model}' is not allowed by the managed policy {source} "
                f"(allowed: {', '.join(map(str, models)) or 'none'})",
                exit_code=2,
            )

    def api_key(self, config: ProviderConfig, kind: ProviderKind) -> Any:
        """The key from the environment (``api_key_env`` or the kind's variable), then the keyring."""
        from ketch.providers import Secret

        for var in (config.api_key_env, kind.env_key):
            if var and self.environ.get(var):
                return self._known(Secret(self.environ[var]))
        value = self.hooks.first(
            "ketch_get_credential", provider=config.name, kind=config.kind, kernel=self
        )
        return self._known(Secret(value)) if value else None

    def _known(self, secret: Secret) -> Secret:
        self._secrets.add(secret)
        return secret

    def known_secrets(self) -> tuple[Secret, ...]:
        """The API keys this kernel resolved so far (environment or keyring), so output
        filters can keep them out of what the model, the journal and the screen see."""
        return tuple(self._secrets)

    def build_provider(self, name: str | None = None, model: str | None = None) -> Provider:
        config, kind = self.provider_config(name, model)
        return kind.create(config, self.api_key(config, kind))  # type: ignore[no-any-return]

    # --- storage ----------------------------------------------------------------------------

    @property
    def store(self) -> Store | None:
        """The session store (``ketch_session_store``: opened on first use), or None when no
        plugin keeps one. A store that cannot be opened raises
        :class:`ketch.storage.StoreUnavailable` here, at every use."""
        found = self.hooks.first("ketch_session_store", kernel=self)
        if isinstance(found, KetchError):  # a failing keeper's StoreUnavailable (fail closed)
            raise found.with_traceback(None)
        return found  # type: ignore[no-any-return]

    # --- sessions ----------------------------------------------------------------------------

    def new_session(
        self,
        *,
        provider: Provider | None = None,
        provider_name: str | None = None,
        model: str | None = None,
        listeners: list[Callable[[Event], None]] | None = None,
    ) -> Session:
        from ketch.session import Session

        self.configure()
        settings = self.settings
        provider = provider or self.build_provider(provider_name, model)
        session = Session(
            kernel=self,
            provider=provider,
            workspace=self.workspace,
            mode=self.check_mode(settings.mode),
            profile=self.check_profile(settings.profile),
            listeners=list(listeners or []),
        )
        self.start(session)
        return session

    def resume_session(
        self,
        session_id: str | None = None,
        *,
        provider: Provider | None = None,
        provider_name: str | None = None,
        model: str | None = None,
        listeners: list[Callable[[Event], None]] | None = None,
    ) -> Session:
        """Restore knowledge, reset authority: the default profile, no approvals survive."""
        from ketch.loop import close_pending_calls
        from ketch.session import Session

        self.configure()
        record = self.hooks.first("ketch_resume_record", kernel=self, session_id=session_id)
        if isinstance(record, KetchError):
            raise record
        if record is None:
            raise KetchError(
                "cannot resume: no session store is loaded (is the 'store' plugin disabled?)"
            )
        provider = provider or self.build_provider(
            provider_name or record.provider or None,
            model or (None if self.settings.model else record.model) or None,
        )
        session = Session(
            kernel=self,
            provider=provider,
            workspace=self.workspace,
            id=record.id,
            name=record.name,
            mode=record.mode if record.mode in self.modes else self.default_mode(),
            # Authority is never restored: the default profile, unless the user passes
            # --profile on this very command line.
            profile=self.check_profile(getattr(self.args, "profile", None)),
            transcript=record.transcript,
            active=record.active if record.active is not None else record.transcript,
            usage=record.usage,
            state=dict(record.state),
            resumed=True,
            listeners=list(listeners or []),
        )
        close_pending_calls(session)
        self.start(session)
        return session

    def start(self, session: Session) -> None:
        from ketch.events import NoticeEvent, SessionEvent

        self.emit(
            session,
            SessionEvent(
                session_id=session.id,
                model=session.model,
                mode=session.mode,
                profile=session.profile,
                provider=session.provider.name,
                resumed=session.resumed,
            ),
        )
        # Each notice is said once per process: a second session (/clear, /resume, a
        # subagent) does not repeat what the person was already told.
        for notice in self.notices[self._notices_said :]:
            self.emit(session, NoticeEvent(level="warning", message=notice))
        self._notices_said = len(self.notices)
        self.hooks.call("ketch_session_start", session=session)

    def end(self, session: Session, reason: str = "exit") -> None:
        self.hooks.call("ketch_session_end", session=session, reason=reason)

    def emit(self, session: Session, event: Event) -> None:
        """Deliver one event to observer plugins (storage first in line), then listeners.

        The listeners (frontends) get the event even when an observer stops with a
        ``KetchError`` (a store that cannot write), which then propagates: the turn
        ends with an error the frontend sees. An agent session's events are stamped
        with its ``agent_id`` first."""
        if session.agent_id is not None and event.agent_id is None:
            event = event.model_copy(update={"agent_id": session.agent_id})
        try:
            self.hooks.call("ketch_event", session=session, event=event)
        finally:
            for listener in list(session.listeners):
                listener(event)

    async def run_turn(
        self,
        session: Session,
        prompt: str,
        *,
        approver: Approver | None = None,
        parts: tuple[Any, ...] = (),
        allowed_tools: frozenset[str] | None = None,
    ) -> Any:
        """Run one turn. ``parts`` go with the prompt (attachments); ``allowed_tools``
        narrows the tools this turn offers and may run (never widens them)."""
        from ketch.loop import run_turn

        return await run_turn(
            session, prompt, approver=approver, parts=parts, allowed_tools=allowed_tools
        )


# Registries whose entries ``ketch plugins`` lists as what a plugin provides.
_SHOWN_KINDS = frozenset({"tool", "provider", "command", "frontend", "mode", "profile", "event"})
# Every registry (a cached property filled by a ``@registers`` hook), by kind.
_REGISTRIES = {
    "settings section": "settings_sections",
    "mode": "modes",
    "profile": "profiles",
    "command": "commands",
    "frontend": "frontends",
    "provider": "provider_kinds",
    "tool": "tools",
    "event": "events",
}
