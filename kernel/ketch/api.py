"""The kernel's public API: the one module plugins and kits import from the kernel.

Everything a plugin needs from ketch is named here, and nothing else is promised: a
name in this module keeps its meaning and its signature across releases (changed only
with a deprecation), and ``tests/meta/api_snapshot.txt`` holds every name and signature
so that no change goes unnoticed (``tests/meta/test_meta_api.py`` says how to update it
deliberately). Bundled plugins import nothing else from the kernel (a meta-test holds
them to it), so they are built exactly as third-party ones are;
``python -m tests.meta.api_imports --write`` rewrites ``from ketch.X import Y`` lines to
this module.

Where to extend ketch, from this page: the hook specs (:mod:`ketch.hookspecs`, each
with its docstring), a plugin's own hooks (``ketch_add_hookspecs`` with ``hookspec``,
``fail_closed``, ``returns``, ``chained``), registries (``ketch_register_*``: tools,
commands, providers, settings, modes, profiles, frontends, events), per-kernel and
per-session state (``Kernel.stash``, ``Session.stash`` / ``Session.state`` with a
``StashKey``), events (subclass ``Event``), and the session's active context
(``Session.set_active``).

Names are resolved lazily: importing this module costs nothing until a name is used
(plugin entry modules import it on every start, ``ketch --help`` included). Type
checkers read ``api.pyi``, which a test holds to this table.
"""

from __future__ import annotations

from typing import Any

# Each module's public names (the same name here as there).
_NAMES = {
    "ketch": "__version__ hookimpl hookspec",
    "ketch.markers": "fail_closed returns chained",
    "ketch.errors": "KetchError ConfigError UsageError NoProviderConfigured ContextOverflow",
    "ketch.kernel": "Kernel",
    "ketch.session": "Session",
    "ketch.stash": "Stash StashKey",
    "ketch.events": (
        "Event SessionEvent UserPromptEvent TextDeltaEvent ReasoningDeltaEvent ToolCallEvent "
        "PermissionEvent ToolStartedEvent ToolOutputEvent ToolResultEvent UsageEvent ErrorEvent "
        "RetryEvent MessageEvent NoticeEvent ModeEvent ActiveEvent TurnEndEvent "
        "parse_event event_type"
    ),
    "ketch.messages": (
        "Message History Part TextPart ImagePart ReasoningPart ToolCallPart ToolResultPart Usage "
        "new_id pending_tool_calls MAX_IMAGE_BYTES"
    ),
    "ketch.tools": "Tool ToolContext ToolResult Effect Access tool as_tool DELEGATES",
    "ketch.policy": (
        "Vote PermissionSnapshot ProposedCall ApprovalRequest ApprovalAnswer Approver "
        "SCOPE_SEPARATOR combine_votes"
    ),
    "ketch.verdicts": "HookVerdict",
    "ketch.providers": (
        "Provider ProviderKind ProviderConfig ProviderRequest ProviderEvent ProviderError "
        "ErrorKind TextDelta ReasoningDelta ToolCallDelta Notice Completed StopReason ModelInfo "
        "ToolSpec Secret"
    ),
    "ketch.commands": "Command SlashContext PromptRequest",
    "ketch.frontends": "Frontend",
    "ketch.modes": "Mode Profile",
    "ketch.prompt": "PromptPart join_parts",
    "ketch.intake": "PromptIntake",
    "ketch.settings": "Section Settings SettingsSection",
    "ketch.config": "Layer line_of_key",
    "ketch.storage": (
        "Store FieldCipher SessionRecord SessionSummary IntegrityError StoreUnavailable "
        "RecoveryLocked"
    ),
    "ketch.plugins": "provides declared CHECKING_REGISTRATIONS",
    "ketch.paths": "config_dir state_dir cache_dir user_config_file workspace_config_file",
    "ketch.calls": "RunningCall running_call offered_tools",
    "ketch.loop": "Turn UNKNOWN_OUTCOME tool_spec",
    "ketch.cli": "main cli_settings",
}
# Each public name -> (the module that defines it, its name there; None: the module itself).
_EXPORTS: dict[str, tuple[str, str | None]] = {
    name: (module, name) for module, names in _NAMES.items() for name in names.split()
}
_EXPORTS["positive_int"] = ("ketch.cli", "_positive_int")
_EXPORTS["plugin_cache"] = ("ketch.plugin_cache", None)
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    import importlib

    try:
        module, attr = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'ketch.api' has no attribute {name!r}") from None
    found = importlib.import_module(module)
    value = found if attr is None else getattr(found, attr)
    globals()[name] = value  # resolved once
    return value


def __dir__() -> list[str]:
    return __all__
