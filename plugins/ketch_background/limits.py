"""The cost cap while runs go on, and the model's ``ketch attach``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Kernel, ProposedCall


def check_cost(kernel: Kernel, live: Any) -> None:
    """Stop this run's turn (a KetchError: it ends with that message) once the running
    background sessions together cost more than ``[background] max_cost_usd``."""
    from ketch.api import KetchError
    from ketch_background.registry import live_runs
    from ketch_background.settings import BackgroundSettings

    cap = kernel.settings.of(BackgroundSettings).max_cost_usd
    if cap is None:
        return
    others = sum(s.cost_usd for s in live_runs() if s.run != live.run)
    total = others + live.cost
    if total > cap:
        raise KetchError(
            f"the running background sessions have cost ${total:.4f} together, past the "
            f"[background] max_cost_usd limit (${cap:.4f}); this one stops here "
            "(raise the limit in your config.toml to go further)"
        )


def runs_ketch_attach(call: ProposedCall) -> bool:
    """Whether a tool call's command line runs ``ketch ... attach``."""
    from ketch_policy_kit.commands import runs_ketch

    return runs_ketch(call, "attach")
