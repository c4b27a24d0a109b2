"""ketch_otel: opt-in OpenTelemetry export of metrics and spans (GenAI semantic conventions).

Off unless ``[telemetry] enabled = true`` (user config) or ``KETCH_ENABLE_TELEMETRY=1``.
Then every turn becomes a span (``invoke_agent ketch``) with a child per model request
(``chat MODEL``) and, under the request that proposed it, one per tool call
(``execute_tool NAME``); and metrics: token usage, cost, tool calls by outcome,
permission decisions by who decided, turn and request durations. They go to an
OTLP/HTTP endpoint (``[telemetry] endpoint`` or ``OTEL_EXPORTER_OTLP_ENDPOINT``) through
the official SDK, from its background threads: an endpoint that is down or slow never
slows or breaks a turn. Prompts, answers and tool input/output are never exported
unless ``[telemetry] log_content = true``.

Nothing of OpenTelemetry is imported unless telemetry is on (``pip install 'ketch[otel]'``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ketch.api import hookimpl

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Event, Kernel, Session


@hookimpl
def ketch_register_settings(register: Callable[[Any], None]) -> None:
    from ketch_otel.settings import TELEMETRY

    register(TELEMETRY)


@hookimpl
def ketch_configure(kernel: Kernel) -> None:
    from ketch_otel.settings import enabled

    if not enabled(kernel):
        return
    from ketch_otel.exporter import start

    start(kernel)


@hookimpl
def ketch_event(session: Session, event: Event) -> None:
    from ketch_otel.exporter import EXPORTER

    exporter = session.kernel.stash.get(EXPORTER)
    if exporter is not None and event.type not in ("text_delta", "reasoning_delta"):
        exporter.observe(session, event)


@hookimpl
def ketch_session_end(session: Session, reason: str) -> None:
    from ketch_otel.exporter import EXPORTER

    exporter = session.kernel.stash.get(EXPORTER)
    if exporter is not None:
        exporter.end(session)
