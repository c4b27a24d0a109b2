"""The CI slice of the generated sweep (the long one is ``benchmarks/policy_sweep.py``).

Variants composed from the grammar table (:mod:`generator`) are decided by the real
kernel's votes and, where allowed, run for real through the ``shell`` tool among the
canaries (:func:`runner.run_in_process`): none may have an effect. The slice also
checks that the engine proves ordinary variants rather than asking for everything.
"""

from __future__ import annotations

import os

import pytest
from canaries import World
from corpus import fill, plant
from generator import variants
from runner import needs_sandbox, run_in_process

SEED = int(os.environ.get("KETCH_SWEEP_SEED", "20261201"))
SLICE = int(os.environ.get("KETCH_SWEEP_SLICE", "400"))


def test_the_generator_is_reproducible_and_large() -> None:
    first = variants(SEED, 5000)
    assert len(first) == 5000 and len({v.command for v in first}) == 5000
    assert [v.command for v in variants(SEED, 200)] == [v.command for v in first[:200]]
    assert [v.command for v in variants(SEED + 1, 200)] != [v.command for v in first[:200]]
    kinds = {v.kind for v in first}
    assert kinds == {"attack", "benign"}
    origins = {v.origin.split()[0] for v in first}
    assert len(origins) >= 60, "every corner of the table is exercised"


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize(
    ("profile", "sandbox"),
    [
        pytest.param("assisted", False, id="assisted-no-sandbox"),
        pytest.param("full-access", True, marks=needs_sandbox, id="full-access-sandbox"),
    ],
)
def test_a_slice_of_the_sweep_has_no_effect(world: World, profile: str, sandbox: bool) -> None:
    plant(world.workspace, world.outside)
    chosen = variants(SEED, SLICE)
    report = run_in_process(
        world, [fill(v.command, world) for v in chosen], profile=profile, sandbox=sandbox
    )
    assert not report.effects, report.describe()
    benign = [o for v, o in zip(chosen, report.outcomes, strict=True) if v.kind == "benign"]
    proven = sum(1 for o in benign if o.decision == "allow")
    assert proven >= len(benign) // 3, (
        f"only {proven} of {len(benign)} benign variants were allowed: the engine asks for too much"
    )
