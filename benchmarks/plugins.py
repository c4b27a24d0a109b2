"""Plugin loading cost: startup with 50 installed third-party plugins against none.

Writes 50 dummy plugin distributions (dist-info directories with an entry point in the
``ketch`` group, as pip would leave them, and a small plugin module each: one tool,
one command, a system-prompt part, imports kept light like a well-behaved plugin) to a
temporary directory. Then it times ``ketch --help`` and ``ketch plugins`` with that
directory on PYTHONPATH and without it, interleaved so machine noise hits both alike,
and reports the medians and their ratio. It also sums ``import_ms`` from
``ketch plugins --json`` (time spent importing plugin modules). ``--json`` prints one
JSON object instead of the table (the form benchmarks/run.py reads).

    python benchmarks/plugins.py [--runs 20] [--plugins 50] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ketch.testing.dists import write_distribution
from ketch.testing.harness import isolated_env

PLUGIN = '''"""Dummy plugin {n}: registers one tool, one command and a system-prompt part."""

from ketch import hookimpl
from ketch.commands import Command


@hookimpl
def ketch_register_tools(register):
    def dummy_tool_{n}(text: str) -> str:
        """Echo the text (dummy plugin {n})."""
        return text

    register(dummy_tool_{n})


@hookimpl
def ketch_register_commands(register):
    register(Command(name="dummy-{n}", help="dummy command {n}", cli=True, run=lambda kernel, args: 0))


@hookimpl
def ketch_system_prompt(session):
    return None
'''


def make_site(root: Path, count: int) -> Path:
    site = root / "site"
    for n in range(count):
        write_distribution(
            site,
            f"ketch-dummy-{n:02d}",
            entry_points={"ketch": {f"dummy{n:02d}": f"ketch_dummy_{n:02d}"}},
            modules={f"ketch_dummy_{n:02d}/__init__.py": PLUGIN.format(n=f"{n:02d}")},
        )
    return site


def timed(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def main() -> None:  # noqa: C901 - one straight measurement
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--plugins", type=int, default=50)
    parser.add_argument(
        "--json", action="store_true", help="print one JSON object instead of the table"
    )
    args = parser.parse_args()

    root = Path(tempfile.mkdtemp(prefix="ketch-bench-plugins-"))
    site = make_site(root, args.plugins)
    base = {**os.environ, **isolated_env(root / "home"), "KETCH_AUTOLOAD": "all"}
    base.pop("PYTHONDONTWRITEBYTECODE", None)  # bytecode caches on, as an installed ketch has them
    for key in ("KETCH_PLUGINS", "KETCH_DISABLE_PLUGINS", "KETCH_LOAD"):
        base.pop(key, None)
    pythonpath = os.environ.get("PYTHONPATH", "")
    envs = {
        "none": {**base, "PYTHONPATH": pythonpath},
        f"{args.plugins}": {
            **base,
            "PYTHONPATH": os.pathsep.join(p for p in (str(site), pythonpath) if p),
        },
    }
    commands = {"ketch --help": ["--help"], "ketch plugins": ["plugins"]}

    # Sanity: the dummies load and register in the one build, and are absent in the other.
    listed = json.loads(
        subprocess.run(
            [sys.executable, "-m", "ketch", "plugins", "--json"],
            env=envs[f"{args.plugins}"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    dummies = [p for p in listed if p["name"].startswith("dummy")]
    assert len(dummies) == args.plugins and all(
        p["status"] == "ok" and p["provides"] for p in dummies
    ), "dummy plugins did not load"
    import_ms = sum(p["import_ms"] for p in dummies)

    times: dict[tuple[str, str], list[float]] = {(c, e): [] for c in commands for e in envs}
    for _ in range(2):  # warm the page cache and the bytecode caches
        for extra in commands.values():
            for env in envs.values():
                timed([sys.executable, "-m", "ketch", *extra], env)
    for _ in range(args.runs):
        for command, extra in commands.items():
            for name, env in envs.items():
                times[(command, name)].append(timed([sys.executable, "-m", "ketch", *extra], env))

    rows = []
    for command in commands:
        none = statistics.median(times[(command, "none")])
        many = statistics.median(times[(command, f"{args.plugins}")])
        rows.append(
            {
                "measure": command,
                "value": round(many * 1000, 1),
                "unit": "ms",
                "none_ms": round(none * 1000, 1),
                "ratio": round(many / none, 3),
                "per_plugin_ms": round((many - none) / args.plugins * 1000, 3),
            }
        )
    if args.json:
        info = {"plugins": args.plugins, "import_ms_total": round(import_ms, 1)}
        print(
            json.dumps(
                {
                    "benchmark": "plugins",
                    "title": f"Loading {args.plugins} third-party plugins",
                    "runs": args.runs,
                    "rows": rows,
                    "targets": [],
                    "info": info,
                }
            )
        )
        return
    print(f"{args.plugins} dummy plugins, {args.runs} runs each, median wall time")
    print(f"{'command':<16} {'none ms':>9} {args.plugins:>6} ms {'ratio':>7} {'per plugin':>11}")
    for row in rows:
        print(
            f"{row['measure']:<16} {row['none_ms']:>9.1f} {row['value']:>9.1f} {row['ratio']:>7.2f} {row['per_plugin_ms']:>9.2f} ms"
        )
    print(
        f"import_ms of the {args.plugins} dummy plugins (ketch plugins --json): {import_ms:.1f} ms in total"
    )


if __name__ == "__main__":
    main()
