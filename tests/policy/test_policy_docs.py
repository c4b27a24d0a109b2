"""docs/permissions.md says exactly what the grammar table proves: the lists of
proven programs and transparent wrappers are checked against the table."""

from __future__ import annotations

import re
from pathlib import Path

from ketch_shell_kit.grammar import readers, wrappers

DOC = Path(__file__).resolve().parents[2] / "docs" / "permissions.md"


def _listed(marker: str) -> list[str]:
    text = DOC.read_text(encoding="utf-8")
    match = re.search(rf"<!-- {marker} -->(.*?)<!-- /{marker} -->", text, re.S)
    assert match, f"docs/permissions.md lost its {marker} list"
    return sorted(re.findall(r"`([^`]+)`", match.group(1)))


def test_the_proven_programs_in_the_docs_are_the_tables() -> None:
    assert _listed("proven-programs") == readers()


def test_the_transparent_wrappers_in_the_docs_are_the_tables() -> None:
    assert _listed("wrappers") == wrappers()


def test_the_sandbox_bonus_list_in_the_docs_is_the_policys() -> None:
    from ketch_policy.decide import SANDBOX_CONFINED

    text = DOC.read_text(encoding="utf-8")
    match = re.search(r"without asking,\s+since the sandbox bounds.*?: `(.*?)`\.", text, re.S)
    assert match
    assert sorted(match.group(1).split()) == sorted(SANDBOX_CONFINED)
