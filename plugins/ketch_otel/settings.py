"""The ``[telemetry]`` table (user config only: a repository never turns export on)."""

from __future__ import annotations

from typing import Any

from ketch.api import Section, SettingsSection

ENV = "KETCH_ENABLE_TELEMETRY"


class TelemetrySettings(Section):
    enabled: bool = False
    endpoint: str = (
        ""  # OTLP/HTTP base URL; else OTEL_EXPORTER_OTLP_ENDPOINT; else http://localhost:4318
    )
    log_content: bool = False  # export prompts, answers and tool input/output too
    export_interval: float = 10.0  # seconds between metric exports (and one at the session's end)
    timeout: float = 2.0  # seconds one export may take (it runs in the background either way)


TELEMETRY = SettingsSection("telemetry", TelemetrySettings, workspace_safe=False)


def enabled(kernel: Any) -> bool:
    if str(kernel.environ.get(ENV, "")).strip().lower() in ("1", "true", "yes", "on"):
        return True
    return bool(kernel.settings.of(TelemetrySettings).enabled)
