"""``ketch -p``'s first request sent at launch: the recording half.

The ``ketch`` console script (:mod:`ketch_early_request_kit.launch`) sends the last
run's first request with the new prompt in its place before ketch loads, when
nothing it was made from has changed. This plugin decides whether this run's first
request may become such a record: a fresh session started as ``ketch -p PROMPT``, and
every plugin that could stop or change the prompt (an implementation of
``ketch_user_prompt_submit``, ``ketch_expand_prompt`` or ``ketch_build_request``) says,
through :func:`~ketch_early_request.hookspecs.verbatim_prompts`, which prompts it
leaves alone. A plugin that does not say stops it (fail closed): a prompt is only sent
early where every hook that could have stopped it is known to let it through.

Disabled (``[plugins] disabled = ["early_request"]``, ``--disable``): no record is
written, and the configuration's change means the last one no longer holds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ketch.api import hookimpl

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import HookVerdict, Session

NAME = "early_request"
# The hooks through which a plugin sees the prompt before the first request.
PROMPT_HOOKS = ("ketch_user_prompt_submit", "ketch_expand_prompt", "ketch_build_request")


@hookimpl
def ketch_add_hookspecs(pluginmanager: Any) -> None:
    from ketch_early_request import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


@hookimpl
def ketch_user_prompt_submit(session: Session, prompt: str) -> HookVerdict | None:
    if session.parent is not None or session.resumed or session.transcript:
        return None
    from ketch_early_request_kit import handoff as kit

    if not kit.launched_here():
        return None  # not a ``ketch -p`` start: nothing it could replay
    patterns = verbatim_patterns(session)
    if patterns is None:
        kit.forget()
    else:
        kit.arm(prompt, patterns)
    return None


@hookimpl(optionalhook=True)
def verbatim_prompts(session: Session) -> str | None:
    return "(?s).*"  # it only looks


def verbatim_patterns(session: Session) -> tuple[str, ...] | None:
    """Every prompt-seeing plugin's pattern, or None when one of them gave none."""
    pm = session.kernel.hooks.pm
    seeing = {
        impl.plugin_name for name in PROMPT_HOOKS for impl in getattr(pm.hook, name).get_hookimpls()
    }
    answers: dict[str, Any] = {}
    for answer in session.kernel.hooks.call("verbatim_prompts", session=session):
        answers[answer.plugin] = answer.value
    patterns = []
    for plugin in sorted(seeing):
        pattern = answers.get(plugin)
        if not isinstance(pattern, str):
            return None
        patterns.append(pattern)
    return tuple(patterns)
