"""Items pinned somewhere other than a workspace: an installed Claude Code plugin's
hooks, MCP servers, ``!`cmd``` lines, skill scripts and agent definitions are pinned
when the person installs it, in a pin file beside the plugin's own folder, keyed by
that folder. A plugin that runs such an item builds it with ``workspace=scope.root``
(its files are named relative to the plugin's folder) and checks it with
``check(kernel, item, scope=scope)``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ketch_trust_kit.store import PinStore


@dataclass(frozen=True)
class TrustScope:
    """``root``: the folder items are relative to, and the key of their pins; ``pins``:
    the pin file; ``hint``: how the person trusts a changed item again (it ends the
    one line that says the item is held back)."""

    root: Path
    pins: Path
    hint: str

    def store(self) -> PinStore:
        return PinStore(self.pins)
