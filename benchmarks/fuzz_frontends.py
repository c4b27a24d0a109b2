"""A longer fuzz sweep of the stdio frontends than the test suite runs.

    .venv/bin/python benchmarks/fuzz_frontends.py --lines 20000
    .venv/bin/python benchmarks/fuzz_frontends.py --only acp,stream_json --seeds 5 --lines 5000
    .venv/bin/python benchmarks/fuzz_frontends.py --seed 123 --lines 3000 --json

Each frontend (``acp``, ``stream_json``, ``hook_outputs``, ``prompt_command_outputs``)
gets ``--lines`` seeded hostile lines per seed, judged as in ``tests/fuzz`` (no traceback,
no hang past the deadline, the next valid line still works, garbage never approves).
A failure names its seed and line: ``--seed S --lines N`` replays it. Exit status 1 when
anything failed. ``--json`` prints one JSON object (benchmarks/run.py's format).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "kernel"), str(ROOT / "plugins")]

from tests.fuzz.frontends import DRIVERS, Report  # noqa: E402


def sweep(names: list[str], seeds: list[int], count: int, real: int) -> list[Report]:
    reports: list[Report] = []
    for seed in seeds:
        for name in names:
            with tempfile.TemporaryDirectory(prefix=f"ketch-fuzz-{name}-") as work:
                driver = DRIVERS[name]
                extra = {"real": real} if name in ("hook_outputs", "prompt_command_outputs") else {}
                report = driver(Path(work), seed, count, **extra)  # type: ignore[operator]
            reports.append(report)
            state = "ok" if not report.failures else f"{len(report.failures)} FAILED"
            print(
                f"{name:24} seed {seed:<10} {report.lines:>7} lines {report.seconds:7.1f} s  {state}",
                file=sys.stderr,
            )
            for failure in report.failures:
                print(f"    {failure[:400]}", file=sys.stderr)
    return reports


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=10_000, help="lines per frontend and seed")
    parser.add_argument(
        "--seed", type=int, default=None, help="one seed (default: --seeds of them)"
    )
    parser.add_argument("--seeds", type=int, default=3, help="how many seeds from 1 (default 3)")
    parser.add_argument("--only", default="", help="comma-separated frontends (default: all)")
    parser.add_argument(
        "--real", type=int, default=500, help="real hook / prompt-command processes per seed"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    names = [n for n in args.only.split(",") if n] or list(DRIVERS)
    unknown = set(names) - set(DRIVERS)
    if unknown:
        parser.error(
            f"unknown frontend(s): {', '.join(sorted(unknown))}; known: {', '.join(DRIVERS)}"
        )
    seeds = [args.seed] if args.seed is not None else list(range(1, args.seeds + 1))
    began = time.monotonic()
    reports = sweep(names, seeds, args.lines, args.real)
    failed = sum(len(r.failures) for r in reports)
    if args.json:
        rows = [
            {
                "measure": f"{r.frontend} (seed {r.seed})",
                "value": round(r.lines / r.seconds, 1) if r.seconds else 0,
                "unit": "lines/s",
                "lines": r.lines,
                "failures": len(r.failures),
            }
            for r in reports
        ]
        print(
            json.dumps(
                {
                    "benchmark": "fuzz_frontends",
                    "title": "Fuzzing the stdio frontends",
                    "runs": 1,
                    "rows": rows,
                    "columns": ["lines", "failures"],
                    "targets": [
                        {
                            "name": "failures",
                            "value": failed,
                            "limit": 0,
                            "unit": "",
                            "op": "<=",
                            "met": failed == 0,
                            "judged_on": "every line of every seed",
                        }
                    ],
                    "info": {"seconds": round(time.monotonic() - began, 1)},
                    "notes": [f.strip() for r in reports for f in r.failures][:50],
                }
            )
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
