"""The hook the ``early_request`` plugin declares (``ketch_add_hookspecs``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ketch.api import hookspec

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Session


@hookspec
def verbatim_prompts(session: Session) -> str | None:
    """Which first prompts of ``session`` this plugin leaves exactly as typed and lets through.

    Called once, for the first prompt of a fresh ``ketch -p`` session, by the
    ``early_request`` plugin, which sends ``ketch -p``'s first request at launch (before
    any plugin is loaded) when the last run's request, with the new prompt in its place,
    is the request ketch would build. Every plugin that implements
    ``ketch_user_prompt_submit``, ``ketch_expand_prompt`` or ``ketch_build_request`` can
    stop or change a prompt, so each must answer here, or no request is ever sent early.

    :param session: the fresh session, before its first prompt's hooks run.
    :return: a regular expression (Python's ``re`` syntax) that every prompt this plugin
        leaves untouched and lets through matches in full (``(?s).*``: every prompt;
        ``[^@]*``: prompts without an ``@``); None: it may stop or change any prompt in
        this configuration (a hook the person configured, say): nothing is sent early.
        Every plugin's answer is called; a raising one counts as None.
    """
