"""Finding secrets in text and replacing them, in one pass over the spans found.

Two kinds of needles:

* known values: the process's own secret-looking environment variables
  (``ketch_secret_kit.names.secret_variable``: ``*KEY*``, ``*TOKEN*``, ``*SECRET*``,
  ``*PASSWORD*``, ``*_PWD``, ``*PASS*``, ``*AUTH*``, ``*DSN*``...) and the API keys the kernel resolved (environment or keyring),
  each also in base64 (three alignments), as printed by ``base64`` or a Basic
  ``Authorization`` header. Values shorter than :data:`MIN_VALUE` are left alone, so
  ``DEBUG_TOKEN=1`` does not turn every "1" into a marker;
* secrets found by content, with the rules that classify files
  (:func:`ketch_secret_kit.content.findings`): well-known credential formats, the
  password or token in a URL's userinfo (``https://user:TOKEN@host``), and secret-looking
  values in assignment context (``password = ...``).

Every match becomes ``[REDACTED NAME]``; overlapping matches merge into one. Known
values are searched with ``str.find`` (C speed, no regex); a format's pattern runs
only when one of its literal triggers is in the text, and starts with that literal
so the regex engine can jump between candidates; a megabyte of output costs a few
milliseconds (``benchmarks/sandbox.py`` measures it).
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ketch_secret_kit.content import findings
from ketch_secret_kit.names import secret_variable

MIN_VALUE = 8


def _base64_forms(value: str) -> list[str]:
    raw = value.encode()
    forms = []
    for pad in range(3):
        encoded = base64.b64encode(b"\0" * pad + raw).decode()
        core = encoded[
            4 if pad else 0 : -4
        ]  # drop the group holding padding, and the last partial one
        if len(core) >= MIN_VALUE:
            forms.append(core)
    return forms


@dataclass(frozen=True)
class Redacted:
    text: str
    count: int


class Redactor:
    def __init__(self, values: Mapping[str, str]) -> None:
        """``values``: secret text -> the name shown in its marker (``env:OPENAI_API_KEY``)."""
        needles: dict[str, str] = {}
        for value, name in values.items():
            if len(value) < MIN_VALUE:
                continue
            needles.setdefault(value, name)
            for form in _base64_forms(value):
                needles.setdefault(form, name)
        # Longest first, so a value inside a longer one does not split it.
        self.needles = sorted(needles.items(), key=lambda item: -len(item[0]))

    @classmethod
    def of(cls, environ: Mapping[str, str], known: Iterable[tuple[str, str]] = ()) -> Redactor:
        values = {
            value: f"env:{name}"
            for name, value in environ.items()
            if value and secret_variable(name, value)
        }
        for value, name in known:
            values.setdefault(value, name)
        return cls(values)

    def spans(self, text: str) -> list[tuple[int, int, str]]:
        found: list[tuple[int, int, str]] = []
        for needle, name in self.needles:
            start = text.find(needle)
            while start != -1:
                found.append((start, start + len(needle), name))
                start = text.find(needle, start + len(needle))
        found += [(f.start, f.end, f.name) for f in findings(text)]
        return found

    def redact(self, text: str) -> Redacted:
        if not text:
            return Redacted(text, 0)
        spans = sorted(self.spans(text))
        if not spans:
            return Redacted(text, 0)
        pieces: list[str] = []
        position = 0
        count = 0
        current: tuple[int, int, str] | None = None
        for start, end, name in spans:
            if current is not None and start < current[1]:  # overlaps: one marker for both
                current = (current[0], max(current[1], end), current[2])
                continue
            if current is not None:
                pieces += [text[position : current[0]], f"[REDACTED {current[2]}]"]
                position = current[1]
                count += 1
            current = (start, end, name)
        assert current is not None
        pieces += [text[position : current[0]], f"[REDACTED {current[2]}]", text[current[1] :]]
        return Redacted("".join(pieces), count + 1)
