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
(plugin entry modules import it on every start, ``ketch --help`` included).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from ketch import __version__, builtin_commands, hookimpl, hookspec
    from ketch.calls import RunningCall, running_call
    from ketch.childenv import child_environment, secret_name
    from ketch.cli import _positive_int as positive_int
    from ketch.cli import cli_settings, main
    from ketch.commands import Command, PromptRequest, SlashContext
    from ketch.config import Layer
    from ketch.context import (
        DEFAULT_CONTEXT_WINDOW,
        TokenEstimator,
        context_budget,
        context_state,
        effective_capacity,
        estimate_messages,
        estimate_schemas,
        estimate_text,
        estimator_for,
        model_info,
    )
    from ketch.errors import (
        ConfigError,
        ContextOverflow,
        KetchError,
        NoProviderConfigured,
        UsageError,
    )
    from ketch.events import (
        ActiveEvent,
        ErrorEvent,
        Event,
        MessageEvent,
        ModeEvent,
        NoticeEvent,
        PermissionEvent,
        ReasoningDeltaEvent,
        RetryEvent,
        SessionEvent,
        TextDeltaEvent,
        ToolCallEvent,
        ToolOutputEvent,
        ToolResultEvent,
        ToolStartedEvent,
        TurnEndEvent,
        UsageEvent,
        UserPromptEvent,
        WaitingEvent,
        event_type,
        parse_event,
    )
    from ketch.frontends import Frontend
    from ketch.intake import PromptIntake
    from ketch.kernel import Kernel
    from ketch.loop import UNKNOWN_OUTCOME, Turn
    from ketch.markers import chained, fail_closed, returns
    from ketch.messages import (
        MAX_IMAGE_BYTES,
        History,
        ImagePart,
        Message,
        Part,
        ReasoningPart,
        TextPart,
        ToolCallPart,
        ToolResultPart,
        Usage,
        image_media_type,
        new_id,
        pending_tool_calls,
        without_images,
    )
    from ketch.modes import Mode, Profile
    from ketch.paths import (
        cache_dir,
        config_dir,
        state_dir,
        user_config_file,
        workspace_config_file,
    )
    from ketch.plugins import provides
    from ketch.policy import (
        SCOPE_SEPARATOR,
        ApprovalAnswer,
        ApprovalRequest,
        Approver,
        PermissionSnapshot,
        ProposedCall,
        Vote,
        combine_votes,
    )
    from ketch.prompt import PromptPart, join_parts
    from ketch.providers import (
        Completed,
        ErrorKind,
        ModelInfo,
        Notice,
        Provider,
        ProviderConfig,
        ProviderError,
        ProviderEvent,
        ProviderKind,
        ProviderRequest,
        ReasoningDelta,
        Secret,
        StopReason,
        TextDelta,
        ToolCallDelta,
        ToolSpec,
    )
    from ketch.request import RequestBudget, measure
    from ketch.session import Session
    from ketch.settings import Section, Settings, SettingsSection
    from ketch.signals import run_cancellable
    from ketch.stash import Stash, StashKey
    from ketch.storage import (
        FieldCipher,
        IntegrityError,
        RecoveryLocked,
        SessionRecord,
        SessionSummary,
        Store,
        StoreUnavailable,
    )
    from ketch.tools import Access, Effect, Tool, ToolContext, ToolResult, tool
    from ketch.verdicts import HookVerdict

