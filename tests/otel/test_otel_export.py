"""Issue 28 item 4: a scripted turn's spans and metrics reach an OTLP/HTTP receiver on
loopback (the protobufs decoded with OpenTelemetry's own message classes), shaped by the
GenAI semantic conventions; prompts and tool output stay out unless asked for; with the
receiver down (a listener that never answers) the turn takes no longer.
"""

from __future__ import annotations

import json
import os
import socket
import statistics
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from ketch.testing import call, text

pytest.importorskip(
    "opentelemetry.sdk", reason="the telemetry extra is not installed (pip install 'ketch[otel]')"
)

ROOT = Path(__file__).resolve().parents[2]
PROMPT_CANARY = "KETCHOTELPROMPT3e1a"
OUTPUT_CANARY = "KETCHOTELOUTPUT77c0"


class Receiver:
    """An OTLP/HTTP endpoint: POST /v1/traces and /v1/metrics, protobuf bodies."""

    def __init__(self) -> None:
        self.bodies: dict[str, list[bytes]] = {"/v1/traces": [], "/v1/metrics": []}
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                receiver.bodies.setdefault(self.path, []).append(body)
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def spans(self) -> list[Any]:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
        )

        found = []
        for body in self.bodies["/v1/traces"]:
            request = ExportTraceServiceRequest()
            request.ParseFromString(body)
            for resource in request.resource_spans:
                for scope in resource.scope_spans:
                    found.extend(scope.spans)
        return found

    def metrics(self) -> dict[str, Any]:
        from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
            ExportMetricsServiceRequest,
        )

        found: dict[str, Any] = {}
        for body in self.bodies["/v1/metrics"]:
            request = ExportMetricsServiceRequest()
            request.ParseFromString(body)
            for resource in request.resource_metrics:
                for scope in resource.scope_metrics:
                    for metric in scope.metrics:
                        found[metric.name] = metric
        return found


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    found = Receiver()
    yield found
    found.server.shutdown()


def _attrs(span: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kv in span.attributes:
        value = kv.value
        out[kv.key] = (
            value.string_value or value.int_value or value.double_value or value.bool_value
        )
    return out


def _turn(
    tmp_path: Path, endpoint: str | None, *, content: bool = False
) -> tuple[subprocess.CompletedProcess[str], float]:
    script = [
        call("note", {"text": f"input {OUTPUT_CANARY}"}),
        call("pause", {"seconds": 0.4}),
        text("all done"),
    ]
    (tmp_path / "script.json").write_text(json.dumps(script))
    config = tmp_path / "config"
    config.mkdir(exist_ok=True)
    (config / "config.toml").write_text(
        f"[telemetry]\ntimeout = 1.5\nexport_interval = 60\nlog_content = {str(content).lower()}\n"
    )
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "KETCH_CONFIG_DIR": str(config),
        "KETCH_LOAD": "ketch.testing.scripted_plugin,store_tools=tests.store.store_test_tools",
        "KETCH_PLUGINS": "guards,headless,scripted_plugin,store_tools,otel",
        "KETCH_SCRIPT": str(tmp_path / "script.json"),
    }
    if endpoint is not None:
        env["KETCH_ENABLE_TELEMETRY"] = "1"
        env["OTEL_EXPORTER_OTLP_ENDPOINT"] = endpoint
    run = subprocess.run(
        [sys.executable, "-m", "ketch", "-p", f"tell me {PROMPT_CANARY}", "--provider", "scripted",
         "--output-format", "stream-json", "--no-save"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    events = [json.loads(line) for line in run.stdout.splitlines() if line.strip()]
    first = next(e for e in events if e["type"] == "session")
    last = next(e for e in events if e["type"] == "turn_end")
    return run, float(last["ts"]) - float(first["ts"])


def test_a_scripted_turn_reaches_the_receiver_as_genai_spans_and_metrics(
    tmp_path: Path, receiver: Receiver
) -> None:
    _turn(tmp_path, receiver.url)
    spans = {span.name: span for span in receiver.spans()}
    assert {
        "invoke_agent ketch",
        "chat scripted-model",
        "execute_tool note",
        "execute_tool pause",
    } <= set(spans)
    turn, tool = spans["invoke_agent ketch"], spans["execute_tool note"]
    chats = [s for s in receiver.spans() if s.name == "chat scripted-model"]
    assert len(chats) == 3  # the prompt, and after each tool result
    assert all(chat.parent_span_id == turn.span_id for chat in chats)
    assert tool.parent_span_id in {chat.span_id for chat in chats}  # turn -> request -> tool
    assert {s.trace_id for s in receiver.spans()} == {turn.trace_id}
    assert _attrs(turn)["gen_ai.operation.name"] == "invoke_agent"
    assert _attrs(chats[0])["gen_ai.request.model"] == "scripted-model"
    assert _attrs(chats[0])["gen_ai.usage.input_tokens"] > 0
    assert (
        _attrs(tool)["gen_ai.tool.name"] == "note"
        and _attrs(tool)["ketch.tool.outcome"] == "succeeded"
    )
    metrics = receiver.metrics()
    assert {"gen_ai.client.token.usage", "gen_ai.client.operation.duration", "ketch.tool.calls",
            "ketch.permission.decisions", "ketch.turn.duration"} <= set(metrics)  # fmt: skip
    calls = {
        next(a.value.string_value for a in p.attributes if a.key == "gen_ai.tool.name"): p.as_int
        for p in metrics["ketch.tool.calls"].sum.data_points
    }
    assert calls == {"note": 1, "pause": 1}
    everything = b"".join(receiver.bodies["/v1/traces"] + receiver.bodies["/v1/metrics"])
    assert PROMPT_CANARY.encode() not in everything and OUTPUT_CANARY.encode() not in everything


def test_content_is_exported_only_when_asked(tmp_path: Path, receiver: Receiver) -> None:
    _turn(tmp_path, receiver.url, content=True)
    everything = b"".join(receiver.bodies["/v1/traces"])
    assert PROMPT_CANARY.encode() in everything and OUTPUT_CANARY.encode() in everything


def test_a_receiver_that_never_answers_does_not_slow_the_turn(tmp_path: Path) -> None:
    black_hole = socket.create_server(("127.0.0.1", 0), backlog=64)  # accepts, never answers
    try:
        endpoint = f"http://127.0.0.1:{black_hole.getsockname()[1]}"
        off = [_turn(tmp_path, None)[1] for _ in range(3)]
        down = [_turn(tmp_path, endpoint)[1] for _ in range(3)]
    finally:
        black_hole.close()
    # The turn itself (session event to turn_end): the export runs beside it, never in it.
    assert statistics.median(down) < statistics.median(off) + 0.5, (off, down)


def test_the_plugin_costs_nothing_at_startup_when_off() -> None:
    """Importing the plugin (as every start does) imports nothing of OpenTelemetry."""
    code = (
        "import sys, ketch_otel\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('opentelemetry') or m == 'ketch_otel.exporter')\n"
        "print(loaded)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and run.stdout.strip() == "[]", run.stdout + run.stderr
