"""Search: the ``grep`` and ``glob`` tools against raw ripgrep and an ``fd``-style walk.

    .venv/bin/python benchmarks/search.py [--files 50000] [--runs 10] [--json]

Generates a repository of ``--files`` files (source in about 2,500 directories, a
tenth of the files in a ``node_modules`` tree that ``.gitignore`` leaves out, a
``.git`` directory) and times, interleaved round by round (medians of ``--runs``):

* ``grep`` (the tool, as the loop calls it: rg underneath, its JSON parsed, hits
  rendered and capped) for a rare literal, a common regex and a glob-restricted
  search, against raw ``rg`` on the same tree (the way a person runs it, in parallel,
  and the way the tool runs it: ``--json --sort=path``, which makes rg single-threaded),
  and the tool's pure-Python engine (``[tools.grep] engine = "python"``);
* ``glob`` (the tool: ripgrep's ignore-aware walker, matched with wcmatch) for
  ``**/*.py`` and ``src/**/test_*.py``, against an ``fd``-style ``os.scandir`` walk
  that skips ``.git`` and the ignored directory and matches names with ``fnmatch``,
  and ``rg --files --glob``.

The tree is page-cache warm (it was just written). Not a test; no targets: the figures
say what the tool's layer costs over the raw programs.
"""

from __future__ import annotations

import argparse
import asyncio
import fnmatch
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
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "kernel"), str(ROOT / "plugins")]

from ketch.testing import Harness  # noqa: E402
from ketch.tools import ToolContext  # noqa: E402
from ketch_fs.listing import Glob  # noqa: E402
from ketch_search.grep import Grep  # noqa: E402

MARKER = "kaleidoscope_marker"  # the rare literal: in 12 files
WORDS = (
    "parse",
    "render",
    "fetch",
    "store",
    "load",
    "check",
    "build",
    "merge",
    "split",
    "route",
    "cache",
    "index",
)


def source(rng: random.Random, n: int) -> str:
    """About 1.5 KB of code-like text; every tenth file defines a ``*_handler``."""
    lines = [f'"""Module {n}: {rng.choice(WORDS)} and {rng.choice(WORDS)}."""', "", "import os", ""]
    for k in range(8):
        a, b = rng.choice(WORDS), rng.choice(WORDS)
        suffix = "_handler" if n % 10 == 0 and k == 0 else ""
        lines += [
            f"def {a}_{b}_{k}{suffix}(value, options=None):",
            f"    result = {b}(value) if options else {a}(value)",
            f"    return result + {n * 8 + k}",
            "",
        ]
    return "\n".join(lines) + "\n"


