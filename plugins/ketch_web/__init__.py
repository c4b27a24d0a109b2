"""ketch_web: the ``web_fetch`` tool (http/https GET, size and time caps, HTML as
Markdown, redirects to other hosts re-checked through the policy). See docs/tools.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ketch import hookimpl
from ketch.plugins import provides


@hookimpl
@provides("web_fetch")
def ketch_register_tools(register: Callable[[Any], None]) -> None:
    from ketch_web.tool import WebFetch

    register(WebFetch())
