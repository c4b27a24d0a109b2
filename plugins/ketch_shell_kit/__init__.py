"""The shell kit: what a bash command line would read, write and run.

This package is a library, not a plugin: it registers nothing and has no entry point.
The essential ``guards`` plugin and the ``policy`` plugin both vote from one analysis
made here, so there is one reading of bash and one table of programs, not two.

``analyse(command, cwd, workspace=...)`` parses the line with tree-sitter-bash, walks
every node (:mod:`.parse`; a node it does not handle makes the line *not understood*),
reads every simple command against the grammar table (:mod:`.grammar`, read by
:mod:`.interpret` and :mod:`.getopt`) and returns an :class:`~.model.Analysis`: each
command with the paths it reads, lists and writes (:class:`~.model.PathUse`), and the
reasons it is not proven read-only. :func:`.paths.resolve_use` turns a path use into
the real paths it may name (globs expanded in bash's dialect, every possible cwd).
"""

from __future__ import annotations

import os
from pathlib import Path

from ketch_shell_kit.model import MAX_COMMANDS, Analysis, Command, PathUse, Redirect, harmless_path
from ketch_shell_kit.parse import MAX_DEPTH, MAX_LENGTH
from ketch_shell_kit.words import Word, literal


def analyse(
    command: str,
    cwd: Path | str | None = None,
    *,
    home: Path | None = None,
    workspace: Path | str | None = None,
) -> Analysis:
    """Every simple command and redirection in ``command``, with their effects, or the
    problems that make it not understood."""
    from ketch_shell_kit.parse import Walker

    base = (Path(os.path.abspath(cwd)),) if cwd is not None else ()
    walker = Walker(
        command,
        home or Path.home(),
        Path(workspace) if workspace is not None else (base[0] if base else None),
    )
    walker.script(command, base)
    return walker.analysis


_RECENT: list[tuple[object, tuple[str, str, str], Analysis]] = []


def analyse_for(
    owner: object, command: str, cwd: Path | str | None, workspace: Path | str | None
) -> Analysis:
    """:func:`analyse`, once per ``owner`` (the access being voted on): the guards and
    the policy vote on the same call right after each other and share one analysis.
    Owners are compared by identity and only the last few are kept, so a later call
    (even with the same text) is always analysed afresh."""
    key = (command, str(cwd), str(workspace))
    for held, held_key, analysis in list(_RECENT):
        if held is owner and held_key == key:
            return analysis
    analysis = analyse(command, cwd, workspace=workspace)
    _RECENT.insert(0, (owner, key, analysis))
    del _RECENT[4:]
    return analysis


__all__ = [
    "analyse_for",
    "MAX_COMMANDS", "MAX_DEPTH", "MAX_LENGTH", "Analysis", "Command", "PathUse", "Redirect", "Word", "analyse",
    "harmless_path", "literal",
]  # fmt: skip
