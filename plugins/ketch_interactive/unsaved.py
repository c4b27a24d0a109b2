"""Before the shell's session starts: a store that exists but cannot be opened is asked
about (continue unsaved, or stop), never silently skipped. ``--no-save`` asks nothing."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Kernel


def continue_unsaved(kernel: Kernel) -> bool:
    """False when the user would rather stop than work unsaved."""
    from ketch.api import StoreUnavailable

    try:
        _ = kernel.store
    except StoreUnavailable as exc:
        if not exc.exists or getattr(kernel.args, "no_save", False):
            return True  # nothing to lose: the session's notice says it is unsaved
        print(f"ketch: {exc.message}", file=sys.stderr)
        try:
            answer = input("Continue without saving this session? [y/N] ")
        except (EOFError, KeyboardInterrupt):
            answer = ""
        return answer.strip().lower() in ("y", "yes")
    return True
