"""ketch-git: read-only git tools for ketch (git_status, git_diff, git_log, git_show,
git_blame).

The entry module stays light, as ketch asks of every plugin: ``ketch --help`` imports
it, so the tools (pydantic models, subprocess code) are imported only when ketch asks
for tools.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ketch.api import hookimpl

__version__ = "0.1.0"


@hookimpl
def ketch_register_tools(register: Callable[[Any], None]) -> None:
    from ketch_git.tools import TOOLS

    for tool in TOOLS:
        register(tool)
