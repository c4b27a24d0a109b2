"""The context budget: effective capacity, utilization and token estimates. Shared by the
budget plugin (which fits each request), the plugins that shape the context and
frontends (the meter).

Effective capacity = raw limit - max(output reserve, 8% of raw) - max(2,048, 2% of raw).
Utilization = the active context over the effective capacity.

Token counts are estimates unless a provider reported real ones. The estimator counts
characters, weighting non-ASCII text (CJK, emoji) by its UTF-8 length, and divides by a
chars-per-token ratio that starts at 4 and is calibrated per session from the input
token counts the provider reports (an exponential average; implausible reports, such as
a provider that leaves cached tokens out, are ignored). A real tokenizer is not used on
purpose: each provider tokenizes differently, none is available offline for all of
them, and the budget must be checked in microseconds before every request.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import math
import weakref
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ketch.api import ImagePart, Message, ReasoningPart, TextPart, ToolCallPart, ToolResultPart

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import ModelInfo, Session

DEFAULT_CONTEXT_WINDOW = 128_000
CHARS_PER_TOKEN = 4
MESSAGE_OVERHEAD = 4  # role and framing, per message
PART_OVERHEAD = 8  # a tool call or result's id, name and framing
IMAGE_UNITS = 6_000  # an image, in characters (~1.5k tokens at 4 per token)
# Calibration: only requests this large teach the ratio (framing dominates small ones),
# and only observed ratios in this band are believed.
CALIBRATE_MIN_TOKENS = 256
PLAUSIBLE_RATIO = (1.5, 8.0)
# session.state key for calibration and learned limits (named when the kernel kept the
# budget: saved sessions carry it).
STATE_KEY = "kernel.context"
PROVIDER_WINDOW_TIMEOUT = 5.0


# --- capacity and the meter ------------------------------------------------------------


def effective_capacity(raw_limit: int, output_reserve: int | None = None) -> int:
    reserve = max(output_reserve or 0, int(raw_limit * 0.08))
    overhead = max(2_048, int(raw_limit * 0.02))
    return max(raw_limit - reserve - overhead, 1)


def utilization(tokens: int, capacity: int) -> float:
    """Active context over effective capacity, clamped to 0-1 (the meter's value)."""
    return min(max(tokens / max(capacity, 1), 0.0), 1.0)


@dataclass(frozen=True)
class Budget:
    """The numbers behind one request: raw window, output reserve, effective capacity."""

    window: int
    reserve: int | None
    capacity: int
    source: str  # where the window came from: session, config, provider, default
    learned_capacity: int | None = None  # a lower capacity a provider's overflow error taught

    @property
    def reserved(self) -> int:
        return max(self.reserve or 0, int(self.window * 0.08))

    @property
    def overhead(self) -> int:
        return max(2_048, int(self.window * 0.02))


def context_state(session: Session) -> dict[str, Any]:
    """The budget's corner of ``session.state`` (JSON-safe, persisted with the session)."""
    state = session.state.get(STATE_KEY)
    if not isinstance(state, dict):
        state = session.state[STATE_KEY] = {}
    return state


def window_and_reserve(session: Session) -> tuple[int, int | None, str]:
    """The raw context window, the output reserve and where the window came from.

    Precedence: a per-session override (``session.context_window``), then the
    provider's config (``context_window`` in config.toml overrides what the provider
    reports), then what the provider reported, then the model catalog, then the default.
    """
    config = getattr(session.provider, "config", None)
    settings = session.kernel.settings.loop
    reserve = settings.max_output_tokens or getattr(config, "max_output_tokens", None)
    if session.context_window:
        return int(session.context_window), reserve, "session"
    configured = getattr(config, "context_window", None)
    if configured:
        return int(configured), reserve, "config"
    reported = context_state(session).get("reported_window")
    if (
        isinstance(reported, dict)
        and reported.get("model") == session.model
        and reported.get("tokens")
    ):
        return int(reported["tokens"]), reserve, "provider"
    info = model_info(session)
    if info is not None and info.context_window:
        return int(info.context_window), reserve, "catalog"
    return DEFAULT_CONTEXT_WINDOW, reserve, "default"


def model_info(session: Session) -> ModelInfo | None:
    """What the model catalog (any ``ketch_model_info`` plugin) knows of the session's model."""
    return session.kernel.hooks.first(  # type: ignore[no-any-return]
        "ketch_model_info",
        provider_kind=str(getattr(session.provider, "kind", "") or ""),
        model=session.model,
        kernel=session.kernel,
    )


def context_budget(session: Session) -> Budget:
    window, reserve, source = window_and_reserve(session)
    capacity = effective_capacity(window, reserve)
    learned = context_state(session).get("learned_capacity")
    if (
        isinstance(learned, dict)
        and learned.get("model") == session.model
        and learned.get("tokens")
    ):
        learned_tokens = int(learned["tokens"])
        if learned_tokens < capacity:
            return Budget(window, reserve, learned_tokens, source, learned_tokens)
    return Budget(window, reserve, capacity, source)


def learn_capacity(session: Session, capacity: int) -> None:
    """Remember a lower effective capacity (from a provider's context-overflow error)."""
    if capacity < context_budget(session).capacity:
        context_state(session)["learned_capacity"] = {
            "model": session.model,
            "tokens": int(capacity),
        }


async def learn_provider_window(session: Session, timeout: float = PROVIDER_WINDOW_TIMEOUT) -> None:
    """Ask the provider for the model's context length once per model, unless configured.

    A failure or a slow answer is remembered as unknown (0), so it costs one try.
    """
    config = getattr(session.provider, "config", None)
    if session.context_window or getattr(config, "context_window", None):
        return
    state = context_state(session)
    known = state.get("reported_window")
    if isinstance(known, dict) and known.get("model") == session.model:
        return
    tokens = 0
    ask = getattr(session.provider, "context_window", None)
    if ask is not None:
        try:
            value = ask()
            if inspect.isawaitable(value):
                # asyncio.timeout, not wait_for: on Python 3.11 wait_for swallows a cancel
                # that lands as the answer arrives (gh-86296), and the turn runs on uncancelled.
                async with asyncio.timeout(timeout):
                    value = await value
            tokens = int(value or 0)
        except asyncio.CancelledError:
            raise
        except Exception:  # noqa: BLE001 - best effort: the default stands
            tokens = 0
    state["reported_window"] = {"model": session.model, "tokens": max(tokens, 0)}


# --- token estimates --------------------------------------------------------------------


def text_units(text: str) -> float:
    """Characters, with non-ASCII weighted by UTF-8 length (a CJK character ~ 1 token)."""
    if text.isascii():
        return len(text)
    extra = len(text.encode("utf-8", "surrogatepass")) - len(text)
    return len(text) + 1.5 * extra


# Message sizes, remembered per message object (messages are immutable): the loop sizes
# the whole active context before every request, and compaction sizes it several times.
_SIZES: dict[int, tuple[weakref.ref[Message], float, int]] = {}


def _message_size(message: Message) -> tuple[float, int]:
    """(weighted characters, framing tokens) of one message."""
    key = id(message)
    hit = _SIZES.get(key)
    if hit is not None and hit[0]() is message:
        return hit[1], hit[2]
    units, overhead = _measure(message)
    try:
        ref = weakref.ref(message, lambda _, key=key: _SIZES.pop(key, None))  # type: ignore[misc]
    except TypeError:
        return units, overhead
    _SIZES[key] = (ref, units, overhead)
    return units, overhead


class _HistorySize:
    """The summed size of the last history measured, extended when the next one only
    appends to it: a history is a tuple that grows at its end (compaction replaces it
    with another tuple), so the loop's before-request measurement costs the new
    messages, not the whole session. Whether the new history starts with the old one
    is a tuple comparison in C that stops at the first element that is not the same
    object, so a history rebuilt in the middle is measured again from scratch."""

    __slots__ = ("history", "units", "overhead")

    def __init__(self) -> None:
        self.history: tuple[Message, ...] = ()
        self.units = 0.0
        self.overhead = 0

    def of(self, history: tuple[Message, ...]) -> tuple[float, int]:
        n = len(self.history)
        if not (n and len(history) >= n and history[:n] == self.history):
            n, self.units, self.overhead = 0, 0.0, 0
        for message in history[n:]:
            u, o = _message_size(message)
            self.units += u
            self.overhead += o
        self.history = history
        return self.units, self.overhead


_HISTORY = _HistorySize()


def history_size(messages: Iterable[Message]) -> tuple[float, int]:
    """(weighted characters, framing tokens) of many messages; cheap for a growing history."""
    if isinstance(messages, tuple):
        return _HISTORY.of(messages)
    units, overhead = 0.0, 0
    for message in messages:
        u, o = _message_size(message)
        units += u
        overhead += o
    return units, overhead


def _measure(message: Message) -> tuple[float, int]:
    units = 0.0
    overhead = MESSAGE_OVERHEAD
    for part in message.parts:
        if isinstance(part, TextPart):
            units += text_units(part.text)
        elif isinstance(part, ToolResultPart):
            units += text_units(part.output)
            overhead += PART_OVERHEAD
        elif isinstance(part, ToolCallPart):
            units += len(part.name) + text_units(part.canonical_input())
            overhead += PART_OVERHEAD
        elif isinstance(part, ReasoningPart):
            units += text_units(part.text) + len(part.signature or "") + len(part.redacted or "")
        if isinstance(
            part, (ImagePart, ToolResultPart)
        ):  # an image costs ~1.5k tokens to most models
            units += IMAGE_UNITS * (1 if isinstance(part, ImagePart) else len(part.images))
    return units, overhead


@dataclass(frozen=True)
class RequestSize:
    """The size of one provider request, kept to calibrate against the reported tokens."""

    units: float
    overhead: int
    tokens: int  # the estimate at the time


class TokenEstimator:
    """Estimates tokens with one chars-per-token ratio (see the module docstring)."""

    __slots__ = ("chars_per_token",)

    def __init__(self, chars_per_token: float = CHARS_PER_TOKEN) -> None:
        self.chars_per_token = float(chars_per_token)

    def units(self, units: float) -> int:
        return math.ceil(units / self.chars_per_token)

    def text(self, text: str) -> int:
        return self.units(text_units(text))

    def message(self, message: Message) -> int:
        units, overhead = _message_size(message)
        return self.units(units) + overhead

    def messages(self, messages: Iterable[Message]) -> int:
        units, overhead = history_size(messages)
        return self.units(units) + overhead

    def schemas(self, schemas: Iterable[Any]) -> int:
        return sum(self.text(json.dumps(s, default=str)) for s in schemas)

    def request(
        self,
        system: str,
        schemas: Sequence[Any],
        messages: Iterable[Message],
        *,
        schema_units: float | None = None,
    ) -> RequestSize:
        """The size of a whole request (``schema_units``: the schemas' size, if known)."""
        if schema_units is None:
            schema_units = sum(text_units(json.dumps(s, default=str)) for s in schemas)
        units, overhead = history_size(messages)
        units += text_units(system) + schema_units
        return RequestSize(units=units, overhead=overhead, tokens=self.units(units) + overhead)


_DEFAULT = TokenEstimator()


def estimate_text(text: str) -> int:
    return _DEFAULT.text(text)


def estimate_message(message: Message) -> int:
    return _DEFAULT.message(message)


def estimate_messages(messages: Iterable[Message]) -> int:
    return _DEFAULT.messages(messages)


def estimate_schemas(schemas: Iterable[Any]) -> int:
    return _DEFAULT.schemas(schemas)


def estimator_for(session: Session) -> TokenEstimator:
    """The session's calibrated estimator (the default ratio until a provider reported)."""
    ratio = context_state(session).get("chars_per_token")
    if isinstance(ratio, int | float) and PLAUSIBLE_RATIO[0] <= ratio <= PLAUSIBLE_RATIO[1]:
        return TokenEstimator(ratio)
    return _DEFAULT


def reported_input_tokens(input_tokens: int, cached_tokens: int) -> int:
    """The whole prompt as reported: some providers count cached tokens apart."""
    return input_tokens + cached_tokens if cached_tokens > input_tokens else input_tokens


def plausible(size: RequestSize, reported: int) -> bool:
    """Whether a reported prompt size can be the request we measured."""
    text_tokens = reported - size.overhead
    if reported <= 0 or text_tokens <= 0:
        return False
    ratio = size.units / text_tokens
    return PLAUSIBLE_RATIO[0] <= ratio <= PLAUSIBLE_RATIO[1]


def calibrate(session: Session, size: RequestSize, reported: int) -> bool:
    """Fold one reported prompt size into the session's chars-per-token ratio."""
    if reported < CALIBRATE_MIN_TOKENS or not plausible(size, reported):
        return False
    observed = size.units / (reported - size.overhead)
    state = context_state(session)
    samples = int(state.get("samples") or 0)
    current = float(state.get("chars_per_token") or CHARS_PER_TOKEN)
    weight = max(0.25, 1.0 / (samples + 2))
    state["chars_per_token"] = round(current * (1 - weight) + observed * weight, 4)
    state["samples"] = samples + 1
    return True
