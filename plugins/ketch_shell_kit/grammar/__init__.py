"""The grammar table: every program ketch can read, in one place.

Plain data in Python modules (no file to read at run time, comments beside the
entries, and a typo is an import-time error the table tests catch): each entry is a
:class:`~ketch_shell_kit.grammar.spec.Program` written in the notation of
:mod:`ketch_shell_kit.grammar.spec`. The guards (what is read, written, run) and the
policy (is it read-only) read the same entries; nothing else lists programs.
"""

from __future__ import annotations

from ketch_shell_kit.grammar.coreutils import PS, READERS, WRITERS
from ketch_shell_kit.grammar.git import GIT
from ketch_shell_kit.grammar.search import FIND, SEARCH
from ketch_shell_kit.grammar.shell import BUILTIN_NAMES, BUILTIN_PROGRAMS, SHELLS, WRAPPERS
from ketch_shell_kit.grammar.spec import Program

TABLE: dict[str, Program] = {}
for _entry in [*BUILTIN_PROGRAMS, *READERS, *SEARCH, FIND, PS, *WRITERS, *SHELLS, *WRAPPERS, GIT]:
    if _entry.name in TABLE:  # pragma: no cover - caught by the table tests
        raise ValueError(f"the grammar lists {_entry.name} twice")
    TABLE[_entry.name] = _entry

BUILTINS = BUILTIN_NAMES

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
