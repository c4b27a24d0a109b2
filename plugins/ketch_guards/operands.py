"""Which arguments of a command are files it writes, and where a word points.

Only programs whose whole job is changing files are listed (rm, mv, cp, tee, sed -i,
...): for them the operands are write targets the guards check like any other write.
Arbitrary programs (python, make) can write anywhere their code says; for them the
sandbox, not argument reading, is the boundary.
"""

from __future__ import annotations

import glob
import os
from pathlib import Path

from ketch_guards.shell import Part, Word

# program -> how its operands are written: "all" (every operand), "last" (the last
# operand is the destination, the others are read), or a custom marker.
WRITERS: dict[str, str] = {
    "rm": "all", "rmdir": "all", "unlink": "all", "shred": "all", "truncate": "all", "touch": "all",
    "mkdir": "all", "mv": "all", "tee": "all", "chmod": "all", "chown": "all", "chgrp": "all",
    "mkfifo": "all", "mknod": "all", "cp": "last", "ln": "last", "install": "last", "rsync": "last",
    "dd": "dd", "sed": "sed", "perl": "perl", "git": "git",
}
# Options of those programs that take a value (so the value is not an operand).
_VALUE_OPTIONS: dict[str, frozenset[str]] = {
    "install": frozenset({"-m", "-o", "-g", "-S", "--mode", "--owner", "--group", "--suffix"}),
    "cp": frozenset({"-S", "--suffix"}),
    "mv": frozenset({"-S", "--suffix"}),
    "ln": frozenset({"-S", "--suffix"}),
    "truncate": frozenset({"-s", "--size", "-r", "--reference"}),
    "chmod": frozenset({"--reference"}),
    "chown": frozenset({"--reference", "--from"}),
    "mkdir": frozenset({"-m", "--mode", "-Z", "--context"}),
    "sed": frozenset({"-e", "-f", "-l", "--expression", "--file", "--line-length"}),
    "tee": frozenset(),
    "shred": frozenset({"-n", "-s", "--iterations", "--size", "--random-source"}),
}
MAX_GLOB_MATCHES = 2000


def operands(part: Part) -> list[Word]:
    """The non-option arguments (after ``--`` everything is an operand)."""
    name = part.name or ""
    takes_value = _VALUE_OPTIONS.get(name, frozenset())
    result: list[Word] = []
    words = part.args
    index = 0
    only_operands = False
    while index < len(words):
        word = words[index]
        value = word.value
        if only_operands or value is None:
            result.append(word)
        elif value == "--":
            only_operands = True
        elif value.startswith("-") and value != "-":
            head = value.split("=", 1)[0]
            if head in takes_value and "=" not in value:
                index += 1
        else:
            result.append(word)
        index += 1
    return result


def _target_directory(part: Part) -> list[Word]:
    words = part.args
    found: list[Word] = []
    for index, word in enumerate(words):
        value = word.value or ""
        if value in ("-t", "--target-directory") and index + 1 < len(words):
            found.append(words[index + 1])
        elif value.startswith("--target-directory="):
            found.append(Word(value.split("=", 1)[1], word.source))
        elif value.startswith("-t") and len(value) > 2 and not value.startswith("--"):
            found.append(Word(value[2:], word.source))
    return found


def written_files(part: Part) -> list[Word]:
    """Words naming files this part writes (as far as its program is known)."""
    name = part.name or ""
    how = WRITERS.get(name)
    if how is None:
        return []
    items = operands(part)
    if how == "all":
        return items
    if how == "last":
        targets = _target_directory(part)
        if targets:
            return targets
        return items[-1:] if len(items) > 1 or name == "install" else items
    if how == "dd":
        return [Word(w.value[3:], w.source) for w in part.args if (w.value or "").startswith("of=")] + [
            w for w in part.args if w.value is None
        ]
    if how == "sed":
        if not _in_place(part, "el", "--in-place"):
            return []
        if not any((w.value or "").startswith(("-e", "--expression", "-f", "--file")) for w in part.args):
            return items[1:]  # the first operand is the script
        return items
    if how == "perl":
        return [w for w in items if not (w.value or "").startswith("-")] if _in_place(part, "eEIlMmxCd0", None) else []
    return []


def writes_files(part: Part) -> bool:
    """Whether this part's program writes the files it is given (rm, cp, sed -i...)."""
    how = WRITERS.get(part.name or "")
    if how in ("all", "last", "dd"):
        return True
    if how == "sed":
        return _in_place(part, "el", "--in-place")
    if how == "perl":
        return _in_place(part, "eEIlMmxCd0", None)
    return False


def git_config_write(part: Part) -> str | None:
    """'local' or 'global' when this is a ``git config`` that writes, else None."""
    if part.name != "git":
        return None
    args = [w.value for w in part.args]
    index = 0
    while index < len(args) and (args[index] or "").startswith("-"):
        index += 2 if args[index] in ("-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env") else 1
    if index >= len(args) or args[index] != "config":
        return None
    rest = args[index + 1 :]
    if any(v is None for v in rest):
        return "local"
    flags = [v for v in rest if v and v.startswith("-")]
    positional = [v for v in rest if v and not v.startswith("-")]
    scope = "global" if any(f in ("--global", "--system") or f.startswith("--file") or f == "-f" for f in flags) else "local"
    reading = {"--get", "--get-all", "--get-regexp", "--get-urlmatch", "--list", "-l", "--get-color", "--get-colorbool"}
    writing = {"--add", "--unset", "--unset-all", "--replace-all", "--rename-section", "--remove-section", "--edit", "-e"}
    if any(f.split("=")[0] in writing for f in flags):
        return scope
    if positional[:1] in (["get"], ["list"]):
        return None
    if positional[:1] in (["set"], ["unset"], ["rename-section"], ["remove-section"], ["edit"]):
        return scope
    if any(f.split("=")[0] in reading for f in flags):
        return None
    return scope if len(positional) >= 2 else None


def _in_place(part: Part, value_letters: str, long_name: str | None) -> bool:
    """Whether an in-place flag (``-i``, clustered or abbreviated) is given."""
    for word in part.args:
        value = word.value
        if value is None:
            return True  # could be -i
        head = value.split("=", 1)[0]
        if value.startswith("--"):
            if long_name and len(head) >= 4 and long_name.startswith(head):
                return True
            continue
        if value.startswith("-"):
            for letter in value[1:]:
                if letter == "i":
                    return True
                if letter in value_letters:
                    break
    return False


def resolve_word(word: Word, cwds: tuple[Path, ...]) -> list[str] | None:
    """The real paths a word may name (one per possible cwd, or each glob match);
    None when that cannot be known (an expansion, or an unknown cwd for a relative path)."""
    value = word.value
    if value is None:
        return None
    absolute = os.path.isabs(value)
    if not absolute and not cwds:
        return None
    bases = [Path("/")] if absolute else list(cwds)
    found: list[str] = []
    for base in bases:
        if word.pattern is not None:
            pattern = word.pattern if absolute else os.path.join(glob.escape(str(base)), word.pattern)
            matches = glob.glob(pattern)
            if len(matches) > MAX_GLOB_MATCHES:
                return None
            found.extend(os.path.realpath(m) for m in matches)
            # No match: bash passes the pattern on as written.
            found.append(os.path.realpath(os.path.join(base, value)))
        else:
            found.append(os.path.realpath(os.path.join(base, value)))
    return list(dict.fromkeys(found))
