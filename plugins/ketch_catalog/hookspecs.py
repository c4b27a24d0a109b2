"""The hook the catalog declares (``ketch_add_hookspecs``): which provider kinds run
their models on this machine, so that the catalog prices them at 0 without knowing any
provider by name."""

from __future__ import annotations

from ketch.api import hookspec, returns


@hookspec
@returns(list, tuple, frozenset, set)
def catalog_local_kinds() -> list[str] | None:
    """The provider kinds this plugin registers whose models run on this machine
    (Ollama's): whatever a vendor charges for the same model, a run costs nothing.
    Return the kinds, or None. Called when the catalog answers ``ketch_model_info``.
    All results are collected."""
