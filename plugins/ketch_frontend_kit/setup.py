"""The first-run setup contract: how a provider plugin's kinds read in a frontend's
"Which provider?" list, so that no frontend knows a provider by name.

A frontend with a setup (the shell) declares it from ``ketch_add_hookspecs``
(``pluginmanager.add_hookspecs(ketch_frontend_kit.setup)``); a provider plugin
implements it with ``@hookimpl(optionalhook=True)``.
"""

from __future__ import annotations

from ketch.api import hookspec, returns


@hookspec
@returns(dict)
def frontend_setup_choices() -> dict[str, dict[str, str]] | None:
    """How this plugin's provider kinds read in a first-run setup:
    ``{KIND: {"label": ..., "any_url": ..., "any_url_name": ...}}``. ``label`` replaces
    the kind's generic line (``KIND: description``); ``any_url``, when given, adds one
    more choice: KIND at a base URL the person types (an API many servers speak), saved
    as ``[providers.<any_url_name>]``. Called when the setup starts. None or {} for
    nothing to add; all results are collected."""