# Each public name -> (the module that defines it, its name there; None: the module itself).
_EXPORTS: dict[str, tuple[str, str | None]] = {
    "__version__": ("ketch", "__version__"),
    "hookimpl": ("ketch", "hookimpl"),
    "hookspec": ("ketch", "hookspec"),
    "fail_closed": ("ketch.markers", "fail_closed"),
    "returns": ("ketch.markers", "returns"),
    "chained": ("ketch.markers", "chained"),
    "KetchError": ("ketch.errors", "KetchError"),
    "ConfigError": ("ketch.errors", "ConfigError"),
    "UsageError": ("ketch.errors", "UsageError"),
    "NoProviderConfigured": ("ketch.errors", "NoProviderConfigured"),
    "ContextOverflow": ("ketch.errors", "ContextOverflow"),
    "Kernel": ("ketch.kernel", "Kernel"),
    "Session": ("ketch.session", "Session"),
    "Stash": ("ketch.stash", "Stash"),
    "StashKey": ("ketch.stash", "StashKey"),
    "Event": ("ketch.events", "Event"),
    "SessionEvent": ("ketch.events", "SessionEvent"),
    "UserPromptEvent": ("ketch.events", "UserPromptEvent"),
    "TextDeltaEvent": ("ketch.events", "TextDeltaEvent"),
    "ReasoningDeltaEvent": ("ketch.events", "ReasoningDeltaEvent"),
    "ToolCallEvent": ("ketch.events", "ToolCallEvent"),
    "PermissionEvent": ("ketch.events", "PermissionEvent"),
    "ToolStartedEvent": ("ketch.events", "ToolStartedEvent"),
    "ToolOutputEvent": ("ketch.events", "ToolOutputEvent"),
    "ToolResultEvent": ("ketch.events", "ToolResultEvent"),
    "UsageEvent": ("ketch.events", "UsageEvent"),
    "ErrorEvent": ("ketch.events", "ErrorEvent"),
    "RetryEvent": ("ketch.events", "RetryEvent"),
    "WaitingEvent": ("ketch.events", "WaitingEvent"),
    "MessageEvent": ("ketch.events", "MessageEvent"),
    "NoticeEvent": ("ketch.events", "NoticeEvent"),
    "ModeEvent": ("ketch.events", "ModeEvent"),
    "ActiveEvent": ("ketch.events", "ActiveEvent"),
    "TurnEndEvent": ("ketch.events", "TurnEndEvent"),
    "parse_event": ("ketch.events", "parse_event"),
    "event_type": ("ketch.events", "event_type"),
    "Message": ("ketch.messages", "Message"),
    "History": ("ketch.messages", "History"),
    "Part": ("ketch.messages", "Part"),
    "TextPart": ("ketch.messages", "TextPart"),
    "ImagePart": ("ketch.messages", "ImagePart"),
    "ReasoningPart": ("ketch.messages", "ReasoningPart"),
    "ToolCallPart": ("ketch.messages", "ToolCallPart"),
    "ToolResultPart": ("ketch.messages", "ToolResultPart"),
    "Usage": ("ketch.messages", "Usage"),
    "new_id": ("ketch.messages", "new_id"),
    "image_media_type": ("ketch.messages", "image_media_type"),
    "without_images": ("ketch.messages", "without_images"),
    "pending_tool_calls": ("ketch.messages", "pending_tool_calls"),
    "MAX_IMAGE_BYTES": ("ketch.messages", "MAX_IMAGE_BYTES"),
    "Tool": ("ketch.tools", "Tool"),
    "ToolContext": ("ketch.tools", "ToolContext"),
    "ToolResult": ("ketch.tools", "ToolResult"),
    "Effect": ("ketch.tools", "Effect"),
    "Access": ("ketch.tools", "Access"),
    "tool": ("ketch.tools", "tool"),
    "Vote": ("ketch.policy", "Vote"),
    "PermissionSnapshot": ("ketch.policy", "PermissionSnapshot"),
    "ProposedCall": ("ketch.policy", "ProposedCall"),
    "ApprovalRequest": ("ketch.policy", "ApprovalRequest"),
    "ApprovalAnswer": ("ketch.policy", "ApprovalAnswer"),
    "Approver": ("ketch.policy", "Approver"),
    "SCOPE_SEPARATOR": ("ketch.policy", "SCOPE_SEPARATOR"),
    "combine_votes": ("ketch.policy", "combine_votes"),
    "HookVerdict": ("ketch.verdicts", "HookVerdict"),
    "Provider": ("ketch.providers", "Provider"),
    "ProviderKind": ("ketch.providers", "ProviderKind"),
    "ProviderConfig": ("ketch.providers", "ProviderConfig"),
    "ProviderRequest": ("ketch.providers", "ProviderRequest"),
    "ProviderEvent": ("ketch.providers", "ProviderEvent"),
    "ProviderError": ("ketch.providers", "ProviderError"),
    "ErrorKind": ("ketch.providers", "ErrorKind"),
    "TextDelta": ("ketch.providers", "TextDelta"),
    "ReasoningDelta": ("ketch.providers", "ReasoningDelta"),
    "ToolCallDelta": ("ketch.providers", "ToolCallDelta"),
    "Notice": ("ketch.providers", "Notice"),
    "Completed": ("ketch.providers", "Completed"),
    "StopReason": ("ketch.providers", "StopReason"),
    "ModelInfo": ("ketch.providers", "ModelInfo"),
    "ToolSpec": ("ketch.providers", "ToolSpec"),
    "Secret": ("ketch.providers", "Secret"),
    "Command": ("ketch.commands", "Command"),
    "SlashContext": ("ketch.commands", "SlashContext"),
    "PromptRequest": ("ketch.commands", "PromptRequest"),
    "Frontend": ("ketch.frontends", "Frontend"),
    "Mode": ("ketch.modes", "Mode"),
    "Profile": ("ketch.modes", "Profile"),
    "PromptPart": ("ketch.prompt", "PromptPart"),
    "join_parts": ("ketch.prompt", "join_parts"),
    "PromptIntake": ("ketch.intake", "PromptIntake"),
    "Section": ("ketch.settings", "Section"),
    "Settings": ("ketch.settings", "Settings"),
    "SettingsSection": ("ketch.settings", "SettingsSection"),
    "Layer": ("ketch.config", "Layer"),
    "Store": ("ketch.storage", "Store"),
    "FieldCipher": ("ketch.storage", "FieldCipher"),
    "SessionRecord": ("ketch.storage", "SessionRecord"),
    "SessionSummary": ("ketch.storage", "SessionSummary"),
    "IntegrityError": ("ketch.storage", "IntegrityError"),
    "StoreUnavailable": ("ketch.storage", "StoreUnavailable"),
    "RecoveryLocked": ("ketch.storage", "RecoveryLocked"),
    "provides": ("ketch.plugins", "provides"),
    "config_dir": ("ketch.paths", "config_dir"),
    "state_dir": ("ketch.paths", "state_dir"),
    "cache_dir": ("ketch.paths", "cache_dir"),
    "user_config_file": ("ketch.paths", "user_config_file"),
    "workspace_config_file": ("ketch.paths", "workspace_config_file"),
    "child_environment": ("ketch.childenv", "child_environment"),
    "secret_name": ("ketch.childenv", "secret_name"),
    "run_cancellable": ("ketch.signals", "run_cancellable"),
    "DEFAULT_CONTEXT_WINDOW": ("ketch.context", "DEFAULT_CONTEXT_WINDOW"),
    "TokenEstimator": ("ketch.context", "TokenEstimator"),
    "context_budget": ("ketch.context", "context_budget"),
    "context_state": ("ketch.context", "context_state"),
    "effective_capacity": ("ketch.context", "effective_capacity"),
    "estimate_messages": ("ketch.context", "estimate_messages"),
    "estimate_schemas": ("ketch.context", "estimate_schemas"),
    "estimate_text": ("ketch.context", "estimate_text"),
    "estimator_for": ("ketch.context", "estimator_for"),
    "model_info": ("ketch.context", "model_info"),
    "RequestBudget": ("ketch.request", "RequestBudget"),
    "measure": ("ketch.request", "measure"),
    "RunningCall": ("ketch.calls", "RunningCall"),
    "running_call": ("ketch.calls", "running_call"),
    "Turn": ("ketch.loop", "Turn"),
    "UNKNOWN_OUTCOME": ("ketch.loop", "UNKNOWN_OUTCOME"),
    "main": ("ketch.cli", "main"),
    "cli_settings": ("ketch.cli", "cli_settings"),
    "positive_int": ("ketch.cli", "_positive_int"),
    "builtin_commands": ("ketch.builtin_commands", None),
}

