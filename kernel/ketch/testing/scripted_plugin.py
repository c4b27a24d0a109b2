"""Load with ``KETCH_LOAD=ketch.testing.scripted_plugin`` to give a CLI subprocess the
``scripted`` provider kind. ``KETCH_SCRIPT`` names the JSON script; the remaining
script is written back to it after each response, so ``--continue`` runs go on
consuming it. ``KETCH_SCRIPT_LOG`` (optional) receives every request as a JSON line.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ketch.markers import hookimpl


@hookimpl
def ketch_register_providers(register: Any) -> None:
    from ketch.testing.scripted import scripted_kind

    script = os.environ.get("KETCH_SCRIPT")
    log = os.environ.get("KETCH_SCRIPT_LOG")
    register(
        scripted_kind(
            [], log_path=Path(log) if log else None, state_path=Path(script) if script else None
        )
    )
