"""First run: no provider is configured, so the shell offers a short setup instead of
exiting.

1. A local server that answers (each provider kind's ``detect``: Ollama, LM Studio) is
   offered first; then every loaded provider kind, in its own words; then any
   OpenAI-compatible server at a URL.
2. A kind that needs a key: the key in the environment is used when it is set; else the
   person pastes one (not echoed), stored in the OS keyring (the keyring plugin's store),
   or, where there is none, used for this run only with a line on how to keep it.
   The key never reaches a file.
3. The model is picked from the provider's own list (or typed when it cannot list).
4. ``default_provider`` and ``[providers.NAME]`` go into the user's ``config.toml``
   (created, or added to without touching what is there), and the session starts.
"""

from __future__ import annotations

import asyncio
import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prompt_toolkit.formatted_text import FormattedText

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Kernel, ProviderConfig, ProviderKind
    from ketch_interactive.shell import Shell

MAX_MODELS = 30


class SetupCancelled(Exception):
    """The person chose not to set up now."""


@dataclass
class Choice:
    name: str  # the [providers.NAME] table
    kind: ProviderKind
    base_url: str | None
    model: str | None = None
    found: bool = False  # a running local server
    any_url: bool = False  # the person gives the base URL (an API many servers speak)


async def _detect(kind: ProviderKind) -> ProviderConfig | None:
    try:
        result = kind.detect()
        if asyncio.iscoroutine(result):
            result = await asyncio.wait_for(result, 5)
        return result  # type: ignore[no-any-return]
    except Exception:  # noqa: BLE001 - detection is best effort
        return None


async def first_run_setup(shell: Shell) -> bool:
    """Walk the person through configuring a provider. True: config written."""
    from ketch_interactive.approval import Interrupted

    try:
        return await _setup(shell)
    except (SetupCancelled, Interrupted, EOFError):
        return False


async def _setup(shell: Shell) -> bool:
    from ketch_interactive.approval import choose

    kernel, say = shell.kernel, shell.renderer
    kinds = kernel.provider_kinds
    if not kinds:
        say.line(
            "ketch: no provider plugin is loaded, so there is nothing to set up (see `ketch plugins`)",
            "bold red",
        )
        return False
    detected = await asyncio.gather(*(_detect(k) for k in kinds.values() if k.detect is not None))
    found = [c for c in detected if c is not None]
    options: list[tuple[Any, str, str]] = []
    for config in found:
        kind = kinds[config.kind]
        label = f"Use the {kind.local_hint or config.kind} running at {config.base_url}" + (
            f" (model {config.model})" if config.model else ""
        )
        options.append(
            (Choice(config.name, kind, config.base_url, config.model, found=True), label, "")
        )
    keyed = [
        k for k in kinds.values() if k.needs_key and k.env_key and kernel.environ.get(k.env_key)
    ]
    shown: dict[str, dict[str, str]] = {}  # the provider plugins' own words for their kinds
    for answer in kernel.hooks.values("frontend_setup_choices"):
        shown.update(answer)
    for kind in sorted(kinds.values(), key=lambda k: k not in keyed):
        label = _label(kind, kernel.environ, shown.get(kind.kind, {}).get("label"))
        options.append((Choice(kind.kind, kind, None), label, ""))
    for name, words in sorted(shown.items()):
        if name in kinds and words.get("any_url"):
            choice = Choice(words.get("any_url_name") or name, kinds[name], None, any_url=True)
            options.append((choice, words["any_url"], ""))
    options.append((None, "Not now: quit, and configure it by hand", "q"))
    if keyed and not found:
        say.line(
            f"${keyed[0].env_key} is set, but no model is chosen yet. Pick one (it takes a minute).",
            "bold",
        )
    else:
        say.line(
            "No model provider is configured yet. Let's set one up (it takes a minute).", "bold"
        )
    message = FormattedText([("class:title", "Which provider?\n")])
    picked: Choice | None = await choose(message, options, cancel=None, default=options[0][0])
    if picked is None:
        raise SetupCancelled
    if picked.any_url:
        picked.base_url = (
            await _ask(shell, "  Base URL of the server (e.g. http://localhost:8000/v1): ")
        ).strip() or None
        if not picked.base_url:
            raise SetupCancelled
    elif picked.base_url is None:
        picked.base_url = (
            picked.kind.env_base_url and kernel.environ.get(picked.kind.env_base_url)
        ) or picked.kind.default_base_url
    key = await _key(shell, picked)
    model = picked.model or await _model(shell, picked, key)
    path = write_provider_config(picked.name, picked.kind.kind, picked.base_url, model)
    say.line(
        f"✓ wrote [providers.{picked.name}] (model {model}) to {path}; the next prompt goes there",
        "green",
    )
    kernel.reload_settings()
    return True


def _label(kind: ProviderKind, environ: dict[str, str], own: str | None = None) -> str:
    """A provider kind in its own words (``own``, from ``frontend_setup_choices``: the
    OpenAI kind says it is OpenAI's own API, as its "any OpenAI-compatible server"
    choice covers the others), else its description."""
    label = own or f"{kind.kind}: {kind.description or kind.kind}"
    if kind.needs_key and kind.env_key and environ.get(kind.env_key):
        label += f" · key in ${kind.env_key}"
    return label


def _hidden() -> Any:
    """An input processor that shows nothing of what is typed (not even its length)."""
    from prompt_toolkit.layout.processors import Processor, Transformation

    class Hidden(Processor):
        def apply_transformation(self, transformation_input: Any) -> Transformation:
            return Transformation([], source_to_display=lambda i: 0, display_to_source=lambda i: 0)

    return Hidden()


