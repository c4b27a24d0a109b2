"""ketch_search: the ``grep`` tool (ripgrep when on PATH, else pure Python; same output).

Untrusted patterns always go after ``--``; no ``--pre``-style option is reachable.
See docs/tools.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ketch.api import hookimpl, provides


@hookimpl
@provides("grep")
def ketch_register_tools(register: Callable[[Any], None]) -> None:
    from ketch_search.grep import Grep

    register(Grep())
