"""The pluggy markers, and what a hook spec declares about its calls.

Every spec says how the one hook caller (:mod:`ketch.hooks`) treats its
implementations; nothing about a hook is restated anywhere else:

* ``@fail_closed(value)``: an implementation that raises (or answers with the wrong
  type) is reported once and counts as ``value(plugin, exception)`` — a deny, a
  refusal — never as "no answer". Without it the failure is reported and skipped.
* ``@returns(Type, ...)``: what a non-None answer must be; any other answer is a
  failure of that implementation (the spec's error policy applies).
* ``@chained("arg")``: each implementation sees the previous one's answer as ``arg``
  (a result filter); the last answer is the hook's.

Kept import-light: plugin entry modules import it (``ketch --help`` included).
"""

from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar

import pluggy

hookspec = pluggy.HookspecMarker("ketch")
hookimpl = pluggy.HookimplMarker("ketch")

FAIL_CLOSED_ATTR = "ketch_fail_closed"
RETURNS_ATTR = "ketch_returns"
CHAINED_ATTR = "ketch_chained"
_Spec = TypeVar("_Spec", bound=Callable[..., Any])


class Answer(NamedTuple):
    """One implementation's non-None answer, with the plugin that gave it."""

    plugin: str
    value: Any


def _mark(attr: str, value: Any) -> Callable[[_Spec], _Spec]:
    def mark(spec: _Spec) -> _Spec:
        setattr(spec, attr, value)
        return spec

    return mark


def fail_closed(value: Callable[[str, BaseException], Any]) -> Callable[[_Spec], _Spec]:
    """Give a hook spec a fail-closed error policy: an implementation that raises is
    reported once and counts as ``value(plugin_name, exception)`` (a deny, a refusal),
    never as "no answer". Use it where authority is at stake::

        @hookspec
        @fail_closed(lambda plugin, exc: Verdict.deny(f"{plugin} failed"))
        def myplugin_check(call): ...
    """
    return _mark(FAIL_CLOSED_ATTR, value)


def returns(*types: type | str) -> Callable[[_Spec], _Spec]:
    """Declare what a non-None answer must be an instance of (any of ``types``; a
    ``"module:Name"`` string is imported when the hook is first called)."""
    return _mark(RETURNS_ATTR, types)


def chained(arg: str) -> Callable[[_Spec], _Spec]:
    """Each implementation gets the previous one's answer as argument ``arg``."""
    return _mark(CHAINED_ATTR, arg)
