"""What one analysis of a command line yields: its simple commands and their effects."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from ketch_shell_kit.words import Word

# Operators that write to their target, and those that only read it.
WRITE_OPS = frozenset({">", ">>", ">|", "&>", "&>>", "<>", ">&"})
READ_OPS = frozenset({"<", "<>"})
# Redirect targets that are not files anyone keeps.
HARMLESS_TARGETS = frozenset(
    {"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/stdin", "/dev/tty", "/dev/zero"}
)


def harmless_path(value: str | None) -> bool:
    """A device or pipe path, not a file anyone keeps: /dev/null, /dev/fd/63."""
    return value is not None and (
        value in HARMLESS_TARGETS or re.fullmatch(r"/dev/fd/\d+", value) is not None
    )


@dataclass(frozen=True)
class Redirect:
    op: str
    target: Word | None = None  # None for fd duplication/closing, heredocs, here-strings
    fd: str | None = None
    cwds: tuple[Path, ...] = ()

    @property
    def writes(self) -> bool:
        return self.target is not None and self.op in WRITE_OPS

    @property
    def reads(self) -> bool:
        return self.target is not None and self.op in READ_OPS

    @property
    def harmless(self) -> bool:
        return harmless_path(self.target.value if self.target else None)


@dataclass(frozen=True)
class PathUse:
    """A word a command uses as a path. ``kind``: ``read`` (its content), ``tree`` (a
    directory's whole content, recursively; ``vtree``: hidden entries skipped), ``list`` (names and metadata only),
    ``write`` (created, changed or removed), ``link`` (a link to it is made)."""

    word: Word
    kind: str
    cwds: tuple[Path, ...]
    why: str = ""
    # For ``tree``/``vtree``: how this program walks the tree (:class:`ketch_shell_kit.reach.Walk`);
    # None: every entry, hidden ones included (``tree``) or rg's defaults (``vtree``).
    walk: object | None = None


@dataclass(frozen=True)
class Command:
    """One simple command as it would run, after unwrapping wrappers, with its effects."""

    argv: tuple[Word, ...]
    assignments: tuple[tuple[str, Word], ...] = ()  # NAME=value given to its environment
    wrappers: tuple[tuple[Word, ...], ...] = ()  # the commands that ran this one, outermost first
    cwds: tuple[Path, ...] = ()  # directories it may run in; empty = unknown
    extra_args: bool = False  # arguments only known at run time are appended (xargs, find -exec)
    privileged: bool = False  # sudo/doas/su/pkexec/run0 somewhere in the chain
    kind: str = "command"  # command | assignment | declaration
    known: bool = False  # the grammar table describes this program
    reasons: tuple[str, ...] = ()  # why it is not proven read-only (empty: it is)
    hidden: tuple[str, ...] = ()  # why the guards cannot see all it writes or runs
    uses: tuple[PathUse, ...] = ()  # the paths it reads, lists and writes
    links: bool = False  # it makes links (a later read in the line may go through one)
    network: bool = False
    # git status/diff/describe refresh the stat cache in .git/index when they can take
    # its lock: read-only in every other way, and harmless where .git is read-only.
    index_refresh: bool = False

    @property
    def read_only(self) -> bool:
        return not self.reasons

    @property
    def program(self) -> str | None:
        return self.argv[0].value if self.argv else None

    @property
    def name(self) -> str | None:
        """The program's base name (``/usr/bin/rm`` -> ``rm``)."""
        program = self.program
        return os.path.basename(program) if program else program

    @property
    def args(self) -> tuple[Word, ...]:
        return self.argv[1:]

    @property
    def reads(self) -> tuple[PathUse, ...]:
        return tuple(u for u in self.uses if u.kind in ("read", "tree", "vtree", "list", "link"))

    @property
    def writes(self) -> tuple[PathUse, ...]:
        return tuple(u for u in self.uses if u.kind == "write")

    @property
    def text(self) -> str:
        words = [f"{k}={v.source}" for k, v in self.assignments] + [w.source for w in self.argv]
        return " ".join(words) + (" …" if self.extra_args else "")


MAX_COMMANDS = 50  # more simple commands than this is refused outright
# Files whose content decides what a recursive reader reads (rg, git).
IGNORE_FILES = frozenset({".ignore", ".rgignore", ".gitignore", ".gitmodules", ".gitattributes"})


@dataclass
class Analysis:
    command: str
    parts: list[Command] = field(default_factory=list)
    redirects: list[Redirect] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def understood(self) -> bool:
        return not self.problems

    @property
    def too_complex(self) -> bool:
        return len(self.parts) > MAX_COMMANDS

    @property
    def selection_rewritten(self) -> str | None:
        """A redirect writes an ignore file (or into ``.git``) in a line that also reads a
        tree recursively: what the reader picks is decided after the proof looked (a
        ``!.env`` whitelist written first). The target, or None."""
        if not any(u.kind in ("tree", "vtree") for p in self.parts for u in p.uses):
            return None
        for redirect in self.redirects:
            if not redirect.writes or redirect.target is None:
                continue
            value = redirect.target.value
            if value is None:
                return redirect.target.source
            parts = value.replace("\\", "/").split("/")
            if parts[-1] in IGNORE_FILES or ".git" in parts:
                return value
        return None

    @property
    def read_only(self) -> bool:
        """Every part is proven read-only and no redirect writes a file (paths unchecked)."""
        return (
            self.understood
            and not self.too_complex
            and all(p.read_only for p in self.parts)
            and not any(r.writes and not r.harmless for r in self.redirects)
        )
