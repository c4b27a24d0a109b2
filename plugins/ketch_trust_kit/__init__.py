"""The trust kit: what a workspace holds that can make something run or widen
authority, fingerprinted, and whether the person pinned it. A library: it registers
nothing (the ``ketch_trust`` plugin shows items and pins them; each plugin that runs
or applies workspace content checks its items here first).

An owner plugin builds its items with :func:`make_item` and, before running or
applying one, asks :func:`check` (which says once, in one line, that an unpinned or
changed item is held back, naming it and ``ketch trust``)::

    from ketch_trust_kit import check, make_item

    item = make_item("hook", "Stop #1", ".ketch/config.toml",
                     {"event": "Stop", "command": cmd}, cmd,
                     workspace=kernel.workspace, command=cmd)
    if not check(kernel, item, session=session):
        return  # quarantined: the rest keeps working

It also lists its items for ``ketch trust`` by implementing the trust plugin's hooks
(``trust_items``, ``trust_setting_items``; docs/trust.md). The pins live in the user
config dir (:class:`PinStore`), which no tool call can write.
"""

from __future__ import annotations

from pathlib import Path

from ketch_trust_kit.items import (
    TrustItem,
    canonical,
    command_files,
    file_digest,
    make_item,
    sha256_text,
)
from ketch_trust_kit.quarantine import (
    SUMMARY_PREFIX,
    check,
    message,
    relative_source,
    say_held,
    workspace_config,
)
from ketch_trust_kit.scope import TrustScope
from ketch_trust_kit.store import PinStore, TrustStoreError, workspace_key


def is_pinned(workspace: Path | str, item: TrustItem) -> bool:
    """Whether the person pinned ``item`` for ``workspace`` (the default pin store)."""
    return PinStore().is_pinned(workspace, item)


__all__ = [
    "SUMMARY_PREFIX",
    "PinStore",
    "TrustItem",
    "TrustScope",
    "TrustStoreError",
    "canonical",
    "check",
    "command_files",
    "file_digest",
    "is_pinned",
    "make_item",
    "message",
    "relative_source",
    "say_held",
    "sha256_text",
    "workspace_config",
    "workspace_key",
]
