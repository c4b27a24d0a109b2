"""ketch_admin: commands that look at ketch's setup: ``ketch config show|path`` (the
merged settings, each layer and, with ``--origin``, which layer set each value) and
``ketch models`` (what the configured provider lists). See docs/configuration.md.

``ketch plugins`` is the essential ``plugin_list`` plugin's: it must answer with every
other plugin disabled.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ketch.api import Command, hookimpl, provides
from ketch_admin.commands import configure_config, run_config, run_models


@hookimpl
@provides("config", "models")
def ketch_register_commands(register: Callable[[Any], None]) -> None:
    register(
        Command(
            name="config",
            help="show the merged config or where config files live",
            cli=True,
            configure=configure_config,
            run=run_config,
        )
    )
    register(
        Command(
            name="models",
            help="list the models the configured provider offers",
            cli=True,
            run=run_models,
        )
    )