async def _ask(shell: Shell, message: str, *, secret: bool = False) -> str:
    from prompt_toolkit import PromptSession
    from prompt_toolkit.history import InMemoryHistory

    from ketch_interactive.approval import Interrupted

    reader: PromptSession[str] = PromptSession(
        history=InMemoryHistory(),
        interrupt_exception=Interrupted,
        input_processors=[_hidden()] if secret else None,
    )
    return await reader.prompt_async(message, handle_sigint=False, set_exception_handler=False)


async def _key(shell: Shell, picked: Choice) -> Any:
    """The key for this provider (a Secret), or None when the kind needs none."""
    from ketch.api import Secret

    kernel, say = shell.kernel, shell.renderer
    kind = picked.kind
    if not kind.needs_key or picked.found:
        return None
    if kind.env_key and kernel.environ.get(kind.env_key):
        say.line(f"· using the key in ${kind.env_key}", "dim")
        return Secret(kernel.environ[kind.env_key])
    stored = kernel.hooks.first(
        "ketch_get_credential", provider=picked.name, kind=kind.kind, kernel=kernel
    )
    if stored:
        say.line(f"· using the key stored in the OS keyring for {picked.name}", "dim")
        return Secret(stored)
    env_hint = (
        f"export {kind.env_key}=..."
        if kind.env_key
        else f"set api_key_env in [providers.{picked.name}]"
    )
    typed = (
        await _ask(
            shell,
            f"  API key for {picked.name} (nothing is shown as you type or paste; Enter alone: "
            "I will use the environment instead): ",
            secret=True,
        )
    ).strip()
    if not typed:
        say.line(f"· then {env_hint} before starting ketch (the server may also need none)", "dim")
        return None
    where = store_key(kernel, picked.name, typed, picked.kind.kind)
    if where:
        say.line(
            f"· the key is stored in {where} (never in a file); `ketch auth delete {picked.name}` removes it",
            "dim",
        )
    elif kind.env_key:
        kernel.environ[kind.env_key] = typed  # this run only, in memory
        say.line(
            f"! no OS keyring here to keep the key in, so it is used for this run only. To keep it, "
            f"{env_hint} in your shell profile (ketch never writes keys to files)",
            "yellow",
        )
    return Secret(typed)


def store_key(kernel: Kernel, provider: str, key: str, kind: str = "") -> str | None:
    """Keep the key in a secret store (``credentials_set``: the keyring plugin);
    where it went, or None (no store could keep it)."""
    from ketch_frontend_kit.credentials import keep

    return keep(kernel, provider, key, kind)


async def _model(shell: Shell, picked: Choice, key: Any) -> str:
    from ketch.api import ProviderConfig
    from ketch_interactive.approval import choose

    say = shell.renderer
    config = ProviderConfig(
        name=picked.name,
        kind=picked.kind.kind,
        base_url=picked.base_url,
        model=picked.kind.default_model or "-",
    )
    models: list[str] = []
    try:
        provider = picked.kind.create(config, key)
        try:
            models = [m.id for m in await asyncio.wait_for(provider.list_models(), 20)]
        finally:
            await provider.aclose()
    except Exception as exc:  # noqa: BLE001 - a provider that cannot list still works with a typed name
        say.line(
            f"! could not list the models at {picked.base_url}: {getattr(exc, 'message', None) or exc}",
            "yellow",
        )
    if models:
        options = [(m, m, "") for m in sorted(models)[:MAX_MODELS]] + [
            ("", "Another model (type its name)", "")
        ]
        chosen = await choose(
            FormattedText(
                [("class:title", f"Which model? ({len(models)} at {picked.base_url})\n")]
            ),
            options,
            cancel=None,
        )
        if chosen is None:
            raise SetupCancelled
        if chosen:
            return str(chosen)
    typed = (await _ask(shell, "  Model name: ")).strip() or (picked.kind.default_model or "")
    if not typed:
        raise SetupCancelled
    return typed


def _toml_string(value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'


def write_provider_config(
    name: str, kind: str, base_url: str | None, model: str, path: Path | None = None
) -> Path:
    """Add ``default_provider`` and ``[providers.NAME]`` to the user's config.toml.

    What is there is kept byte for byte: the top-level key goes before the first table,
    the new table at the end. The result must parse and say what was meant before it
    replaces the file (written beside it, then renamed)."""
    from ketch.api import KetchError, user_config_file

    path = path or user_config_file()
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    current = tomllib.loads(old) if old.strip() else {}
    table = [f"[providers.{name}]", f"kind = {_toml_string(kind)}"]
    if base_url:
        table.append(f"base_url = {_toml_string(base_url)}")
    table.append(f"model = {_toml_string(model)}")
    lines = old.split("\n") if old else []
    if "default_provider" not in current:
        first_table = next(
            (i for i, line in enumerate(lines) if line.lstrip().startswith("[")), len(lines)
        )
        lines.insert(first_table, f"default_provider = {_toml_string(name)}")
    if name in (current.get("providers") or {}):
        raise KetchError(f"{path} already has [providers.{name}]; edit it there")
    text = "\n".join(lines).rstrip("\n") + ("\n\n" if lines else "") + "\n".join(table) + "\n"
    parsed = tomllib.loads(text)
    if parsed.get("providers", {}).get(name, {}).get("model") != model:
        raise KetchError(f"could not add the provider to {path} safely; nothing was changed")
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.ketch-setup.tmp")
    temp.write_text(text, encoding="utf-8")
    os.replace(temp, path)
    return path
