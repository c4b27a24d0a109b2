"""The grammar table: every program ketch can read, in one place.

The table is data, ``grammar.json`` beside this module (package data; its contract is
:mod:`.schema`, its vocabulary :mod:`.spec`), read once per process by :mod:`.table`.
What a table cannot say is code, named by an entry's ``handler``: the readers in
:mod:`ketch_shell_kit.interpret` and :mod:`.git`, awk's parser in :mod:`.awk`, the
sed/jq checkers in :mod:`.scripts`. The guards (what is read, written, run) and the
policy (is it read-only) read the same entries; nothing else lists programs.
"""

from __future__ import annotations

from collections.abc import Mapping

from ketch_shell_kit.grammar.spec import Program
from ketch_shell_kit.grammar.table import load

_GRAMMAR = load()
TABLE: Mapping[str, Program] = _GRAMMAR.programs
BUILTINS: frozenset[str] = _GRAMMAR.builtins

__all__ = ["BUILTINS", "TABLE", "Program", "readers", "wrappers"]


def readers() -> list[str]:
    """Programs of which some invocations are proven read-only (docs/permissions.md
    lists exactly these; a test keeps the two the same)."""
    return sorted(
        name
        for name, program in TABLE.items()
        if not program.reason
        and not program.privileged
        and not program.steers
        and not any(o.type == "cmd" for o in program.operands)
        and program.handler not in ("shell", "eval", "watch", "su", "dd", "time")
    )


def wrappers() -> list[str]:
    """Programs that run another command and are themselves harmless with harmless
    options (GNU time is listed as ``time``, the keyword's name)."""
    found = {
        name
        for name, program in TABLE.items()
        if any(o.type == "cmd" for o in program.operands)
        and not program.privileged
        and not program.reason
    }
    return sorted(found - {"gnu-time"} | {"time"})
