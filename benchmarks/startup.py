"""Startup cost: wall time of bare Python vs `ketch --version`, `--help`, `plugins`.

Runs each command N times, interleaved (so machine noise hits all alike), and reports
medians and ratios to bare `python -c pass`. Targets (issue 2): --version within 2x of
bare Python (it must not import pluggy), --help within 10x.

    python benchmarks/startup.py [--runs 30]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

COMMANDS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "ketch --version": [sys.executable, "-m", "ketch", "--version"],
    "ketch --help": [sys.executable, "-m", "ketch", "--help"],
    "ketch plugins": [sys.executable, "-m", "ketch", "plugins"],
}


def ketch_script() -> list[str] | None:
    """The installed console script, as users run it (ketch via its entry-point wrapper)."""
    script = Path(sys.executable).with_name("ketch")
    return [str(script)] if script.exists() else None


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    commands = dict(COMMANDS)
    script = ketch_script()
    if script:
        commands["ketch --version (script)"] = [*script, "--version"]
        commands["ketch --help (script)"] = [*script, "--help"]
    home = tempfile.mkdtemp()
    env = {**os.environ, "KETCH_CONFIG_DIR": home, "KETCH_STATE_DIR": home, "KETCH_CACHE_DIR": home}
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(3):  # warm the page cache
        for argv in commands.values():
            subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(args.runs):
        for name, argv in commands.items():
            start = time.perf_counter()
            subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
            times[name].append(time.perf_counter() - start)
    base = statistics.median(times["python -c pass"])
    print(f"{'command':<28} {'median ms':>10} {'p90 ms':>8} {'x python':>9}")
    for name, samples in times.items():
        median = statistics.median(samples)
        p90 = sorted(samples)[int(len(samples) * 0.9) - 1]
        print(f"{name:<28} {median * 1000:>10.1f} {p90 * 1000:>8.1f} {median / base:>9.2f}")


if __name__ == "__main__":
    main()
