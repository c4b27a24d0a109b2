"""The stream watch's event (registered through ``ketch_register_events``)."""

from __future__ import annotations

from typing import Literal

from ketch.api import Event


class WaitingEvent(Event):
    """Nothing has arrived from the provider for ``elapsed`` seconds (sent every few
    seconds while it lasts), so a frontend can show that ketch is waiting, not stuck."""

    type: Literal["waiting"] = "waiting"
    elapsed: float
    timeout: float | None = None  # when ketch gives up waiting (progress_timeout), if known
