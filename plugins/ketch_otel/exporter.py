"""From turn events to OpenTelemetry spans and metrics (imported only when telemetry is on).

Spans follow the GenAI semantic conventions: the turn is ``invoke_agent ketch``
(``gen_ai.operation.name = invoke_agent``, ``gen_ai.agent.name``,
``gen_ai.conversation.id`` = the session id); each model request is ``chat MODEL``
(``gen_ai.provider.name``, ``gen_ai.request.model``, ``gen_ai.usage.input_tokens`` /
``output_tokens``), from the moment the loop sends it (the prompt, or the last tool
result) to its usage report; each tool call is ``execute_tool NAME`` (``gen_ai.tool.name``,
``gen_ai.tool.call.id``) under the request that proposed it. Metrics:
``gen_ai.client.token.usage`` and ``gen_ai.client.operation.duration`` (the conventions'
histograms), ``ketch.cost`` (USD), ``ketch.tool.calls`` (by tool and outcome),
``ketch.permission.decisions`` (by decision and by who decided: the policy, or the
approver asked), ``ketch.turn.duration``.

Everything here runs inside ``ketch_event`` and must never cost a turn anything: spans and
measurements are recorded in memory, the SDK's batch processor and periodic reader export
from their own threads with a short timeout, and any exception is swallowed (counted in
``dropped``). At the session's end the pending data is flushed, bounded by the timeout.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any

from ketch.api import StashKey

GEN_AI = "gen_ai"


@dataclass
class Live:
    """One session's open spans."""

    turn: Any = None
    turn_started: float = 0.0
    request: Any = None
    request_started: float = 0.0
    tools: dict[str, Any] = field(default_factory=dict)
    proposed_by: dict[str, Any] = field(default_factory=dict)  # tool call id -> its request span
    model: str = ""
    provider: str = ""


