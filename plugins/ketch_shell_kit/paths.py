"""Where a path word points: every real path it may name, from every possible cwd.

Globs are expanded in bash's dialect (:mod:`.bashglob`); a word bash only knows at
run time, or a relative path whose directory is unknown, names nothing knowable
(``None``): callers treat that as "could be anything".
"""

from __future__ import annotations

import os
from pathlib import Path

from ketch_shell_kit.bashglob import expand
from ketch_shell_kit.words import Word


def resolve_word(word: Word, cwds: tuple[Path, ...]) -> list[str] | None:
    """The real paths ``word`` may name (one per possible cwd, or each glob match, plus
    the literal word, which bash keeps when nothing matches); None when unknowable."""
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
            matches = expand(word.pattern, str(base))
            if matches is None:
                return None
            found.extend(os.path.realpath(os.path.join(base, m)) for m in matches)
        found.append(os.path.realpath(os.path.join(base, value)))
    return list(dict.fromkeys(found))


def expanded_words(word: Word, cwds: tuple[Path, ...]) -> list[str] | None:
    """The words a glob becomes (as bash passes them); None when unknowable."""
    if word.pattern is None:
        return [word.value] if word.value is not None else None
    words: list[str] = []
    for base in cwds or (Path("/"),):
        matches = expand(word.pattern, str(base))
        if matches is None:
            return None
        words.extend(matches)
    return words
