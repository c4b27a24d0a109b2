"""The pluggy markers plugins decorate their hook specs and implementations with."""

from collections.abc import Callable
from typing import Any, TypeVar

import pluggy

hookspec = pluggy.HookspecMarker("ketch")
hookimpl = pluggy.HookimplMarker("ketch")

FAIL_CLOSED_ATTR = "ketch_fail_closed"
_Spec = TypeVar("_Spec", bound=Callable[..., Any])


def fail_closed(value: Callable[[str, BaseException], Any]) -> Callable[[_Spec], _Spec]:
    """Give a hook spec a fail-closed error policy: an implementation that raises is
    reported once and counts as ``value(plugin_name, exception)`` (a deny, a refusal),
    never as "no answer". Use it where authority is at stake::

        @hookspec
        @fail_closed(lambda plugin, exc: Verdict.deny(f"{plugin} failed"))
        def myplugin_check(call): ...
    """

    def mark(spec: _Spec) -> _Spec:
        setattr(spec, FAIL_CLOSED_ATTR, value)
        return spec

    return mark
