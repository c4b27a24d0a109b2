"""The hooks the trust plugin declares: how each plugin that runs or applies workspace
content lists its items. Implement them with ``@hookimpl(optionalhook=True)`` (so
your plugin still loads when the trust plugin is disabled), build items with
``ketch_trust_kit.make_item``, and before running one, ``ketch_trust_kit.check`` it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ketch.api import hookspec

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Kernel
    from ketch_trust_kit import TrustItem


@hookspec
def trust_items(kernel: Kernel) -> list[TrustItem] | None:
    """The workspace items this plugin runs or applies, other than values of the
    workspace's ``.ketch/config.toml`` (those come from ``trust_setting_items``).

    Called when ``ketch trust`` or ``/trust`` lists what a workspace holds (and by the
    shell's first-run offer), once per listing. Return every item of yours in
    ``kernel.workspace`` — ``!`cmd``` lines of commands, skills' scripts, agent
    definitions, another tool's files you read — pinned or not, each built with
    ``ketch_trust_kit.make_item``; None or [] when there are none. Do not read
    ``kernel.settings`` for workspace content: read the files. All results are
    collected.
    """


@hookspec(firstresult=True)
def trust_setting_items(kernel: Kernel, key: tuple[str, ...], value: Any) -> list[TrustItem] | None:
    """Split one held-back value of the workspace's ``.ketch/config.toml`` into the
    items the person trusts one by one.

    Called while settings load (for each value the kernel holds back) and when
    ``ketch trust`` lists a workspace. ``key`` is the value's path of table names
    (``("hooks",)``, ``("permissions", "allow")``), ``value`` as written. The plugin
    that owns that table returns its items, each with ``setting`` set to its place
    under ``key`` (``("hooks", "Stop", 0)``); together they must cover the whole value
    (a part no item covers never applies). Return None for a key that is not yours:
    the value is then one item as a whole. Must not read ``kernel.settings``. Stops at
    the first non-None result.
    """
