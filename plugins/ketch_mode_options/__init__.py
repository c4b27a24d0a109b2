"""ketch_mode_options: ``--mode`` and ``--profile`` on the command line (essential).

The kernel keeps the registries of modes and profiles (``ketch_register_modes``,
``ketch_register_profiles``) and holds a session's mode and profile to them; this plugin
offers them as the main command line's choices, each listed with its description and
the default, when some plugin declares any. Essential, so that whichever plugin declares
modes (the policy plugin, a third-party one), a person can choose one under any
allow-list. With ``KETCH_AUTOLOAD=none`` nothing is discovered, this plugin included
(``KETCH_LOAD=mode_options=ketch_mode_options`` brings it back).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ketch.api import hookimpl

if TYPE_CHECKING:  # pragma: no cover
    import argparse

    from ketch.api import Kernel


@hookimpl(tryfirst=True)  # beside the kernel's own options, before other plugins'
def ketch_add_cli_options(parser: argparse.ArgumentParser, kernel: Kernel) -> None:
    if kernel.modes:
        modes = ", ".join(
            f"{m.name}: {m.description}" if m.description else m.name for m in kernel.modes.values()
        )
        parser.add_argument(
            "--mode", choices=list(kernel.modes), help=f"{modes} (default: {kernel.default_mode()})"
        )
    if kernel.profiles:
        parser.add_argument(
            "--profile",
            choices=list(kernel.profiles),
            help=f"what runs without asking (default: {kernel.default_profile()})",
        )
