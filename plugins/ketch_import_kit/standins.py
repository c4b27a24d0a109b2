"""Putting a stand-in module in ``sys.modules`` before a library imports the real one."""

from __future__ import annotations

import sys
import types
from typing import Any

STANDIN = "__ketch_standin__"  # marks a stand-in, for tests and for anyone debugging


def stand_in(name: str, **attributes: Any) -> bool:
    """Make ``import name`` find an empty module with ``attributes``; False when too late.

    Too late means the real module (or its package, which may import it any time) is
    loaded already: then nothing changes, the only cost is the time it took.
    """
    package = name.rpartition(".")[0]
    if name in sys.modules or (package and package in sys.modules):
        return False
    module = types.ModuleType(name, f"ketch's stand-in for {name} (see ketch_import_kit)")
    module.__dict__.update(attributes)
    setattr(module, STANDIN, True)
    sys.modules[name] = module
    return True
