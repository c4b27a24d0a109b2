"""Choosing a provider when nothing names one: the environment, then a local server."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ketch.api import ConfigError, Kernel, NoProviderConfigured


def default_provider(kernel: Kernel) -> str:
    """A provider's name, or the error that says what to do (raised)."""
    name = from_environment(kernel) or detect_local(kernel)
    if name:
        return name
    from ketch_provider_setup.help import config_problems, first_run_help

    if kernel.loaded_settings.problems:
        # Not "nothing is configured": the config that would say it could not be used.
        raise ConfigError(config_problems(kernel.loaded_settings.problems))
    raise NoProviderConfigured(first_run_help(kernel.provider_kinds))


def from_environment(kernel: Kernel) -> str | None:
    """Nothing configured, but a kind's usual key variable is set: use that kind."""
    for kind in kernel.provider_kinds.values():
        if kind.needs_key and kind.env_key and kernel.environ.get(kind.env_key):
            kernel.notices.append(
                f"no provider configured; using {kind.kind} because {kind.env_key} is set"
            )
            return kind.kind
    return None


def detect_local(kernel: Kernel) -> str | None:
    """A local server a kind's ``detect`` finds, added as ``[providers.NAME]``."""
    for kind in kernel.provider_kinds.values():
        if kind.detect is None:
            continue
        try:
            found = call_maybe_async(kind.detect)
        except Exception:  # noqa: BLE001 - detection is best effort
            found = None
        if found is not None:
            kernel.settings.providers.setdefault(found.name, found.model_dump(exclude_none=True))
            kernel.notices.append(
                f"no provider configured; using {found.kind} found at {found.base_url}"
            )
            return str(found.name)
    return None


def call_maybe_async(fn: Callable[[], Any]) -> Any:
    """Call ``fn``; if it is a coroutine function, run it to completion, also when an
    event loop is already running in this thread (the interactive shell): then in a
    worker thread with its own loop, never ``asyncio.run`` inside the running one."""
    import asyncio
    import inspect

    if not inspect.iscoroutinefunction(fn):
        return fn()
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(fn())
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(lambda: asyncio.run(fn())).result()