__all__ = [
    "__version__",
    "Access",
    "ActiveEvent",
    "ApprovalAnswer",
    "ApprovalRequest",
    "Approver",
    "builtin_commands",
    "cache_dir",
    "chained",
    "child_environment",
    "cli_settings",
    "combine_votes",
    "Command",
    "Completed",
    "config_dir",
    "ConfigError",
    "context_budget",
    "context_state",
    "ContextOverflow",
    "DEFAULT_CONTEXT_WINDOW",
    "Effect",
    "effective_capacity",
    "ErrorEvent",
    "ErrorKind",
    "estimate_messages",
    "estimate_schemas",
    "estimate_text",
    "estimator_for",
    "Event",
    "event_type",
    "fail_closed",
    "FieldCipher",
    "Frontend",
    "History",
    "hookimpl",
    "hookspec",
    "HookVerdict",
    "image_media_type",
    "ImagePart",
    "IntegrityError",
    "join_parts",
    "Kernel",
    "KetchError",
    "Layer",
    "main",
    "MAX_IMAGE_BYTES",
    "measure",
    "Message",
    "MessageEvent",
    "Mode",
    "ModeEvent",
    "model_info",
    "ModelInfo",
    "new_id",
    "NoProviderConfigured",
    "Notice",
    "NoticeEvent",
    "parse_event",
    "Part",
    "pending_tool_calls",
    "PermissionEvent",
    "PermissionSnapshot",
    "positive_int",
    "Profile",
    "PromptIntake",
    "PromptPart",
    "PromptRequest",
    "ProposedCall",
    "Provider",
    "ProviderConfig",
    "ProviderError",
    "ProviderEvent",
    "ProviderKind",
    "ProviderRequest",
    "provides",
    "ReasoningDelta",
    "ReasoningDeltaEvent",
    "ReasoningPart",
    "RecoveryLocked",
    "RequestBudget",
    "RetryEvent",
    "returns",
    "run_cancellable",
    "running_call",
    "RunningCall",
    "SCOPE_SEPARATOR",
    "Secret",
    "secret_name",
    "Section",
    "Session",
    "SessionEvent",
    "SessionRecord",
    "SessionSummary",
    "Settings",
    "SettingsSection",
    "SlashContext",
    "Stash",
    "StashKey",
    "state_dir",
    "StopReason",
    "Store",
    "StoreUnavailable",
    "TextDelta",
    "TextDeltaEvent",
    "TextPart",
    "TokenEstimator",
    "Tool",
    "tool",
    "ToolCallDelta",
    "ToolCallEvent",
    "ToolCallPart",
    "ToolContext",
    "ToolOutputEvent",
    "ToolResult",
    "ToolResultEvent",
    "ToolResultPart",
    "ToolSpec",
    "ToolStartedEvent",
    "Turn",
    "TurnEndEvent",
    "UNKNOWN_OUTCOME",
    "Usage",
    "UsageError",
    "UsageEvent",
    "user_config_file",
    "UserPromptEvent",
    "Vote",
    "WaitingEvent",
    "without_images",
    "workspace_config_file",
]


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
