"""A kernel with a scripted provider in a temporary workspace, for tests."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ketch.events import Event, TurnEndEvent
from ketch.kernel import Kernel
from ketch.markers import hookimpl
from ketch.plugins import PluginInfo
from ketch.policy import ApprovalAnswer, ApprovalRequest, Approver
from ketch.providers import ProviderKind
from ketch.session import Session
from ketch.testing.scripted import ScriptedProvider


def isolated_env(root: Path, **extra: str) -> dict[str, str]:
    """Environment variables that keep ketch's config/state/cache under ``root``
    and load only the plugins bundled with ketch (nothing else installed here).

    An allow-list already in the environment (``KETCH_PLUGINS``) is kept: it selects the
    build under test, as ``tox -e minimal`` does."""
    env = {
        "KETCH_CONFIG_DIR": str(root / "config"),
        "KETCH_STATE_DIR": str(root / "state"),
        "KETCH_CACHE_DIR": str(root / "cache"),
        "XDG_CONFIG_HOME": str(root / "xdg-config"),
        "XDG_STATE_HOME": str(root / "xdg-state"),
        "XDG_CACHE_HOME": str(root / "xdg-cache"),
        "XDG_DATA_HOME": str(root / "xdg-data"),
        "KETCH_AUTOLOAD": "bundled",
    }
    if os.environ.get("KETCH_PLUGINS"):
        env["KETCH_PLUGINS"] = os.environ["KETCH_PLUGINS"]
    env.update(extra)
    return env


# The environment as it was before the outermost patch, and how many patches are open:
# two harnesses' turns may run concurrently (``asyncio.gather``), and their patches then
# interleave, so only the last one to close restores (a nested save would restore the
# other harness's values and leak them into every later test).
_OUTER: dict[str, str | None] = {}
_OPEN = [0]


@contextmanager
def patched_environ(values: dict[str, str]) -> Iterator[None]:
    for key in values:
        _OUTER.setdefault(key, os.environ.get(key))
    _OPEN[0] += 1
    os.environ.update(values)
    try:
        yield
    finally:
        _OPEN[0] -= 1
        if _OPEN[0] == 0:
            for key, value in _OUTER.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
            _OUTER.clear()


async def _approve(request: ApprovalRequest) -> ApprovalAnswer:
    return ApprovalAnswer(approved=True)


async def _deny(request: ApprovalRequest) -> ApprovalAnswer:
    return ApprovalAnswer(approved=False)


approve_all: Approver = _approve
deny_all: Approver = _deny


class _ScriptedPlugin:
    def __init__(self, kind: ProviderKind) -> None:
        self.kind = kind

    @hookimpl
    def ketch_register_providers(self, register: Any) -> None:
        register(self.kind)


class Harness:
    """A booted kernel, one session, a scripted provider and every event seen."""

    def __init__(self, kernel: Kernel, provider: ScriptedProvider, workspace: Path) -> None:
        self.kernel = kernel
        self.provider = provider
        self.workspace = workspace
        self.events: list[Event] = []
        self._session: Session | None = None

    @classmethod
    def create(
        cls,
        root: Path,
        *,
        script: list[dict[str, Any]] | None = None,
        plugins: list[tuple[str, Any]] | None = None,
        bundled: bool | list[str] = True,
        config: str | None = None,
        workspace_config: str | None = None,
        settings: dict[str, Any] | None = None,
        env: dict[str, str] | None = None,
        trusted: bool | None = None,
        context_window: int | None = None,
        provider_name: str | None = None,
    ) -> Harness:
        """Boot a kernel under ``root``: workspace ``root/ws``, config/state in ``root``.

        ``bundled``: True loads every bundled plugin, False none, a list only those
        (the essential set always loads). ``config`` is the user config.toml text.
        ``provider_name``: build the session's provider from configuration by this name
        (a provider plugin under test) instead of handing it the scripted provider,
        which stays available as the provider kind ``scripted``.
        """
        root = Path(root)
        workspace = root / "ws"
        workspace.mkdir(parents=True, exist_ok=True)
        environ = {**os.environ, **isolated_env(root), **(env or {})}
        if isinstance(bundled, list):
            environ["KETCH_PLUGINS"] = ",".join(bundled)
        config_dir = Path(environ["KETCH_CONFIG_DIR"])
        config_dir.mkdir(parents=True, exist_ok=True)
        if config is not None:
            (config_dir / "config.toml").write_text(config, encoding="utf-8")
        if workspace_config is not None:
            (workspace / ".ketch").mkdir(exist_ok=True)
            (workspace / ".ketch" / "config.toml").write_text(workspace_config, encoding="utf-8")
        provider = ScriptedProvider(script)
        if context_window:
            provider.config.context_window = context_window
        kind = ProviderKind(
            kind="scripted",
            create=lambda cfg, key: provider,
            needs_key=False,
            default_model="scripted-model",
        )
        with patched_environ(
            {k: v for k, v in environ.items() if k.startswith(("KETCH_", "XDG_"))}
        ):
            kernel = Kernel.boot(
                workspace=workspace,
                environ=environ,
                autoload=bundled is not False,
                plugins=[("scripted", _ScriptedPlugin(kind)), *(plugins or [])],
                cli_settings={"provider": provider_name or "scripted", **(settings or {})},
                trusted=trusted,
            )
        if not kernel.modes and not kernel.profiles:
            # No policy plugin in this test: give it the usual words (plan, build,
            # manual, full-access) so settings and sessions can name them.
            from ketch.testing.vocabulary import TestVocabulary

            kernel.pm.add_plugin(
                TestVocabulary(),
                PluginInfo(name="vocabulary", module=__name__, distribution="(in-process)"),
            )
            for cached in ("modes", "profiles"):
                kernel.__dict__.pop(cached, None)
        harness = cls(kernel, provider, workspace)
        harness.environ = environ
        harness.provider_name = provider_name
        return harness

    environ: dict[str, str] = {}
    provider_name: str | None = None

    @property
    def session(self) -> Session:
        if self._session is None:
            with patched_environ(
                {k: v for k, v in self.environ.items() if k.startswith(("KETCH_", "XDG_"))}
            ):
                if self.provider_name:
                    self._session = self.kernel.new_session(
                        provider_name=self.provider_name, listeners=[self.events.append]
                    )
                else:
                    self._session = self.kernel.new_session(
                        provider=self.provider, listeners=[self.events.append]
                    )
        return self._session

    def resume(self, session_id: str | None = None) -> Session:
        with patched_environ(
            {k: v for k, v in self.environ.items() if k.startswith(("KETCH_", "XDG_"))}
        ):
            if self.provider_name:
                self._session = self.kernel.resume_session(
                    session_id, provider_name=self.provider_name, listeners=[self.events.append]
                )
            else:
                self._session = self.kernel.resume_session(
                    session_id, provider=self.provider, listeners=[self.events.append]
                )
        return self._session

    async def turn(self, prompt: str, *, approver: Approver | None = None) -> TurnEndEvent:
        with patched_environ(
            {k: v for k, v in self.environ.items() if k.startswith(("KETCH_", "XDG_"))}
        ):
            return await self.kernel.run_turn(self.session, prompt, approver=approver)

    def run(self, prompt: str, *, approver: Approver | None = None) -> TurnEndEvent:
        return asyncio.run(self.turn(prompt, approver=approver))

    def of_type(self, kind: str) -> list[Any]:
        return [e for e in self.events if e.type == kind]

    def types(self) -> list[str]:
        return [e.type for e in self.events]
