"""The ``[background]`` table: this machine's limits on background runs."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from ketch.api import SettingsSection


class BackgroundSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # Background sessions running (or waiting for an approval) at once on this machine;
    # one more is refused, saying so.
    max_running: int = Field(4, ge=1, le=256)
    # USD the running background sessions may cost together; a new one is refused at
    # the limit, and a running one that takes the total past it stops at that step.
    # None: no limit (a model without a known price counts nothing).
    max_cost_usd: float | None = Field(None, ge=0)
    # Seconds `ketch stop` gives a run to end its turn cleanly before it is killed.
    stop_grace: float = Field(10.0, gt=0, le=600)
    # Seconds `ketch -p … --background` waits for the run to start (a --resume may wait
    # for another ketch that holds the session).
    start_timeout: float = Field(120.0, gt=0, le=3600)


# Limits are the person's: a repository's config sets none of them.
BACKGROUND = SettingsSection("background", BackgroundSettings)
