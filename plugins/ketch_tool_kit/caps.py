"""Tool settings (the ``[tools.NAME]`` tables) and small output-budget helpers.

Defaults suit 16–32k-token local models (a read or a command's output stays around
3–4k tokens); users of large models raise them in config. A bad value is reported
once as a notice and replaced by its default, never fatal.

``[tools.*]`` may come from an untrusted workspace config, so nothing read here may
raise authority: only sizes, counts and timeouts (clamped) live in these tables.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from ketch.api import StashKey

M = TypeVar("M", bound=BaseModel)

# The notices this session was given under its loaded configuration: (the settings, messages).
REPORTED = StashKey[tuple[Any, set[str]]]()


def tool_settings(ctx: Any, name: str, model: type[M]) -> M:
    """The validated ``[tools.<name>]`` table (unknown keys ignored, bad ones defaulted)."""
    tools = getattr(getattr(ctx, "settings", None), "tools", None) or {}
    raw = tools.get(name) if isinstance(tools, dict) else None
    data = (
        {k: v for k, v in raw.items() if k in model.model_fields} if isinstance(raw, dict) else {}
    )
    for _ in range(len(data) + 1):
        try:
            return model.model_validate(data)
        except ValidationError as exc:
            for error in exc.errors():
                key = str(error["loc"][0]) if error.get("loc") else ""
                if key in data:
                    bad = data.pop(key)
                    notice(
                        ctx,
                        f"[tools.{name}] {key} = {bad!r} is invalid ({error['msg']}); using the default",
                    )
    return model()


def notice(ctx: Any, message: str) -> None:
    """A warning for the user, once per session and loaded configuration."""
    stash = getattr(ctx, "stash", None)
    if stash is not None:
        settings = getattr(ctx, "settings", None)
        reported = stash.get(REPORTED)
        if reported is None or reported[0] is not settings:  # a config loaded anew: say again
            reported = stash[REPORTED] = (settings, set())
        if message in reported[1]:
            return
        reported[1].add(message)
    try:
        from ketch.api import NoticeEvent

        ctx.emit(NoticeEvent(level="warning", message=message))
    except Exception:  # noqa: BLE001 - a notice must never break a tool
        pass


def human_size(size: int) -> str:
    value = float(size)
    for unit in ("bytes", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{size} bytes" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} bytes"


def cut_line(text: str, limit: int) -> tuple[str, bool]:
    """``text`` cut to ``limit`` characters with a marker; True when it was cut."""
    if len(text) <= limit:
        return text, False
    return f"{text[:limit]}… [{len(text) - limit} more characters on this line]", True
