"""Trusting a test workspace's items the way ``ketch trust --yes`` does, for tests that
build a kernel in-process (a :class:`~ketch.testing.Harness`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ketch.testing.harness import patched_environ

if TYPE_CHECKING:  # pragma: no cover
    from ketch.testing import Harness
    from ketch_trust_kit import TrustItem


def harness_env(h: Harness) -> dict[str, str]:
    return {k: v for k, v in h.environ.items() if k.startswith(("KETCH_", "XDG_"))}


def items_of(h: Harness) -> list[TrustItem]:
    from ketch_trust import hookspecs
    from ketch_trust.review import workspace_items
    from ketch_trust_kit import PinStore

    # As `ketch trust` lists them: with the trust plugin's hooks declared, also where the
    # test loads the plugins that own items without the trust plugin itself.
    h.kernel.pm.add_hookspecs(hookspecs)

    with patched_environ(harness_env(h)):
        return workspace_items(h.kernel, PinStore())


def trust_all(h: Harness) -> list[TrustItem]:
    """Pin every item of the harness's workspace (as listed now) and reload settings."""
    from ketch_trust_kit import PinStore

    items = items_of(h)
    with patched_environ(harness_env(h)):
        PinStore().pin(h.workspace, items)
        h.kernel.reload_settings()
    return items
