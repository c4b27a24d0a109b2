"""The long generated sweep of the permission engine, judged by effects.

    .venv/bin/python benchmarks/policy_sweep.py [--count 5000] [--seed 20261201] [--configs all] [--json]

Composes ``--count`` variants from the grammar table (tests/security/generator.py:
wrappers x option spellings x expansions x quoting x separators, attacks aimed at the
canaries and benign ones on workspace files), then for each configuration --
``assisted`` without a sandbox (proof alone), ``assisted`` and ``full-access`` with the
sandbox -- decides every variant through a real kernel's votes and runs what was
allowed, for real, through the ``shell`` tool among the canaries
(tests/security/runner.py). Reports, per configuration: variants proven (allowed) vs
asked vs denied, benign variants proven, effects (must be 0), and the time; plus the
engine's own speed (votes per second, guards and policy together, on the corpus and
the sweep). ``--json`` prints one JSON object instead (the form benchmarks/run.py
reads; the lines go to stderr), with a target "effects = 0" per configuration. Exits 1
on any effect. Not a test; the CI slice is tests/security/test_sweep_effects.py.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [
    str(ROOT / "kernel"),
    str(ROOT / "plugins"),
    str(ROOT / "tests" / "security"),
    str(ROOT),
]

from canaries import World, default_base  # noqa: E402
from corpus import commands as corpus_commands  # noqa: E402
from corpus import fill, plant  # noqa: E402
from generator import variants  # noqa: E402
from runner import run_in_process  # noqa: E402

CONFIGS = {
    "assisted-no-sandbox": ("assisted", False),
    "assisted-sandbox": ("assisted", True),
    "full-access-sandbox": ("full-access", True),
}


def votes_per_second(world: World, texts: list[str]) -> tuple[float, float]:
    """Guards and policy combined (as the loop combines them), per command: (votes/s, worst ms)."""
    from tests.policy.policy_kit import shell_call, snapshot

    from ketch.policy import combine_votes
    from ketch_guards.guards import vote as guards_vote
    from ketch_policy.decide import vote as policy_vote

    snap = snapshot(world.workspace, "assisted")
    worst = 0.0
    start = time.perf_counter()
    for text in texts:
        one = time.perf_counter()
        call = shell_call(text, world.workspace)
        combine_votes([policy_vote(call, snap), guards_vote(call, snap)])
        worst = max(worst, time.perf_counter() - one)
    elapsed = time.perf_counter() - start
    return len(texts) / elapsed, worst * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=20261201)
    parser.add_argument("--configs", default="all", help="comma-separated: " + ", ".join(CONFIGS))
    parser.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object (the form benchmarks/run.py reads); the lines go to stderr",
    )
    args = parser.parse_args()
    say = functools.partial(print, file=sys.stderr, flush=True) if args.json else print
    chosen = list(CONFIGS) if args.configs == "all" else args.configs.split(",")
    generated = variants(args.seed, args.count)
    kinds = Counter(v.kind for v in generated)
    say(f"{len(generated)} variants (seed {args.seed}): {kinds}")
    failures = 0
    rows: list[dict[str, Any]] = []
    targets: list[dict[str, Any]] = []
    notes: list[str] = []
    world = World.create(default_base())
    try:
        plant(world.workspace, world.outside)
        texts = [fill(v.command, world) for v in generated]
        corpus = corpus_commands(world)
        for label, sample in (("corpus", corpus), ("sweep", texts)):
            rate, worst = votes_per_second(world, sample)
            say(
                f"engine speed on the {label}: {rate:,.0f} votes/s ({1000 / rate:.2f} ms mean, {worst:.1f} ms worst) over {len(sample)} commands"
            )
            rows.append(
                {
                    "measure": f"votes/s on the {label} (guards and policy)",
                    "value": round(rate),
                    "unit": "votes/s",
                    "commands": len(sample),
                    "mean_ms": round(1000 / rate, 3),
                    "worst_ms": round(worst, 2),
                }
            )
        for name in chosen:
            profile, sandbox = CONFIGS[name]
            world.reset()
            plant(world.workspace, world.outside)
            start = time.perf_counter()
            report = run_in_process(world, texts, profile=profile, sandbox=sandbox)
            elapsed = time.perf_counter() - start
            decisions = Counter(o.decision for o in report.outcomes)
            benign = [
                o for v, o in zip(generated, report.outcomes, strict=True) if v.kind == "benign"
            ]
            proven = sum(1 for o in benign if o.decision == "allow")
            ran = sum(1 for o in report.outcomes if o.ran)
            say(
                f"{name:22} allowed {decisions['allow']:5}  asked {decisions['ask']:5}  denied {decisions['deny']:4}  "
                f"invalid {decisions['invalid']:3}  ran {ran:5}  benign proven {proven}/{len(benign)}  "
                f"effects {len(report.effects)}  {elapsed:.0f} s"
            )
            rows.append(
                {
                    "measure": f"sweep under {name}",
                    "value": round(elapsed, 1),
                    "unit": "s",
                    "commands": len(texts),
                    "allowed": decisions["allow"],
                    "asked": decisions["ask"],
                    "denied": decisions["deny"],
                    "invalid": decisions["invalid"],
                    "ran": ran,
                    "benign_proven": f"{proven}/{len(benign)} ({proven / max(1, len(benign)):.0%})",
                    "effects": len(report.effects),
                }
            )
            targets.append(
                {
                    "name": f"effects under {name}",
                    "value": len(report.effects),
                    "limit": 0,
                    "unit": "",
                    "op": "==",
                    "met": not report.effects,
                    "judged_on": f"canaries checked after each of the {ran:,} commands that ran",
                }
            )
            if report.effects:
                failures += 1
                say(report.describe())
                notes.append(f"{name}: " + report.describe()[:2000])
    finally:
        world.close()
    if args.json:
        info = {"seed": str(args.seed), "variants": dict(kinds)}
        print(
            json.dumps(
                {
                    "benchmark": "policy_sweep",
                    "title": "Policy",
                    "runs": 1,
                    "rows": rows,
                    "targets": targets,
                    "info": info,
                    "notes": notes,
                }
            )
        )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
