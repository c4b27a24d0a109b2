"""Fuzzing the stdio frontends: a few thousand seeded hostile lines each, judged by "no
traceback, no hang past the deadline, the next valid line still works" (see
tests/fuzz/frontends.py). The seed is fixed per run (``KETCH_FUZZ_SEED`` picks
another); ``benchmarks/fuzz_frontends.py --lines N`` sweeps longer."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.fuzz.frontends import (
    fuzz_acp,
    fuzz_hook_outputs,
    fuzz_prompt_command_outputs,
    fuzz_stream_json,
)

SEED = int(os.environ.get("KETCH_FUZZ_SEED", "20261201"))
pytestmark = pytest.mark.timeout(180)


def test_fuzz_acp(tmp_path: Path) -> None:
    report = fuzz_acp(tmp_path, SEED, 2000)
    assert report.failures == [], "\n".join(report.failures)
    assert report.lines == 2000


def test_fuzz_stream_json_input(tmp_path: Path) -> None:
    report = fuzz_stream_json(tmp_path, SEED, 2000)
    assert report.failures == [], "\n".join(report.failures)
    assert report.lines == 2000


def test_fuzz_hook_outputs(tmp_path: Path) -> None:
    report = fuzz_hook_outputs(tmp_path, SEED, 2000, real=100)
    assert report.failures == [], "\n".join(report.failures)
    assert report.lines == 2100


def test_fuzz_permission_prompt_command_outputs(tmp_path: Path) -> None:
    report = fuzz_prompt_command_outputs(tmp_path, SEED, 2000, real=100)
    assert report.failures == [], "\n".join(report.failures)
    assert report.lines == 2100
