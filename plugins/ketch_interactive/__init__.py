"""ketch_interactive: the interactive shell (``ketch`` on a terminal).

Import-light on purpose: ``ketch --help`` imports every plugin, so prompt_toolkit and
rich load only when the shell actually runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ketch.api import Frontend, hookimpl, provides

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Kernel


def run_shell(kernel: Kernel) -> int:
    from ketch_interactive.shell import run_shell as run

    return run(kernel)


@hookimpl
@provides("shell")
def ketch_register_frontends(register: Callable[[Frontend], None]) -> None:
    register(Frontend(name="shell", run=run_shell, help="the interactive shell", role="terminal"))


@hookimpl
def ketch_add_hookspecs(pluginmanager: object) -> None:
    from ketch_frontend_kit import credentials, setup

    pluginmanager.add_hookspecs(credentials)  # type: ignore[attr-defined]  # its setup keeps keys
    pluginmanager.add_hookspecs(setup)  # type: ignore[attr-defined]  # and lists the providers