class Exporter:
    def __init__(self, kernel: Any) -> None:
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        from ketch_otel.settings import TelemetrySettings

        settings = kernel.settings.of(TelemetrySettings)
        base = (
            settings.endpoint
            or kernel.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "")
            or "http://localhost:4318"
        ).rstrip("/")
        self.log_content = settings.log_content
        self.timeout = float(settings.timeout)
        self.dropped = 0
        resource = Resource.create(
            {"service.name": "ketch", "service.version": _version(), "process.pid": os.getpid()}
        )
        self.tracer_provider = TracerProvider(resource=resource, shutdown_on_exit=False)
        self.tracer_provider.add_span_processor(
            BatchSpanProcessor(
                OTLPSpanExporter(endpoint=f"{base}/v1/traces", timeout=self.timeout),
                schedule_delay_millis=1000,
                export_timeout_millis=int(self.timeout * 1000),
            )
        )
        self.reader = PeriodicExportingMetricReader(
            OTLPMetricExporter(endpoint=f"{base}/v1/metrics", timeout=self.timeout),
            export_interval_millis=int(settings.export_interval * 1000),
            export_timeout_millis=int(self.timeout * 1000),
        )
        self.meter_provider = MeterProvider(
            resource=resource, metric_readers=[self.reader], shutdown_on_exit=False
        )
        self.tracer = self.tracer_provider.get_tracer("ketch")
        meter = self.meter_provider.get_meter("ketch")
        self.tokens = meter.create_histogram(
            "gen_ai.client.token.usage", unit="{token}", description="tokens per model request"
        )
        self.request_duration = meter.create_histogram(
            "gen_ai.client.operation.duration", unit="s", description="model request duration"
        )
        self.cost = meter.create_counter("ketch.cost", unit="USD", description="model cost")
        self.tool_calls = meter.create_counter(
            "ketch.tool.calls", unit="{call}", description="tool calls by outcome"
        )
        self.decisions = meter.create_counter(
            "ketch.permission.decisions",
            unit="{decision}",
            description="permission decisions by who decided",
        )
        self.turn_duration = meter.create_histogram(
            "ketch.turn.duration", unit="s", description="turn duration"
        )
        self.live: dict[str, Live] = {}

    # --- events ----------------------------------------------------------------------------

    def observe(self, session: Any, event: Any) -> None:
        try:
            handler = getattr(self, f"_on_{event.type}", None)
            if handler is not None:
                handler(self.live.setdefault(session.id, Live()), session, event)
        except Exception:  # noqa: BLE001 - telemetry never breaks a turn
            self.dropped += 1

    def _attrs(self, live: Live) -> dict[str, Any]:
        return {f"{GEN_AI}.provider.name": live.provider, f"{GEN_AI}.request.model": live.model}

    def _on_session(self, live: Live, session: Any, event: Any) -> None:
        live.model, live.provider = (
            event.model,
            event.provider or getattr(session.provider, "name", ""),
        )

    def _on_user_prompt(self, live: Live, session: Any, event: Any) -> None:
        if live.turn is None:
            live.model = live.model or session.model
            live.provider = live.provider or getattr(session.provider, "name", "")
            attributes = {
                f"{GEN_AI}.operation.name": "invoke_agent",
                f"{GEN_AI}.agent.name": "ketch",
                f"{GEN_AI}.conversation.id": session.id,
                **self._attrs(live),
            }
            if self.log_content:
                attributes["ketch.prompt"] = event.text
            live.turn = self.tracer.start_span("invoke_agent ketch", attributes=attributes)
            live.turn_started = time.monotonic()
        self._start_request(live)

    def _start_request(self, live: Live) -> None:
        from opentelemetry import trace

        if live.request is not None or live.turn is None:
            return
        live.request = self.tracer.start_span(
            f"chat {live.model}",
            context=trace.set_span_in_context(live.turn),
            attributes={f"{GEN_AI}.operation.name": "chat", **self._attrs(live)},
        )
        live.request_started = time.monotonic()

    def _on_usage(self, live: Live, session: Any, event: Any) -> None:
        attrs = {f"{GEN_AI}.operation.name": "chat", **self._attrs(live)}
        self.tokens.record(event.input_tokens, {**attrs, f"{GEN_AI}.token.type": "input"})
        self.tokens.record(event.output_tokens, {**attrs, f"{GEN_AI}.token.type": "output"})
        cost = getattr(event, "cost_usd", None)  # added by a catalog that knows the price
        if cost:
            self.cost.add(float(cost), attrs)
        request = live.request
        if request is not None:
            request.set_attribute(f"{GEN_AI}.usage.input_tokens", event.input_tokens)
            request.set_attribute(f"{GEN_AI}.usage.output_tokens", event.output_tokens)
            self.request_duration.record(time.monotonic() - live.request_started, attrs)
            request.end()
            live.request = None
            live.last_request = request  # type: ignore[attr-defined]

    def _on_tool_call(self, live: Live, session: Any, event: Any) -> None:
        live.proposed_by[event.id] = (
            getattr(live, "last_request", None) or live.request or live.turn
        )

    def _on_permission(self, live: Live, session: Any, event: Any) -> None:
        decided_by = "policy" if event.decision != "ask" else "approver"
        self.decisions.add(
            1,
            {
                "decision": str(event.decision),
                "decided_by": decided_by,
                "approved": "none" if event.approved is None else str(bool(event.approved)).lower(),
            },
        )

    def _on_tool_started(self, live: Live, session: Any, event: Any) -> None:
        from opentelemetry import trace

        parent = live.proposed_by.get(event.tool_call_id) or live.turn
        attributes = {
            f"{GEN_AI}.operation.name": "execute_tool",
            f"{GEN_AI}.tool.name": event.name,
            f"{GEN_AI}.tool.call.id": event.tool_call_id,
        }
        if self.log_content:
            import json

            attributes["ketch.tool.input"] = json.dumps(event.input, ensure_ascii=False)[:8192]
        live.tools[event.tool_call_id] = self.tracer.start_span(
            f"execute_tool {event.name}",
            context=trace.set_span_in_context(parent) if parent is not None else None,
            attributes=attributes,
        )

    def _on_tool_result(self, live: Live, session: Any, event: Any) -> None:
        from opentelemetry.trace import Status, StatusCode

        self.tool_calls.add(1, {f"{GEN_AI}.tool.name": event.name, "outcome": event.outcome})
        span = live.tools.pop(event.tool_call_id, None)
        if span is not None:
            span.set_attribute("ketch.tool.outcome", event.outcome)
            if self.log_content:
                span.set_attribute("ketch.tool.output", event.output[:8192])
            if not event.ok:
                span.set_status(Status(StatusCode.ERROR, event.outcome))
            span.end()
        self._start_request(live)  # the results go back to the model: the next request

    def _on_error(self, live: Live, session: Any, event: Any) -> None:
        from opentelemetry.trace import Status, StatusCode

        for span in (live.request, live.turn):
            if span is not None:
                span.set_attribute("error.type", event.kind)
                span.set_status(Status(StatusCode.ERROR, event.kind))

    def _on_turn_end(self, live: Live, session: Any, event: Any) -> None:
        if live.request is not None:
            live.request.end()
            live.request = None
        for span in live.tools.values():
            span.end()
        live.tools.clear()
        live.proposed_by.clear()
        if live.turn is not None:
            live.turn.set_attribute("ketch.stop_reason", event.stop_reason)
            live.turn.set_attribute(f"{GEN_AI}.usage.input_tokens", event.input_tokens)
            live.turn.set_attribute(f"{GEN_AI}.usage.output_tokens", event.output_tokens)
            if self.log_content:
                live.turn.set_attribute("ketch.answer", event.text)
            live.turn.end()
            self.turn_duration.record(
                time.monotonic() - live.turn_started, {"stop_reason": event.stop_reason}
            )
            live.turn = None

    # --- the end -------------------------------------------------------------------------

    def end(self, session: Any) -> None:
        """Flush what this session produced, bounded (the exporter may be down)."""
        self.live.pop(session.id, None)
        budget = int(self.timeout * 1000)
        try:
            self.tracer_provider.force_flush(timeout_millis=budget)
            self.meter_provider.force_flush(timeout_millis=budget)
        except Exception:  # noqa: BLE001
            self.dropped += 1


EXPORTER: StashKey[Exporter] = StashKey()


def start(kernel: Any) -> None:
    try:
        kernel.stash[EXPORTER] = Exporter(kernel)
    except ImportError:
        kernel.notices.append(
            "telemetry is enabled, but OpenTelemetry is not installed: pip install 'ketch[otel]'"
        )


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("ketch")
    except Exception:  # noqa: BLE001
        return "0"
