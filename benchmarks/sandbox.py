"""Sandbox and redaction costs on a large repository and large outputs.

    .venv/bin/python benchmarks/sandbox.py [--files 100000] [--runs 20] [--mb 10] [--json]

Builds a synthetic repository (``--files`` files in about a tenth as many directories:
a source tree, a gitignored ``node_modules``-like tree, a few secrets, nested ``.git``
directories) and times, each as the median of ``--runs``:

* the workspace index (:mod:`ketch_sandbox.trees`): the first scan, a scan when nothing
  changed, a scan after ten files appeared in ten directories -- with inotify, and with
  the ``stat`` fallback for comparison;
* a whole ``ketch_sandbox.wrap`` (the view: system dirs, toolchains, /etc, the index,
  placeholders) once warm;
* starting ``true`` in the sandbox against starting it directly;
* redacting ``--mb`` megabytes of code-like output holding a few secrets (known values
  and well-known formats), and one megabyte.

Targets: a warm ``wrap`` under 20 ms and redaction of 1 MB under 50 ms. Prints a
table (``--json``: one JSON object, the form benchmarks/run.py reads; the other lines go
to stderr) and exits 1 when a median misses a target; not a test.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "kernel"), str(ROOT / "plugins")]

import ketch_sandbox  # noqa: E402
from ketch_redact.redactor import Redactor  # noqa: E402
from ketch_sandbox.bwrap import probe  # noqa: E402
from ketch_sandbox.trees import TreeIndex, forget  # noqa: E402

WRAP_TARGET_MS = 20.0
REDACT_TARGET_MS = 50.0  # per megabyte


def build_repo(root: Path, files: int) -> None:
    rng = random.Random(7)
    dirs = max(1, files // 10)
    made: list[Path] = [root]
    for index in range(dirs):
        parent = (
            made[rng.randrange(len(made))]
            if index % 3
            else root / ("node_modules" if index % 2 else "src")
        )
        path = parent / f"d{index}"
        path.mkdir(parents=True, exist_ok=True)
        made.append(path)
    for index in range(files):
        (made[index % len(made)] / f"f{index}.py").write_text("x = 1\n")
    (root / ".gitignore").write_text("node_modules/\n.env\n")
    (root / ".env").write_text("API_KEY=secret\n")
    (root / "config" / "prod").mkdir(parents=True)
    (root / "config" / "prod" / "deploy.pem").write_text("key")
    for nested in ("vendor/a", "vendor/b", "node_modules/pkg"):
        (root / nested / ".git" / "hooks").mkdir(parents=True, exist_ok=True)
    (root / ".git" / "hooks").mkdir(parents=True, exist_ok=True)


def median_ms(fn: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--mb", type=int, default=10)
    parser.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object (the form benchmarks/run.py reads); the other lines go to stderr",
    )
    args = parser.parse_args()
    say = functools.partial(print, file=sys.stderr, flush=True) if args.json else print
    rows: list[tuple[str, float, str]] = []
    targets: list[dict[str, object]] = []
    info: dict[str, object] = {}
    failed = False
    base = Path(tempfile.mkdtemp(prefix="ketch-bench-sandbox-"))
    try:
        repo = base / "repo"
        started = time.perf_counter()
        build_repo(repo, args.files)
        directories = sum(1 for _ in os.walk(repo))
        info.update(
            files=args.files,
            directories=directories,
            built_s=round(time.perf_counter() - started, 1),
        )
        say(
            f"repository: {args.files:,} files in {directories:,} directories (built in {time.perf_counter() - started:.1f} s)"
        )
        time.sleep(2.1)  # past the "racy" window, as a repository that sat still would be

        for label, watch in (("inotify", True), ("stat", False)):
            index = TreeIndex(repo, watch=watch)
            started = time.perf_counter()
            found = index.refresh()
            rows.append(
                (
                    f"index, first scan ({label})",
                    (time.perf_counter() - started) * 1000,
                    f"{len(found.secrets)} secrets, {len(found.git)} .git",
                )
            )
            rows.append(
                (f"index, nothing changed ({label})", median_ms(index.refresh, args.runs), "")
            )

            def touch_ten(
                index: TreeIndex = index, counter: Iterator[int] = iter(range(10**9))
            ) -> None:
                for d in range(10):
                    where = repo / "src" / f"d{d * 2}"
                    (where if where.is_dir() else repo).joinpath(
                        f"new{next(counter)}.txt"
                    ).write_text("n")
                index.refresh()

            rows.append(
                (
                    f"index, 10 new files ({label}, incl. writing them)",
                    median_ms(touch_ten, args.runs),
                    "",
                )
            )
            index.close()

        home = base / "home"
        home.mkdir()
        os.environ["HOME"] = str(home)
        available = probe()
        if available.available:
            ketch_sandbox.wrap(["true"], repo, network=False)  # warm every index
            warm = median_ms(lambda: _wrap_and_release(repo), args.runs)
            rows.append(
                ("wrap (view + placeholders), warm", warm, f"target < {WRAP_TARGET_MS:g} ms")
            )
            failed |= warm > WRAP_TARGET_MS
            targets.append(_target("wrap (view + placeholders), warm", warm, WRAP_TARGET_MS))
            argv = ketch_sandbox.wrap(["true"], repo, network=False, reporters=[])
            rows.append(
                (
                    "start `true` in the sandbox",
                    median_ms(lambda: subprocess.run(argv, check=True), args.runs),
                    "",
                )
            )
            rows.append(
                (
                    "start `true` directly",
                    median_ms(lambda: subprocess.run(["true"], check=True), args.runs),
                    "",
                )
            )
        else:
            say(f"(no sandbox here: {available.reason}; wrap and start times skipped)")
            info["sandbox"] = f"unavailable: {available.reason}"
            targets.append(
                {
                    **_target("wrap (view + placeholders), warm", 0.0, WRAP_TARGET_MS),
                    "value": None,
                    "met": None,
                }
            )
        forget(repo)

        key = "own-key-" + "0123456789abcdef" * 2
        redactor = Redactor.of({"OPENAI_API_KEY": key, "GITHUB_TOKEN": "ghp_" + "x" * 36})
        line = "def handler(request):  # " + "value = parse(request.body); " * 2 + "\n"
        chunk = line * (1_000_000 // len(line))
        one_mb = (
            chunk[:400_000]
            + f" {key} "
            + chunk[400_000:700_000]
            + " ghp_"
            + "A" * 36
            + " "
            + chunk[700_000:]
        )
        many = one_mb * args.mb
        ms = median_ms(lambda: redactor.redact(one_mb), args.runs)
        rows.append(("redact 1 MB (2 secrets)", ms, f"target < {REDACT_TARGET_MS:g} ms"))
        failed |= ms > REDACT_TARGET_MS
        targets.append(_target("redact 1 MB (2 secrets)", ms, REDACT_TARGET_MS))
        big = median_ms(lambda: redactor.redact(many), max(3, args.runs // 4))
        rows.append(
            (
                f"redact {args.mb} MB ({2 * args.mb} secrets)",
                big,
                f"{args.mb / (big / 1000):.0f} MB/s",
            )
        )
    finally:
        shutil.rmtree(base, ignore_errors=True)
    if args.json:
        table = [
            {"measure": name, "value": round(ms, 3), "unit": "ms", "note": note}
            for name, ms, note in rows
        ]
        info["medians"] = (
            f"of {args.runs} runs (the first scans: one run; the {args.mb} MB redaction: {max(3, args.runs // 4)} runs)"
        )
        print(
            json.dumps(
                {
                    "benchmark": "sandbox",
                    "title": "Sandbox and redaction",
                    "runs": args.runs,
                    "rows": table,
                    "targets": targets,
                    "info": info,
                }
            )
        )
        return 1 if failed else 0
    width = max(len(r[0]) for r in rows)
    for name, ms, note in rows:
        print(f"{name:<{width}}  {ms:9.2f} ms  {note}")
    return 1 if failed else 0


def _target(name: str, ms: float, limit: float) -> dict[str, object]:
    return {
        "name": name,
        "value": round(ms, 3),
        "limit": limit,
        "unit": "ms",
        "op": "<",
        "met": ms < limit,
        "judged_on": "wall-time median",
    }


def _wrap_and_release(repo: Path) -> None:
    reporters: list[Callable[[bool], str | None]] = []
    ketch_sandbox.wrap(["true"], repo, network=False, reporters=reporters)
    for reporter in reporters:
        reporter(True)


if __name__ == "__main__":
    sys.exit(main())