def generate(root: Path, files: int, seed: int = 50) -> dict[str, int]:
    rng = random.Random(seed)
    ignored = files // 10
    tracked = files - ignored
    marked = set(rng.sample(range(tracked), 12))
    (root / ".gitignore").write_text("node_modules/\n*.log\n")
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    per_dir = 20
    made: set[Path] = set()
    for n in range(tracked):
        group, leaf = divmod(n // per_dir, 50)
        top = "src" if n % 5 else "tests"
        directory = root / top / f"pkg{group:02d}" / f"mod{leaf:02d}"
        if directory not in made:
            directory.mkdir(parents=True, exist_ok=True)
            made.add(directory)
        name = (
            f"test_{n}.py"
            if top == "tests" or n % 7 == 0
            else (f"file_{n}.py" if n % 3 else f"file_{n}.ts")
        )
        text = source(rng, n)
        if n in marked:
            text += f"# {MARKER}: found me\n"
        (directory / name).write_text(text)
    for n in range(ignored):
        directory = root / "node_modules" / f"dep{n // 100:03d}"
        if n % 100 == 0:
            directory.mkdir(parents=True, exist_ok=True)
        (directory / f"index_{n}.py").write_text(
            f"# {MARKER} in an ignored file\n" if n < 5 else "module.exports = {}\n"
        )
    return {"files": files, "tracked": tracked, "ignored": ignored, "marked": len(marked)}


def scandir_walk(root: Path, skip: frozenset[str]) -> Iterator[tuple[str, str]]:
    """(relative directory, file name) for every file, as ``fd`` walks: no .git, no ignored dirs."""
    stack = [(str(root), "")]
    while stack:
        path, rel = stack.pop()
        with os.scandir(path) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name not in skip:
                        stack.append((entry.path, f"{rel}{entry.name}/"))
                elif entry.is_file(follow_symlinks=False):
                    yield rel, entry.name


def fd_style(root: Path, under: str, name_glob: str) -> int:
    skip = frozenset({".git", "node_modules"})
    return sum(
        1
        for rel, name in scandir_walk(root, skip)
        if rel.startswith(under) and fnmatch.fnmatchcase(name, name_glob)
    )


def run_quiet(argv: list[str], cwd: Path) -> int:
    done = subprocess.run(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    return done.stdout.count(b"\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=50_000)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument(
        "--json", action="store_true", help="print one JSON object instead of the table"
    )
    args = parser.parse_args()
    rg = shutil.which("rg")
    scratch = Path(tempfile.mkdtemp(prefix="ketch-bench-search-"))
    try:
        began = time.perf_counter()
        harness = Harness.create(scratch, script=[], bundled=["fs", "search"])
        python_settings = harness.kernel.settings.model_copy(
            update={"tools": {"grep": {"engine": "python"}}}
        )
        tree = harness.workspace
        shape = generate(tree, args.files)
        generated_s = time.perf_counter() - began
        loop = asyncio.new_event_loop()
        grep, glob = Grep(), Glob()

        async def allow(access: Any) -> bool:
            return True

        def context(settings: Any) -> ToolContext:
            return ToolContext(
                workspace=tree, session_id="ses_bench", settings=settings, state={}, authorize=allow
            )

        ctx, python_ctx = context(harness.kernel.settings), context(python_settings)

        def tool(which: Any, ctx: ToolContext, **params: Any) -> Callable[[], int]:
            def call() -> int:
                result = loop.run_until_complete(which.run(which.input_model(**params), ctx))
                assert result.ok, result.output
                return result.output.count("\n") + 1

            return call

        rg_raw = ["--no-config", "--hidden", "--glob=!.git", "-n"]
        rg_tool = [
            "--no-config",
            "--hidden",
            "--no-require-git",
            "--glob=!.git",
            "--json",
            "--sort=path",
        ]
        cases: dict[str, tuple[str, Callable[[], int]]] = {}
        searches = {
            "rare literal": (
                {"pattern": MARKER, "literal": True},
                ["--fixed-strings", "--", MARKER, "."],
            ),
            "common regex": ({"pattern": r"def \w+_handler\("}, ["--", r"def \w+_handler\(", "."]),
            "regex in *.ts only": (
                {"pattern": r"return result \+ 4\d\d", "glob": "*.ts"},
                ["--glob=*.ts", "--", r"return result \+ 4\d\d", "."],
            ),
        }
        for label, (params, rg_args) in searches.items():
            cases[f"grep tool: {label}"] = (label, tool(grep, ctx, **params))
            if rg:
                cases[f"rg: {label}"] = (
                    label,
                    lambda a=rg_args: run_quiet([rg, *rg_raw, *a], tree),
                )
                cases[f"rg as the tool runs it: {label}"] = (
                    label,
                    lambda a=rg_args: run_quiet([rg, *rg_tool, *a], tree),
                )
        cases["grep tool, python engine: rare literal"] = (
            "rare literal",
            tool(grep, python_ctx, pattern=MARKER, literal=True),
        )
        globs = {"**/*.py": ("", "*.py"), "src/**/test_*.py": ("src/", "test_*.py")}
        for pattern, (under, name_glob) in globs.items():
            cases[f"glob tool: {pattern}"] = (pattern, tool(glob, ctx, pattern=pattern))
            cases[f"fd-style scandir walk: {pattern}"] = (
                pattern,
                lambda u=under, g=name_glob: fd_style(tree, u, g),
            )
            if rg:
                cases[f"rg --files: {pattern}"] = (
                    pattern,
                    lambda p=pattern: run_quiet(
                        [rg, "--no-config", "--hidden", "--glob=!.git", "--files", f"--glob={p}"],
                        tree,
                    ),
                )
        times: dict[str, list[float]] = {name: [] for name in cases}
        lines: dict[str, int] = {}
        rng = random.Random(7)
        order = list(cases)
        for round_ in range(args.runs + 1):
            rng.shuffle(order)
            for name in order:
                start = time.perf_counter()
                lines[name] = cases[name][1]()
                if round_:  # the first round warms caches
                    times[name].append(time.perf_counter() - start)
        loop.close()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    rows = []
    for name, (group, _) in cases.items():
        median = statistics.median(times[name]) * 1000
        rows.append(
            {
                "measure": name,
                "value": round(median, 1),
                "unit": "ms",
                "query": group,
                "output_lines": lines[name],
            }
        )
    by = {row["measure"]: row for row in rows}
    for row in rows:
        kind = "grep" if row["measure"].startswith(("grep", "rg:", "rg as")) else "glob"
        baseline = (
            by.get(f"rg: {row['query']}")
            if kind == "grep"
            else by.get(f"fd-style scandir walk: {row['query']}")
        )
        if baseline:
            row["x_baseline"] = round(row["value"] / baseline["value"], 2)
    info = {
        **shape,
        "generated_s": round(generated_s, 1),
        "rg": subprocess.run([rg, "--version"], capture_output=True, text=True).stdout.split("\n")[
            0
        ]
        if rg
        else None,
        "baseline": "x_baseline: against raw rg (grep rows) or the fd-style walk (glob rows)",
    }
    notes = [
        "the tools stop early where their caps say (grep: 100 matching lines; glob: 200 paths shown, all walked); raw rg prints everything"
    ]
    if not rg:
        notes.append("rg is not on PATH: its rows are missing and grep runs its Python engine")
    result = {
        "benchmark": "search",
        "title": f"Search ({args.files:,} files)",
        "runs": args.runs,
        "rows": rows,
        "targets": [],
        "info": info,
        "notes": notes,
    }
    if args.json:
        print(json.dumps(result))
        return 0
    print(
        f"{shape['files']:,} files ({shape['ignored']:,} gitignored), generated in {generated_s:.1f} s; medians of {args.runs} interleaved runs"
    )
    print(f"{'case':<52} {'median ms':>10} {'x baseline':>11} {'lines out':>10}")
    for row in rows:
        ratio = f"{row['x_baseline']:.2f}" if "x_baseline" in row else "-"
        print(f"{row['measure']:<52} {row['value']:>10.1f} {ratio:>11} {row['output_lines']:>10}")
    for note in notes:
        print(f"note: {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
