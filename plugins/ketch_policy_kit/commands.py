"""Whether a tool call runs one of ketch's own commands (``ketch trust``, ``ketch
attach``): the plugins that own those commands vote *ask* on such calls in every
profile, because only the person may pin trust or answer a background session."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import ProposedCall


@lru_cache(maxsize=8)
def _pattern(subcommand: str) -> re.Pattern[str]:
    word = re.escape(subcommand)
    return re.compile(rf"(?<![\w.-])ketch(?![\w.-]).*?(?<![\w-]){word}(?![\w-])", re.S)


def runs_ketch(call: ProposedCall, subcommand: str) -> bool:
    """Whether ``call``'s command line runs ``ketch ... SUBCOMMAND`` (``python -m ketch``
    and paths to it included; a command hidden from the text, under full-access without
    the sandbox, is not seen: docs/trust.md)."""
    from ketch.api import Effect

    if not any(a.effect == Effect.EXECUTE for a in call.accesses):
        return False
    command = call.input.get("command")
    texts = [command] if isinstance(command, str) else []
    if isinstance(command, list):
        texts.append(" ".join(map(str, command)))
    pattern = _pattern(subcommand)
    return any(pattern.search(text) for text in texts)
