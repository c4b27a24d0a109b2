"""What knowing a secret by its content costs: the sandbox's index and the proof's walks.

    .venv/bin/python benchmarks/secret_scan.py [--files 50000] [--runs 5] [--json]

Builds a synthetic repository of ``--files`` text files (1-8 KiB of code-like lines,
about a tenth of them gitignored, a few secrets by name and by content) and times:

* the sandbox's workspace index (:mod:`ketch_sandbox.trees`), first scan, with content
  classification (every regular file read once, up to 1 MiB) against names only -- the
  price of the classification, as a ratio;
* the same index when nothing changed, and after ten files were written in place (their
  directories listed again: a ``stat`` per file and a cache lookup, ten files read);
* the background warm-up of the classification (:func:`ketch_secret_kit.files.warm`,
  started when a session starts);
* the proof's walk of ``rg PATTERN`` and ``grep -r PATTERN .`` over the whole
  repository (:func:`ketch_shell_kit.reach.reach`, with the entry cap lifted), warm
  (cached by device, inode, size and mtime) and cold (a proof reads at most
  :data:`ketch_shell_kit.reach.MAX_COLD` files, then asks), against ``rg --files``
  listing the same tree (the floor: rg's own walk, no reading);
* the cap: a walk stops at :data:`ketch_shell_kit.reach.MAX_ENTRIES` entries (then the
  command asks).

Targets: the index with nothing changed under 20 ms; a warm proof walk stopped at
the entry cap under 2 s (what one vote costs at most in a large repository without the
sandbox; with it, a walk that follows no symlink is not made at all). Prints a table (``--json``: one JSON object, the form
benchmarks/run.py reads; the other lines go to stderr); exits 1 when a target is missed.
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
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "kernel"), str(ROOT / "plugins")]

from sandbox import median_ms  # noqa: E402 - benchmarks/sandbox.py, beside this file

import ketch_sandbox.trees as trees  # noqa: E402
from ketch_secret_kit.files import cache_clear, warm  # noqa: E402
from ketch_shell_kit.reach import MAX_ENTRIES, grep_walk, reach, rg_walk  # noqa: E402

UNCHANGED_TARGET_MS = 20.0
CAPPED_TARGET_MS = 2000.0  # the longest a vote may walk, warm, before it asks

LINES = [
    "def handler(request):\n",
    "    value = parse(request.body)\n",
    "    return render(value, status=200)\n",
    "# configuration is read from the environment\n",
    "    token = os.environ['SERVICE_TOKEN']\n",
    "import json, os, sys\n",
    "class Model(Base):\n",
    "    name: str = 'default'\n",
]


def build_repo(root: Path, files: int) -> None:
    rng = random.Random(11)
    dirs = max(1, files // 12)
    made: list[Path] = [root]
    for index in range(dirs):
        parent = (
            made[rng.randrange(len(made))]
            if index % 4
            else root / ("node_modules" if index % 3 == 0 else "src")
        )
        path = parent / f"d{index}"
        path.mkdir(parents=True, exist_ok=True)
        made.append(path)
    for index in range(files):
        size = rng.randint(1, 8) * 1024
        body = "".join(rng.choice(LINES) for _ in range(size // 32))
        suffix = (".py", ".js", ".txt", ".yaml", ".json")[index % 5]
        (made[index % len(made)] / f"f{index}{suffix}").write_text(body)
    (root / ".gitignore").write_text("node_modules/\n.env\n")
    (root / ".env").write_text("API_KEY=Zq8kd93Lm2xPq4Rt7Yw1\n")
    (root / "config").mkdir(exist_ok=True)
    (root / "config" / "deploy.yaml").write_text("password: Zq8kd93Lm2xPq4Rt7Yw1\n")


def first_scan_ms(repo: Path, *, content: bool, runs: int) -> tuple[float, int]:
    """A first scan of a fresh index (the classification cache cleared before each)."""
    original = trees.content_secret
    if not content:
        trees.content_secret = lambda *_a, **_k: None  # type: ignore[assignment]
    times, secrets = [], 0
    try:
        for _ in range(runs):
            cache_clear()
            index = trees.TreeIndex(repo)
            started = time.perf_counter()
            found = index.refresh()
            times.append((time.perf_counter() - started) * 1000)
            secrets = len(found.secrets)
            index.close()
    finally:
        trees.content_secret = original
    return statistics.median(times), secrets


def main() -> int:  # noqa: C901 - one measurement after another
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=50_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    say = functools.partial(print, file=sys.stderr, flush=True) if args.json else print
    rows: list[dict[str, object]] = []
    targets: list[dict[str, object]] = []
    base = Path(tempfile.mkdtemp(prefix="ketch-secrets-bench-", dir=os.path.expanduser("~/.cache")))
    try:
        repo = base / "repo"
        repo.mkdir()
        started = time.perf_counter()
        build_repo(repo, args.files)
        say(f"repository: {args.files:,} files (built in {time.perf_counter() - started:.1f} s)")

        def row(name: str, ms: float, note: str = "") -> None:
            rows.append({"measure": name, "value": round(ms, 2), "unit": "ms", "note": note})
            say(f"{name:58} {ms:10.1f} ms  {note}")

        names_ms, _ = first_scan_ms(repo, content=False, runs=max(1, args.runs // 2))
        content_ms, secrets = first_scan_ms(repo, content=True, runs=max(1, args.runs // 2))
        row("index, first scan, names only", names_ms)
        row(
            "index, first scan, names and content",
            content_ms,
            f"{secrets} secrets; {content_ms / names_ms:.1f}x names only",
        )
        index = trees.TreeIndex(repo)
        index.refresh()
        unchanged = median_ms(index.refresh, args.runs)
        row("index, nothing changed", unchanged)
        targets.append({"name": "index, nothing changed", "value": round(unchanged, 2), "limit": UNCHANGED_TARGET_MS,
                        "unit": "ms", "op": "<=", "met": unchanged <= UNCHANGED_TARGET_MS})  # fmt: skip
        edited = sorted(repo.glob("src/**/*.yaml"))[:10]
        counter = iter(range(10**9))

        def edit_ten() -> None:
            for path in edited:
                path.write_text(f"note: {next(counter)}\n")
            index.refresh()

        row("index, 10 files written in place (incl. writing)", median_ms(edit_ten, args.runs))
        index.close()

        cwd = str(repo)
        (repo / ".env").unlink()  # so the walks go through the whole tree
        (repo / "config" / "deploy.yaml").unlink()
        cache_clear()
        started = time.perf_counter()
        looked = warm(repo, limit=args.files * 2)
        row(
            "background warm-up of the classification",
            (time.perf_counter() - started) * 1000,
            f"{looked:,} files",
        )
        for label, walk in (("rg PATTERN", rg_walk([])), ("grep -r PATTERN .", grep_walk([]))):
            limit = args.files * 2

            def walk_once(chosen: object = walk, cap: int = limit) -> object:
                return reach(cwd, chosen, workspace=repo, cwd=cwd, limit=cap)  # type: ignore[arg-type]

            warm_ms = median_ms(walk_once, args.runs)
            found = walk_once()
            row(
                f"proof walk of `{label}` over every file, warm",
                warm_ms,
                f"found: {getattr(found, 'kind', None)}",
            )
            cache_clear()
            started = time.perf_counter()
            found = walk_once()
            cold = (time.perf_counter() - started) * 1000
            row(
                f"proof walk of `{label}`, cold (stops at the budget)",
                cold,
                f"found: {getattr(found, 'kind', None)}",
            )
            warm(repo, limit=args.files * 2)
        if shutil.which("rg"):
            floor = median_ms(
                lambda: subprocess.run(
                    ["rg", "--files", "--no-config"], cwd=repo, capture_output=True, check=False
                ),
                args.runs,
            )
            row("`rg --files` (rg's own walk, the floor)", floor)
        for label, walk in (("rg PATTERN", rg_walk([])), ("grep -r PATTERN .", grep_walk([]))):

            def capped_once(chosen: object = walk) -> object:
                return reach(cwd, chosen, workspace=repo, cwd=cwd)  # type: ignore[arg-type]

            capped = median_ms(capped_once, args.runs)
            row(
                f"proof walk of `{label}`, warm, at the cap ({MAX_ENTRIES:,} entries)",
                capped,
                "past it the command asks",
            )
            targets.append({"name": f"a proof of `{label}` at the cap", "value": round(capped, 1), "limit": CAPPED_TARGET_MS,
                            "unit": "ms", "op": "<=", "met": capped <= CAPPED_TARGET_MS})  # fmt: skip
    finally:
        shutil.rmtree(base, ignore_errors=True)
    missed = [t for t in targets if not t["met"]]
    if args.json:
        print(json.dumps({"benchmark": "secret_scan", "title": "Secrets by content", "runs": args.runs, "rows": rows,
                          "targets": targets, "info": {"files": args.files}, "notes": []}))  # fmt: skip
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
