"""Run every benchmark and write docs/performance.md (tables, PNG plots, targets).

    .venv/bin/python benchmarks/run.py            # everything, a full run (about 20 minutes)
    .venv/bin/python benchmarks/run.py --quick    # smaller sizes and fewer runs, to try it
    .venv/bin/python benchmarks/run.py --only startup,loop --out /tmp/perf.md
    .venv/bin/python benchmarks/run.py --peers    # also the npm peer CLIs and their authority

Each benchmark runs as its own process, one after the other (never two at once: the
machine's cores are the instrument), and says what it measured in one JSON object:

    python benchmarks/NAME.py ... --json      # prints exactly one JSON object on stdout

    {
      "benchmark": "loop",                    # its name
      "title": "Loop overhead",               # a heading (optional)
      "runs": 30,                             # repetitions behind each median (1: one run)
      "rows": [                               # the table, in order; extra keys are columns
        {"measure": "step 100", "value": 1.2, "unit": "ms", "cpu_ms": 1.1}
      ],
      "targets": [                            # each figure a target is judged on
        {"name": "median overhead per step", "value": 1.36, "limit": 5, "unit": "ms",
         "op": "<=", "met": true, "judged_on": "wall-time median"}
      ],
      "series": {                             # curves for plots (optional)
        "overhead_ms": {"x": [1, 2], "y": [1.1, 1.2], "x_label": "step", "y_label": "ms"}
      },
      "columns": ["cpu_ms"],                  # the extra columns' order (optional)
      "info": {"steps": 2000},                # anything else worth printing (optional)
      "notes": ["..."]                        # sentences for the page (optional)
    }

Human-readable output may go to stderr. A benchmark that does not take ``--json``
(argparse refuses the option) is run again without it, and its text output goes on the
page as it is. A benchmark whose file does not exist is listed as not run. Exit status 1
from a benchmark (a missed target) is not a failure of this script; a crash is reported
on the page with the end of its stderr.

Every outcome is also kept in ``$KETCH_BENCH_CACHE/last-run.json``: ``--render-only``
writes the page again from it. Plots need matplotlib (``pip install -e '.[bench]'``); when it is missing this script
installs it with pip into ``$KETCH_BENCH_CACHE/plot-libs`` (default
``~/.cache/ketch-bench``, where ``startup.py`` also keeps the peers' virtualenvs), never
into ketch's own environment. When ``dbus-run-session`` and ``gnome-keyring-daemon``
exist, the run happens inside a private D-Bus session with an unlocked keyring (as
``.ci/run`` does), so that ``ketch -p`` opens its encrypted store through a real
Secret Service.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CACHE = Path(os.environ.get("KETCH_BENCH_CACHE") or Path.home() / ".cache" / "ketch-bench")
DBUS_FLAG = "KETCH_BENCH_IN_DBUS"


@dataclass
class Spec:
    name: str
    script: str
    title: str
    args: list[str]
    quick: list[str]
    what: str  # what it measures, for the page
    env: dict[str, str] = field(default_factory=dict)
    timeout: float = 3600
    diagnostic: bool = False  # a variant that explains another: its targets stay in its section
    peers: bool = False  # runs only with --peers (or --only NAME): installs npm CLIs


SPECS = [
    Spec(
        "startup",
        "startup.py",
        "Start-up",
        ["--runs", "30", "--explain"],
        ["--runs", "5", "--explain"],
        "Wall time from exec to exit (for `-p`: to the first chat request reaching a loopback OpenAI-compatible server), "
        "and the process's CPU time, of each command as its console script; all commands interleaved in a shuffled "
        "order each round, after three warm-up rounds. Peers installed from PyPI in their own virtualenvs.",
    ),
    Spec(
        "peers",
        "peers.py",
        "Peers: Claude Code, Codex CLI, OpenCode, Gemini CLI",
        ["--runs", "10", "--steps", "200"],
        ["--runs", "5", "--steps", "60", "--window", "15"],
        "ketch against the coding agents people pick instead, each installed from the npm registry into the benchmark "
        "cache and driven headless by one scripted model on 127.0.0.1 speaking its own wire format (OpenAI Chat "
        "Completions for ketch and OpenCode, the Responses API for Codex CLI, Anthropic Messages for Claude Code, Gemini "
        "for Gemini CLI), in one interleaved run: launch to the first model request that carries the prompt and the "
        "tools (after a warm-up round, the CLIs in a shuffled order each round), the overhead per step early and late "
        "in a long session of file reads with the CLI's own tool (200 steps; `--quick`: 60), the peak memory of the whole process tree, and "
        "the bytes sent per request. Every `x` column is ketch's figure divided by the peer's, from the same run.",
        peers=True,
    ),
    Spec(
        "authority",
        "authority.py",
        "Peers: what a model can make them do",
        [],
        [],
        "The commands a model might propose to leak a workspace secret or write outside the workspace, each proposed "
        "by the scripted model through the CLI's own shell tool in a fresh headless session with the CLI's default "
        "permissions, in a canary workspace; judged by what happened to the canaries, not by what the CLI said.",
        peers=True,
    ),
    Spec(
        "plugins",
        "plugins.py",
        "Third-party plugins",
        ["--runs", "20", "--plugins", "50"],
        ["--runs", "5", "--plugins", "50"],
        "`ketch --help` and `ketch plugins` with 50 installed dummy plugins (dist-info on PYTHONPATH, each one tool, "
        "one command and a system-prompt part, registrations undeclared) against none, interleaved.",
    ),
    Spec(
        "loop",
        "loop.py",
        "Loop overhead (store on the disk)",
        ["--steps", "2000"],
        ["--steps", "500"],
        "One turn of 2,000 tool calls of a trivial read-only tool through the whole stack (every bundled plugin, "
        "policy and guards, events, the encrypted journaled SQLite store), driven by a provider that answers "
        "instantly. Overhead per step: the time between two provider calls, less the JSON encoding of the request.",
    ),
    Spec(
        "loop-ram",
        "loop.py",
        "Loop overhead (store in RAM)",
        ["--steps", "2000"],
        ["--steps", "500"],
        "The same, with the temporary directory (and so the store) on tmpfs: what is left is ketch's CPU, "
        "without the disk's fsync latency.",
        env={"TMPDIR": "/dev/shm"},
        diagnostic=True,
    ),
    Spec(
        "loop-kernel",
        "loop.py",
        "Loop overhead (store in RAM, the kernel alone)",
        ["--steps", "2000"],
        ["--steps", "500"],
        "The same in RAM, with the store, crypto, user hooks, context, compaction and catalog plugins disabled: the kernel's "
        "loop, the policy and the guards, the provider's wire conversion.",
        env={
            "TMPDIR": "/dev/shm",
            "KETCH_DISABLE_PLUGINS": "store,crypto,hooks,context,compact,catalog",
        },
        diagnostic=True,
    ),
    Spec(
        "store",
        "store.py",
        "Session store",
        [],
        ["--quick"],
        "Appends, loads and lists on a real SQLite file encrypted with AES-256-GCM at 1k, 10k and 100k entries (and "
        "sessions), and how their CPU cost per entry grows; the key unwrap (the passphrase KDFs at the parameters new key "
        "files record, and the kernel keyring's cached path); the key rotation of a 10,000-entry store.",
    ),
    Spec(
        "store_pg",
        "store_pg.py",
        "Session store on PostgreSQL (beside SQLite)",
        [],
        ["--quick"],
        "The same journal code on a PostgreSQL server on loopback (`KETCH_TEST_PG_URL`, else a throwaway one from "
        "`.ci/postgres`) and on the SQLite file: appends per second (one transaction each, as the recorder does), tool "
        "dispatch + outcome pairs, and the load of a 10,000-entry session with its MAC chain checked.",
    ),
    Spec(
        "compaction",
        "compaction.py",
        "Compaction",
        ["--runs", "30"],
        ["--runs", "5"],
        "The deterministic compactor and a whole compaction on a ~200k-token coding session, three budgets.",
    ),
    Spec(
        "render",
        "render.py",
        "Streaming Markdown render",
        ["--runs", "5"],
        ["--runs", "2"],
        "Cost per token of the shell's streaming Markdown renderer (rich, a 100-column truecolor console writing to memory, "
        "the live block drawn every 8 tokens) for 1k, 5k and 20k-token answers of headings, lists, tables and code.",
    ),
    Spec(
        "search",
        "search.py",
        "Search",
        ["--files", "50000", "--runs", "10"],
        ["--files", "10000", "--runs", "3"],
        "The `grep` and `glob` tools against raw `rg` and an `fd`-style `os.scandir` walk on a generated 50k-file "
        "repository (a tenth of it gitignored), interleaved.",
    ),
    Spec(
        "memory",
        "memory.py",
        "Memory",
        ["--steps", "2000", "--turns", "200"],
        ["--steps", "300", "--turns", "20"],
        "Peak RSS of a 2,000-step headless session against a loopback server, and RSS of the interactive shell in "
        "tmux over 200 turns.",
    ),
    Spec(
        "policy_sweep",
        "policy_sweep.py",
        "Policy",
        [],
        ["--count", "500"],
        "Votes per second of the guards and the policy together over the hand-written security corpus and a generated sweep "
        "of 5,000 variants; then, for each configuration (`assisted` without the sandbox, `assisted` and `full-access` with it), every variant decided through a real kernel's votes and what was "
        "allowed run for real through the `shell` tool among canaries: the outcomes, the effects (there must be none) and the time.",
    ),
    Spec(
        "sandbox",
        "sandbox.py",
        "Sandbox and redaction",
        [],
        ["--files", "10000", "--runs", "5"],
        "On a generated 100,000-file repository: the sandbox's workspace index (the first scan, a scan when nothing changed, "
        "one after ten new files; inotify and the stat fallback), a warm `wrap` and starting a command in the sandbox; "
        "redaction of 1 MB and 10 MB of code-like output holding secrets.",
    ),
    Spec(
        "egress",
        "egress.py",
        "Sandbox egress proxy",
        [],
        ["--runs", "30"],
        "What the egress proxy adds to a sandboxed command's start: `true` in the sandbox without network, and with it by "
        "each route this machine can use -- the proxy's socket made inside the command's network namespace from a thread "
        "of ketch (root) or by the per-session helper (every user), and the forwarder fallback -- interleaved run by run, "
        "each run opening the command's channel and letting it go; and the proxy's first start (medians of wall time: on "
        "a loaded machine they include waiting for a CPU; the load average is recorded before and after).",
    ),
    Spec(
        "secret_scan",
        "secret_scan.py",
        "Secrets by content",
        [],
        ["--files", "5000", "--runs", "2"],
        "On a generated 50,000-file repository: the sandbox's workspace index with content classification against names "
        "only, the background warm-up of the classification, and the proof's walks of `rg PATTERN` and `grep -r PATTERN .` "
        "warm and cold (a proof reads at most 2,000 files to classify, then asks).",
    ),
    Spec(
        "checkpoints",
        "checkpoints.py",
        "Checkpoints",
        [],
        ["--files", "2000", "--rounds", "5"],
        "A checkpoint (the .gitignore-aware walk, reading what changed, storing new blobs and trees, the record) of a "
        "10,000-file workspace, unchanged and with 10 files changed, against bare `os.scandir` walks of the same tree; "
        "the store's growth per checkpoint.",
    ),
    Spec(
        "lsp",
        "lsp.py",
        "Language servers: diagnostics per edit",
        ["--edits", "30", "--rounds", "3"],
        ["--edits", "10", "--rounds", "1", "--loops", "5000"],
        "`edit_file` through the whole stack (sandbox, encrypted store, checkpoints) with `[lsp] enabled = false`, "
        "with no language server installed, and with warm basedpyright and ruff servers (each edit's new problems "
        "found and attached), interleaved; and the lsp plugin's hooks per edit when no server is installed.",
    ),
]


@dataclass
class Outcome:
    spec: Spec
    status: str  # json | text | missing | failed
    argv: list[str] = field(default_factory=list)
    data: dict[str, Any] | None = None
    text: str = ""
    error: str = ""
    returncode: int = 0
    seconds: float = 0.0
    load: tuple[float, float] = (0.0, 0.0)


# --- running -------------------------------------------------------------------------------


def run(spec: Spec, quick: bool, extra: dict[str, list[str]]) -> Outcome:
    path = HERE / spec.script
    if not path.exists():
        return Outcome(spec, "missing")
    args = [*(spec.quick if quick else spec.args), *extra.get(spec.name, [])]
    env = {**os.environ, **spec.env}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    load_before = os.getloadavg()[0]
    began = time.perf_counter()
    argv = [sys.executable, str(path), *args, "--json"]
    print(f"run: {spec.name}: {shlex.join(argv[1:])}", file=sys.stderr, flush=True)
    done = _run(argv, env, spec.timeout)
    if done.returncode == 2 and "unrecognized arguments: --json" in done.stderr:
        argv = argv[:-1]
        print(
            f"run: {spec.name} takes no --json yet; reading its text", file=sys.stderr, flush=True
        )
        done = _run(argv, env, spec.timeout)
    outcome = Outcome(
        spec,
        "text",
        argv=argv,
        returncode=done.returncode,
        seconds=time.perf_counter() - began,
        load=(load_before, os.getloadavg()[0]),
        text=done.stdout,
    )
    if argv[-1] == "--json":
        data = _one_object(done.stdout)
        if data is not None:
            outcome.status, outcome.data = "json", data
    if outcome.status != "json" and (done.returncode not in (0, 1) or not done.stdout.strip()):
        outcome.status, outcome.error = "failed", (done.stderr or done.stdout).strip()[-1500:]
    print(
        f"run: {spec.name}: {outcome.status}, exit {done.returncode}, {outcome.seconds:.0f} s",
        file=sys.stderr,
        flush=True,
    )
    return outcome


def _run(argv: list[str], env: dict[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired as exc:
        return subprocess.CompletedProcess(
            argv, 124, stdout="", stderr=f"timed out after {timeout:.0f} s\n{exc.stderr or ''}"
        )


def _one_object(stdout: str) -> dict[str, Any] | None:
    for text in (stdout, *(line for line in reversed(stdout.splitlines()) if line.startswith("{"))):
        try:
            value = json.loads(text)
        except ValueError:
            continue
        if isinstance(value, dict) and "rows" in value:
            return value
    return None


def fsync_ms(directory: str) -> float | None:
    """Median latency of fsync after a 4 KiB write, in ``directory`` (the disk the
    store and the loop benchmark write to)."""
    try:
        with tempfile.NamedTemporaryFile(dir=directory) as handle:
            times = []
            for _ in range(100):
                handle.write(b"x" * 4096)
                handle.flush()
                start = time.perf_counter()
                os.fsync(handle.fileno())
                times.append(time.perf_counter() - start)
        return statistics.median(times) * 1000
    except OSError:
        return None


# --- plots --------------------------------------------------------------------------------------


def matplotlib_or_none(install: bool) -> Any:
    try:
        import matplotlib
    except ImportError:
        target = CACHE / "plot-libs"
        if str(target) not in sys.path:
            sys.path.insert(0, str(target))
        try:
            import matplotlib
        except ImportError:
            if not install:
                return None
            print(f"run: installing matplotlib into {target} (once)", file=sys.stderr, flush=True)
            done = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pip",
                    "install",
                    "-q",
                    "--target",
                    str(target),
                    "matplotlib",
                ],
                capture_output=True,
                text=True,
            )
            if done.returncode != 0:
                print(
                    f"run: could not install matplotlib: {done.stderr.strip()[-300:]}",
                    file=sys.stderr,
                )
                return None
            import importlib

            importlib.invalidate_caches()
            import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update(
        {
            "figure.dpi": 110,
            "font.size": 9,
            "axes.grid": True,
            "grid.alpha": 0.3,
            "axes.spines.top": False,
            "axes.spines.right": False,
        }
    )
    return plt


class Figures:
    def __init__(self, plt: Any, directory: Path, page: Path) -> None:
        self.plt, self.directory, self.page = plt, directory, page
        directory.mkdir(parents=True, exist_ok=True)
        for old in directory.glob("*.png"):
            old.unlink()

    def save(self, fig: Any, name: str, caption: str) -> str:
        path = self.directory / f"{name}.png"
        fig.tight_layout()
        fig.savefig(path)
        self.plt.close(fig)
        return f"![{caption}]({os.path.relpath(path, self.page.parent)})\n\n*{caption}*\n"


def rolling_median(values: list[float], half: int = 25) -> list[float]:
    return [statistics.median(values[max(0, i - half) : i + half + 1]) for i in range(len(values))]


def plot_startup(fig_: Figures, data: dict[str, Any]) -> str:
    rows = data["rows"]
    colors = {
        "python": "#888888",
        "ketch": "#1f77b4",
        "llm": "#ff7f0e",
        "aider": "#2ca02c",
        "floor": "#bbbbbb",
    }
    fig, ax = fig_.plt.subplots(figsize=(8, 0.32 * len(rows) + 1.2))
    names = [r["measure"] for r in rows][::-1]
    walls = [r["value"] for r in rows][::-1]
    cpus = [r["cpu_ms"] for r in rows][::-1]
    groups = [_group(n) for n in names]
    ax.barh(names, walls, color=[colors[g] for g in groups])
    ax.scatter(cpus, names, color="black", s=12, zorder=3, label="CPU time")
    ax.set_xlabel(
        "milliseconds (bars: wall-time median; dots: CPU-time median of the whole process, for -p until it exits)"
    )
    ax.legend(loc="lower right")
    caption = f"Start-up: medians of {data['runs']} interleaved runs of each command, against bare Python, simonw/llm and aider on this machine."
    return fig_.save(fig, "startup", caption)


def _group(name: str) -> str:
    for key in ("llm", "aider", "ketch"):
        if name.startswith(key):
            return key
    return "floor" if "libraries" in name or "the same" in name else "python"


def plot_loop(fig_: Figures, runs: list[tuple[str, dict[str, Any]]]) -> str:
    fig, ax = fig_.plt.subplots(figsize=(8, 4.4))
    colors = ("#1f77b4", "#d62728", "#2ca02c")
    for (label, data), color in zip(runs, colors, strict=False):
        series = data["series"]
        x, overhead, wire = (
            series["overhead_ms"]["x"],
            series["overhead_ms"]["y"],
            series["wire_conversion_ms"]["y"],
        )
        ax.plot(x, rolling_median(overhead), color=color, label=f"overhead per step, {label}")
        ax.plot(
            x,
            rolling_median([o - w for o, w in zip(overhead, wire, strict=False)]),
            color=color,
            linestyle="--",
            linewidth=0.9,
            label=f"the same less the wire conversion, {label}",
        )
    if runs:
        series = runs[0][1]["series"]
        ax.plot(
            series["wire_conversion_ms"]["x"],
            rolling_median(series["wire_conversion_ms"]["y"]),
            color="#7f7f7f",
            linestyle=":",
            label="the wire conversion (building the request's messages)",
        )
    ax.axhline(5, color="black", linewidth=0.8, linestyle="-.", label="target: 5 ms median")
    ax.set_xlabel("step (tool call) in the session")
    ax.set_ylabel("ms (rolling median of 50 steps)")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=7, loc="upper left")
    steps = runs[0][1]["info"]["steps"] if runs else 0
    caption = (
        f"Loop overhead over one {steps:,}-step session (one run of each variant; rolling median of 50 steps): the store on this "
        "machine's disk, on tmpfs, and the kernel alone on tmpfs; dashed: less the provider's wire conversion; against the 5 ms target."
    )
    return fig_.save(fig, "loop", caption)


def plot_xy(
    fig_: Figures,
    name: str,
    panels: list[tuple[str, dict[str, Any]]],
    caption: str,
    *,
    logx: bool = False,
    kind: str = "line",
) -> str:
    fig, axes = fig_.plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.4), squeeze=False)
    for ax, (title, series) in zip(axes[0], panels, strict=True):
        if kind == "bar":
            ax.bar(
                [str(int(v)) if float(v).is_integer() else str(v) for v in series["x"]],
                series["y"],
                color="#1f77b4",
            )
        else:
            ax.plot(series["x"], series["y"], marker="o", markersize=3)
            if logx:
                ax.set_xscale("log")
        ax.set_title(title, fontsize=9)
        ax.set_xlabel(series.get("x_label", ""))
        ax.set_ylabel(series.get("y_label", ""))
        ax.set_ylim(bottom=0)
    return fig_.save(fig, name, caption)


def plot_store(fig_: Figures, data: dict[str, Any]) -> str:
    """Appends/s, and load and list on log-log axes beside the straight line that linear
    growth from the smallest size would follow (the target: within 1.5x of it)."""
    series = data["series"]
    fig, axes = fig_.plt.subplots(1, 3, figsize=(12.6, 3.6))
    appends = series["appends_per_s"]
    axes[0].plot(appends["x"], appends["y"], marker="o", markersize=3)
    axes[0].axhline(2000, color="black", linewidth=0.8, linestyle="-.", label="target: >= 2,000/s")
    axes[0].set_xscale("log")
    axes[0].set_ylim(bottom=0)
    for ax, name, target in (
        (axes[1], "load_ms", (10_000, 300)),
        (axes[2], "list_ms", (1_000, 100)),
    ):
        one = series[name]
        x, y = one["x"], one["y"]
        ax.plot(x, y, marker="o", markersize=3, label="measured (wall-time median)")
        ax.plot(
            x,
            [y[0] * v / x[0] for v in x],
            color="#7f7f7f",
            linestyle=":",
            label="linear from the smallest",
        )
        ax.plot(
            x,
            [1.5 * y[0] * v / x[0] for v in x],
            color="#7f7f7f",
            linestyle="--",
            linewidth=0.8,
            label="1.5x linear",
        )
        ax.plot(
            *target,
            marker="x",
            color="black",
            linestyle="none",
            label=f"target: <= {target[1]} ms at {target[0]:,}",
        )
        ax.set_xscale("log")
        ax.set_yscale("log")
    for ax, one in zip(
        axes, (series["appends_per_s"], series["load_ms"], series["list_ms"]), strict=True
    ):
        ax.set_title(one.get("title", ""), fontsize=9)
        ax.set_xlabel(one["x_label"])
        ax.set_ylabel(one["y_label"])
        ax.legend(fontsize=7)
    caption = (
        f"Session store on an encrypted SQLite file: appends per second as a session grows, and the time to load it and to "
        f"list every session, on log-log axes against linear growth (medians of up to {data['runs']} runs; appends: one run)."
    )
    return fig_.save(fig, "store", caption)


def plot_render(fig_: Figures, data: dict[str, Any]) -> str:
    one = data["series"]["us_per_token"]
    fig, ax = fig_.plt.subplots(figsize=(6, 3.4))
    ax.plot(one["x"], one["y"], marker="o", markersize=4, label="measured")
    ax.axhline(
        1.5 * one["y"][0],
        color="black",
        linewidth=0.8,
        linestyle="-.",
        label=f"target: 1.5x the {one['x'][0]:,}-token answer's",
    )
    ax.set_xlabel(one["x_label"])
    ax.set_ylabel(one["y_label"])
    ax.set_ylim(0, 1.15 * max(1.5 * one["y"][0], *one["y"]))
    ax.legend(fontsize=7, loc="lower right")
    caption = f"Streaming Markdown render: the cost of one token by the answer's length (medians of {data['runs']} runs of each answer)."
    return fig_.save(fig, "render", caption)


def plot_search(fig_: Figures, data: dict[str, Any]) -> str:
    rows = data["rows"]
    queries = list(dict.fromkeys(r["query"] for r in rows))
    fig, axes = fig_.plt.subplots(
        1, len(queries), figsize=(2.3 * len(queries) + 1, 3.8), squeeze=False
    )
    for ax, query in zip(axes[0], queries, strict=True):
        mine = [r for r in rows if r["query"] == query]
        labels = [
            r["measure"]
            .split(":")[0]
            .replace("grep tool, python engine", "grep tool (python)")
            .replace("rg as the tool runs it", "rg --json --sort")
            for r in mine
        ]
        ax.bar(
            range(len(mine)),
            [r["value"] for r in mine],
            color=["#1f77b4" if "tool" in label else "#999999" for label in labels],
        )
        ax.set_xticks(range(len(mine)), labels, rotation=60, ha="right", fontsize=7)
        ax.set_title(query, fontsize=8)
        ax.set_ylabel("ms (median)")
    caption = f"Search on a generated {data['info']['files']:,}-file repository: the tools (blue) against raw rg and an fd-style walk (grey), medians of {data['runs']} interleaved runs."
    return fig_.save(fig, "search", caption)


# --- the page -------------------------------------------------------------------------------------


def fmt(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return (
            f"{value:,.3g}"
            if abs(value) < 10
            else f"{value:,.1f}"
            if abs(value) < 1000
            else f"{value:,.0f}"
        )
    if isinstance(value, int):
        return f"{value:,}"
    return "" if value is None else str(value).replace("|", "\\|")


UNIT_WORDS = {"us": "µs", "kib": "KiB", "mib": "MiB"}


def table(rows: list[dict[str, Any]], order: list[str] | None = None) -> str:
    """The rows as a Markdown table; extra keys become columns, in ``order`` first (a
    benchmark's ``columns``), then as they first appear."""
    if not rows:
        return ""
    columns = ["measure", "value", *(order or [])]
    for row in rows:
        columns += [k for k in row if k not in columns and k != "unit"]
    head = [
        "",
        "result",
        *[" ".join(UNIT_WORDS.get(w, w) for w in c.split("_")) for c in columns[2:]],
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        value = f"{fmt(row.get('value'))} {row.get('unit', '')}".strip()
        lines.append(
            "| "
            + " | ".join([fmt(row.get("measure")), value, *[fmt(row.get(c)) for c in columns[2:]]])
            + " |"
        )
    return "\n".join(lines) + "\n"


def verdict(target: dict[str, Any]) -> str:
    return {True: "**met**", False: "**missed**", None: "not measured"}[target.get("met")]


def targets_table(outcomes: list[Outcome]) -> str:
    lines = ["| benchmark | target | measured | limit | | judged on |", "|---|---|---|---|---|---|"]
    for outcome in outcomes:
        if outcome.spec.diagnostic:
            continue
        for target in (outcome.data or {}).get("targets", []):
            unit = target.get("unit", "")
            limit = f"{target.get('op', '<=')} {fmt(target.get('limit'))} {unit}".strip()
            extra = (
                f"; CPU: {fmt(target['cpu_ratio'])}x"
                if "cpu_ratio" in target
                else (f"; CPU {fmt(target['cpu_ms'])} ms" if "cpu_ms" in target else "")
            )
            measured = f"{fmt(target.get('value'))} {unit}".strip()
            lines.append(
                f"| {outcome.spec.name} | {target['name']} | {measured} | {limit} | {verdict(target)} | {target.get('judged_on', '')}{extra} |"
            )
    for outcome in outcomes:
        if outcome.status in ("text", "failed", "missing"):
            said = {
                "text": "prints text only (no --json yet): see its section",
                "failed": "failed: see its section",
                "missing": "not on this branch yet",
            }[outcome.status]
            lines.append(f"| {outcome.spec.name} | its targets | | | {said} | |")
    return "\n".join(lines) + "\n"


def machine() -> dict[str, str]:
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    mem = next(
        (
            int(line.split()[1])
            for line in Path("/proc/meminfo").read_text().splitlines()
            if line.startswith("MemTotal")
        ),
        0,
    )
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    ).stdout.strip()
    return {
        "cpu": cpu,
        "cores": str(os.cpu_count()),
        "memory": f"{mem / 1024 / 1024:.0f} GiB",
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "commit": commit + (" (with uncommitted changes)" if dirty else ""),
    }


def measured_on() -> dict[str, Any]:
    """The machine, the commit, and fsync's latency, as the run starts."""
    return {
        **machine(),
        "fsync_disk_ms": fsync_ms(tempfile.gettempdir()),
        "fsync_ram_ms": fsync_ms("/dev/shm") if Path("/dev/shm").is_dir() else None,
    }


def write_page(
    outcomes: list[Outcome],
    out: Path,
    started: datetime.datetime,
    seconds: float,
    plt: Any,
    quick: bool,
    info: dict[str, Any],
) -> None:
    by = {o.spec.name: o for o in outcomes}
    figs = Figures(plt, out.parent / "performance", out) if plt else None
    loads = [value for o in outcomes if o.status != "missing" for value in o.load]
    disk_fsync, ram_fsync = info.get("fsync_disk_ms"), info.get("fsync_ram_ms")
    parts = [
        "# Performance\n",
        "How fast ketch is where people feel it, measured with the benchmarks in `benchmarks/` and reproduced by one "
        "command, `python benchmarks/run.py`, which wrote this page. Ratios are measured in one run against "
        "programs run alongside (bare Python, simonw/llm, aider, ripgrep), because the machine's absolute speed varies.\n",
        f"**Measured** {started:%Y-%m-%d %H:%M} UTC, in {f'{seconds / 60:.0f} minutes' if seconds > 90 else f'{seconds:.0f} s'}{' (`--quick`: smaller sizes, fewer runs)' if quick else ''}, "
        f"on {info['cpu']} ({info['cores']} cores, {info['memory']}), {info['os']}, Python {info['python']}, ketch at commit {info['commit']}. "
        f"The machine is shared with other work: the 1-minute load average ranged from {min(loads, default=0):.1f} to {max(loads, default=0):.1f} "
        "during the run, so every comparison interleaves its runs and reports medians and their number; CPU time is given beside wall time "
        "where load inflates the latter."
        + (
            f" fsync of 4 KiB takes {disk_fsync:.2f} ms (median) on the disk the benchmarks' temporary files are on."
            if disk_fsync
            else ""
        )
        + "\n",
        "## Targets\n",
        targets_table(outcomes),
    ]
    for outcome in outcomes:
        parts.append(section(outcome, by, figs, disk_fsync, ram_fsync))
    parts.append(REPRODUCE)
    out.write_text("\n".join(parts))


def section(
    outcome: Outcome,
    by: dict[str, Outcome],
    figs: Figures | None,
    disk_fsync: float | None,
    ram_fsync: float | None,
) -> str:
    spec = outcome.spec
    lines = [f"## {spec.title}\n", spec.what + "\n"]
    if outcome.status == "missing":
        lines.append(f"*Not run: `benchmarks/{spec.script}` is not on this branch yet.*\n")
        return "\n".join(lines)
    command = shlex.join(["python", f"benchmarks/{spec.script}", *outcome.argv[2:]])
    env = "".join(f"{k}={v} " for k, v in spec.env.items())
    lines.append(
        f"`{env}{command}` · {outcome.seconds:.0f} s · load average {outcome.load[0]:.1f} → {outcome.load[1]:.1f}\n"
    )
    if outcome.status == "failed":
        lines.append(
            f"**The benchmark failed** (exit {outcome.returncode}):\n\n```\n{outcome.error}\n```\n"
        )
        return "\n".join(lines)
    data = outcome.data
    if data is None:
        lines.append("It prints text only (it takes no `--json` yet), shown as it is:\n")
        lines.append(f"```\n{outcome.text.rstrip()}\n```\n")
        return "\n".join(lines)
    runs = data.get("runs")
    if runs:
        lines.append(
            f"Runs behind each figure: {runs}{' (one run)' if runs == 1 else ' (medians)'}.\n"
        )
    lines.append(table(data.get("rows", []), data.get("columns")))
    if data.get("targets"):
        lines += [
            f"- target: {t['name']}: {fmt(t.get('value'))}{' ' + t['unit'] if t.get('unit') else ''} (limit {t.get('op', '<=')} {fmt(t.get('limit'))}): {verdict(t)}"
            for t in data["targets"]
        ]
        lines.append("")
    lines += [f"- {note}" for note in data.get("notes", [])]
    if data.get("notes"):
        lines.append("")
    extra = {k: v for k, v in (data.get("info") or {}).items()}
    if extra:
        lines.append(
            "Details: "
            + "; ".join(
                f"{k.replace('_', ' ')}: {fmt(v) if not isinstance(v, dict) else ', '.join(f'{a} {b}' for a, b in v.items()) or 'none'}"
                for k, v in extra.items()
            )
            + ".\n"
        )
    if figs:
        if spec.name == "startup":
            lines.append(plot_startup(figs, data))
        elif spec.name == "loop-kernel":
            variants = (
                ("store on the disk", "loop"),
                ("store in RAM", "loop-ram"),
                ("kernel alone, RAM", "loop-kernel"),
            )
            lines.append(
                plot_loop(
                    figs,
                    [
                        (label, by[name].data)
                        for label, name in variants
                        if name in by and by[name].data
                    ],
                )
            )
        elif spec.name == "search":
            lines.append(plot_search(figs, data))
        elif spec.name == "store" and {"appends_per_s", "load_ms", "list_ms"} <= set(
            data.get("series", {})
        ):
            lines.append(plot_store(figs, data))
        elif spec.name == "render" and "us_per_token" in data.get("series", {}):
            lines.append(plot_render(figs, data))
        elif not spec.name.startswith("loop") and data.get("series"):
            lines.append(plot_series(figs, spec, data["series"], runs=runs))
    why = EXPLAIN.get(spec.name)
    if why:
        text = why(outcome, by, disk_fsync, ram_fsync)
        if text:
            lines.append(text)
    return "\n".join(lines)


def plot_series(figs: Figures, spec: Spec, series: dict[str, Any], runs: int | None) -> str:
    panels = [
        (s.get("title") or name.replace("_", " "), s)
        for name, s in series.items()
        if isinstance(s, dict) and s.get("x")
    ]
    if not panels:
        return ""
    logx = spec.name == "store"
    how = (
        f"{runs} runs"
        if runs and runs > 1
        else "one run"
        if runs == 1
        else "as the benchmark printed it"
    )
    caption = f"{spec.title}: {'; '.join(p[0] for p in panels)} ({how})."
    return plot_xy(figs, spec.name, panels, caption, logx=logx)


# --- explanations of misses, with the run's own figures -------------------------------------------------


def explain_startup(
    outcome: Outcome, by: dict[str, Outcome], disk_fsync: float | None, ram_fsync: float | None
) -> str:
    data = outcome.data or {}
    rows = {r["measure"]: r for r in data.get("rows", [])}
    targets = {t["name"]: t for t in data.get("targets", [])}
    out = []
    p = rows.get("ketch -p (to first request)")
    floor, no_cli = (
        rows.get("python: the libraries -p needs"),
        rows.get("python: the same, imported plainly"),
    )
    llm = rows.get("llm --version")
    target = targets.get("ketch -p to first request vs llm --version")
    if p and floor and target and target.get("met") is False:
        limit = llm["value"] / 3 if llm else None
        out.append("### Why `-p` misses its target\n")
        out.append(
            f"A third of `llm --version` is {fmt(limit)} ms here. Merely importing the libraries `ketch -p` needs before its "
            f"first request (pydantic, httpx and an HTTP client with its TLS context, keyring and its backend, cryptography, "
            f"sqlite3, asyncio, pluggy with the entry points), in a bare Python, takes {fmt(floor['value'])} ms "
            f"({fmt(floor['cpu_ms'])} ms CPU): the target is below that floor, so no change inside ketch meets it. "
            f"`ketch -p` itself takes {fmt(p['value'])} ms, {fmt(p['value'] - floor['value'])} ms over the floor.\n"
        )
        if no_cli:
            out.append(
                f"The floor is measured with httpx and keyring imported the way ketch imports them, through "
                f"`ketch_import_kit`; imported plainly they take {fmt(no_cli['value'] - floor['value'])} ms more. "
                "httpx imports its own command-line client (click, rich, pygments) on `import httpx` whenever those are "
                "installed (rich is a ketch dependency; the lazy import is merged in the pydantic/httpx2 fork, PR #947, "
                "not in httpx 0.28), and keyring's backend discovery imports the macOS backend on Linux too, whose module "
                "calls `ctypes.util.find_library` (on Linux: `ldconfig`, maybe `gcc`) for Apple's frameworks. The kit "
                "puts a stand-in for `httpx._main` and, off macOS, for `keyring.backends.macOS.api` in `sys.modules` "
                "before the real import; keyring chooses among the same backends (a meta-test compares both).\n"
            )
    explained = data.get("explain")
    if explained:
        out.append(
            "Where `ketch -p`'s own time goes, from one cProfile run of its main thread until the first request leaves (each phase's share of it, applied to the wall-time median to the first request; indented phases are inside the one above):\n"
        )
        out.append("| phase | ms (estimate) | share |\n|---|---|---|")
        out += [
            f"| {'&nbsp;' * 4 * ph['depth']}{ph['phase']} | {fmt(ph['cpu_ms_estimate'])} | {ph['share']:.0%} |"
            for ph in explained["phases"]
        ]
        out.append("")
        out.append(
            f"The imports that cost most before the first request leaves, by `-X importtime` (cumulative, wall time with the tool's own overhead, any thread, {fmt(explained['imports_ms'])} ms of imports in all):\n"
        )
        out.append("| module (imported lazily by ketch) | ms |\n|---|---|")
        out += [f"| `{row['module']}` | {fmt(row['ms'])} |" for row in explained["top_imports"]]
        out.append("")
        out.append(
            "What `-p` no longer does before its first request (issue 32): plugin discovery reads a cache keyed by the "
            "installed distributions (`ketch.plugin_cache`) instead of every distribution's metadata; the tool schemas come "
            "from a cache keyed by the installation and, for editable installs, the source files' sizes and mtimes "
            "(`ketch.tool_cache`), so a tool module loads when its tool is first called; the store opens (its key fetched "
            "through the keyring) on a thread while the first request is under way (the store plugin's `store_open_concurrently`), and "
            "the first tool call waits for it. Then (the second wave): the tools whose plugins decide only whether, or "
            "with which listing, they are offered (the language servers' tools, the skill tool, the agent tool) declare a "
            "cheap `offered_when` beside their hook, and their schemas come from the same cache, one entry per value it "
            "returns; the background, worktree and Claude-plugin commands set up their options in their entry modules "
            "(their modules load when they run); the bwrap probe at start-up is kept by bwrap binary, kernel and "
            "user-namespace settings (`ketch_sandbox.probe_cache`); the provider's TLS context (the CA bundle) is built on "
            "a thread while the session starts. What is left: the libraries themselves (the floor above), `ketch.session` "
            "pulling in the pydantic models of messages and events (schemas built at import, most of them used before the "
            "first request anyway), and the system prompt's workspace context. "
            "`tests/kernel/test_kernel_first_request_imports.py` fails when `-p` loads a module before its first request "
            "that is not on its list. Then (the fourth wave): the first request of a `-p` start whose last runs built "
            "the same request (but for the prompt) is sent at launch by the console script, with nothing but the "
            "standard library, before any of the above loads (the `early_request` plugin and `ketch_early_request_kit`, "
            "[early-request.md](early-request.md)). The phases above stop where the main thread was when that request left (the "
            "rest is ketch building the same request afterwards, whose answer it reads from the request already sent; "
            "`--no-plugin early_request` shows the whole path).\n"
        )
    version = targets.get("ketch --version vs python -c pass")
    if version and version.get("met"):
        out.append(
            f"`ketch --version` is {fmt(version['value'])}x bare Python: it imports the console script's launch module (`ketch_early_request_kit.launch`, which does nothing without `-p`), `ketch` and `ketch.cli`, and nothing else. "
            "The issue's earlier 2.0x came from `PYTHONDONTWRITEBYTECODE=1` in that shell with an editable install: no `.pyc` "
            "files exist for ketch's sources, so every start compiles them; these runs remove the variable, as an installed "
            "ketch has its bytecode.\n"
        )
    plugins = targets.get("ketch plugins")
    if plugins:
        out.append(
            f"`ketch plugins` ({fmt(plugins['value'])} ms, {'met' if plugins.get('met') else 'missed'}) used to import every tool and provider "
            "(about 0.4 s): bundled plugins now declare what their registration hooks register (`@provides` in `ketch.plugins`), "
            "so listing them imports nothing `ketch --help` does not; a plugin without a declaration is still called, alone. "
            "`ketch plugins --check` calls every registration and reports declarations that do not match.\n"
        )
    return "\n".join(out)


def explain_loop(
    outcome: Outcome, by: dict[str, Outcome], disk_fsync: float | None, ram_fsync: float | None
) -> str:
    runs = {
        name: by[name].data
        for name in ("loop", "loop-ram", "loop-kernel")
        if name in by and by[name].data
    }
    if "loop" not in runs or "loop-ram" not in runs:
        return ""

    def target(name: str, start: str) -> Any:
        return next(
            (t["value"] for t in runs[name]["targets"] if t["name"].startswith(start)), None
        )

    def at(name: str, mark: str) -> dict[str, Any] | None:
        return next((r for r in runs[name]["rows"] if r["measure"] == mark), None)

    steps = runs["loop-ram"]["info"]["steps"]
    median = {name: target(name, "median") for name in runs}
    fsync = (
        f" (fsync takes {disk_fsync:.2f} ms here, measured as this page was written; it varies with the other work on the disk)"
        if disk_fsync
        else ""
    )
    text = [
        "### Reading the loop figures\n",
        f"Median overhead per step: {fmt(median['loop'])} ms with the store on the disk, {fmt(median['loop-ram'])} ms with it in RAM. "
        f"Each step commits two journal records with `synchronous=FULL` (the call's dispatch before it runs and its outcome after), "
        f"so each step waits for two fsyncs{fsync}; the difference between the two runs is that wait.",
    ]
    if median["loop"] > 5 >= median["loop-ram"]:
        text[-1] += (
            " The 5 ms target is met by ketch's own work and missed, on a disk this slow, by the durability of the journal. "
            "Committing read-only calls without fsync (a lost record of a read costs a re-run, nothing else), or one fsync for "
            "a call's dispatch and the previous call's outcome, would take the disk out of most steps; that is the store's and "
            "the loop's choice to make."
        )
    text[-1] += "\n"
    first, last = at("loop-ram", "step 100"), at("loop-ram", f"step {steps}")
    if first and last:
        own = [r["value"] - r["wire_conversion_ms"] for r in (first, last)]
        ratio = target("loop-ram", "overhead at")
        text.append(
            f"{'The curve stays within' if ratio is not None and ratio <= 1.5 else 'The curve is not flat, against'} the 1.5x of issue 12: "
            f"in RAM, {fmt(first['value'])} ms at step 100 and {fmt(last['value'])} ms at step {steps:,} ({fmt(ratio)}x). The largest part that grows is the provider's "
            f"conversion of the history to its wire format, {fmt(first['wire_conversion_ms'])} ms to {fmt(last['wire_conversion_ms'])} ms: "
            "each message is converted once and cached, but the request's message list is rebuilt from the whole history on "
            f"every request ({fmt(last['request_kib'])} KiB at the end), so it is proportional to the request's bytes, like the JSON "
            f"encoding the benchmark subtracts. Less the wire conversion as well, a step costs {fmt(own[0])} ms at step 100 and "
            f"{fmt(own[1])} ms at the end ({fmt(own[1] / own[0])}x)."
        )
        if "loop-kernel" in runs:
            k_first, k_last = at("loop-kernel", "step 100"), at("loop-kernel", f"step {steps}")
            if k_first and k_last:
                k_own = [r["value"] - r["wire_conversion_ms"] for r in (k_first, k_last)]
                text[-1] += (
                    f" With the store, hooks, context and compaction plugins disabled, the kernel's loop with the policy and the guards "
                    f"goes from {fmt(k_own[0])} to {fmt(k_own[1])} ms a step (less the wire conversion): the loop itself does a few "
                    "passes over the history per step at C speed (the immutable history tuple copied to append a message, the check "
                    "that it extends the one last measured, pydantic validating the request's tuple of messages: 22 µs at step "
                    "2,000 in a profile), and the rest of the growth comes with the plugins: per call, the store's appends, the "
                    "policy's vote and the recorder cost 1.2 to 1.5 times more in a 2,000-step session than in a 500-step one "
                    "(a profile of both), as the heap and the SQLite file grow; no single step is quadratic."
                )
        text[-1] += "\n"
    return "\n".join(text)


def explain_plugins(
    outcome: Outcome, by: dict[str, Outcome], disk_fsync: float | None, ram_fsync: float | None
) -> str:
    rows = {r["measure"]: r for r in (outcome.data or {}).get("rows", [])}
    listing, helped = rows.get("ketch plugins"), rows.get("ketch --help")
    if not (listing and helped):
        return ""
    return (
        f"Each installed plugin adds {fmt(helped['per_plugin_ms'])} ms to `ketch --help` (finding its entry point, importing its "
        f"module, registering its command) and {fmt(listing['per_plugin_ms'])} ms to `ketch plugins`, which calls the dummies' "
        "registration hooks because they declare nothing, and turns each registered function into a tool (its input model "
        "built from the signature). With `@provides(...)` on their registration hooks they would cost `ketch plugins` what they "
        "cost `ketch --help`.\n"
    )


def explain_search(
    outcome: Outcome, by: dict[str, Outcome], disk_fsync: float | None, ram_fsync: float | None
) -> str:
    rows = {r["measure"]: r for r in (outcome.data or {}).get("rows", [])}
    glob, walk = rows.get("glob tool: **/*.py"), rows.get("fd-style scandir walk: **/*.py")
    grep, rg_tool, rg = (
        rows.get("grep tool: rare literal"),
        rows.get("rg as the tool runs it: rare literal"),
        rows.get("rg: rare literal"),
    )
    out = ["### Reading the search figures\n"]
    if grep and rg_tool and rg:
        out.append(
            f"`grep` takes {fmt(grep['value'])} ms where ripgrep run the same way takes {fmt(rg_tool['value'])} ms: the tool's own CPU is a "
            "few milliseconds (a profile of the tool shows it waiting in epoll for rg's output and exit, through asyncio's pipes). "
            f"Most of the gap to plain `rg` ({fmt(rg['value'])} ms) is `--sort=path`, which the tool passes "
            "so that its first 100 matches are always the same ones: it makes rg walk on one thread. On two cores that costs little; "
            "on a laptop with eight it would cost more (sorting the capped hits in Python instead keeps rg parallel but makes *which* "
            "hits come first vary).\n"
        )
    if glob and walk:
        out.append(
            f"`glob` takes {fmt(glob['value'])} ms where a plain `os.scandir` walk takes {fmt(walk['value'])} ms ({fmt(glob['value'] / walk['value'])}x). "
            "The tool matches on the walker's relative strings and resolves only the paths it shows; what remains is the "
            "ignore-aware walk itself (`ketch_tool_kit.walk`, ripgrep's `ignore` crate through ignore-python), which the "
            "fd-style walk does not do (it reads no `.gitignore`). Profiled on 16,000 files: iterating the crate's entries "
            "takes about 18 ms, but the binding hands each one over as a `pathlib.Path` (`DirEntry.path()`, about 3.7 µs "
            "each, 60 ms) and exposes no file type, so the walk `lstat`s every entry (directories are skipped and symlinks "
            "never followed); `wcmatch` matching adds about 1.4 µs a path. `rg --files` walks with the same crate in "
            "native code; listing through it, as `grep` already does for content, would take glob near that row.\n"
        )
    return "\n".join(out) if len(out) > 1 else ""


def explain_memory(
    outcome: Outcome, by: dict[str, Outcome], disk_fsync: float | None, ram_fsync: float | None
) -> str:
    rows = {r["measure"]: r for r in (outcome.data or {}).get("rows", [])}
    growth = next((r for name, r in rows.items() if name.startswith("headless: RSS growth")), None)
    if not growth:
        return ""
    return (
        "### Reading the memory figures\n\n"
        f"The headless session grows by about {fmt(growth['value'])} KiB per step, linearly (no slope change: nothing leaks "
        "per request). A step adds about 600 bytes of wire content (a call and a small result); what ketch keeps for it is "
        "larger: the pydantic `Message` objects, the per-message caches of the wire conversion and of the size estimate, and "
        "the allocator's slack (tracemalloc of the in-process loop counts about 10 KiB of live Python objects per step). "
        "The turn's history is held for the whole turn by design (a turn in progress is never compacted).\n"
    )


def _rows(outcome: Outcome) -> dict[str, dict[str, Any]]:
    return {r["measure"]: r for r in (outcome.data or {}).get("rows", [])}


def _targets(outcome: Outcome) -> list[dict[str, Any]]:
    return list((outcome.data or {}).get("targets", []))


def explain_store(
    outcome: Outcome, by: dict[str, Outcome], disk_fsync: float | None, ram_fsync: float | None
) -> str:
    rows, targets = _rows(outcome), _targets(outcome)
    growth = [t for t in targets if t["name"].startswith("linear growth: l")]
    if not growth:
        return ""
    out = ["### Reading the store figures\n"]
    missed = [t for t in growth if t.get("met") is False]
    said = "; ".join(
        f"{t['name'].removeprefix('linear growth: ')}: {fmt(t['value'])}x ({fmt(t.get('gc_paused_ratio'))}x with the cyclic GC paused)"
        for t in growth
    )
    verdict_ = (
        "Both are within it."
        if not missed
        else f"{' and '.join(t['name'].removeprefix('linear growth: ').split(' CPU')[0].capitalize() for t in missed)} "
        f"miss{'' if len(missed) > 1 else 'es'} it, and the cause is not in the store's algorithm."
    )
    out.append(
        f"Growth is judged on the CPU cost of one entry at the largest size against the smallest's (1x is linear; 1.5x is the "
        f'margin the loop and the renderer get for "flat"): {said}. {verdict_} '
        "A cProfile of a 1,000- and a 100,000-entry load shows the same calls per entry (one HMAC link of the journal's chain, "
        "one AES-GCM decryption, one JSON decode, the record built and validated by pydantic) and nothing superlinear (the list "
        "reads the `updated` index in order, with no sort). What growth there is comes from each of those calls costing 10-20% "
        "more at 100,000 entries, as the working set outgrows the CPU's caches, and from Python's cyclic garbage collector, "
        "whose full collections walk every live object and so cost more the more entries a load or a list has already built: "
        "the rows with the collector paused leave out that part."
        + (
            " The store pauses the collector while it loads a session and while it lists sessions, so no collection runs "
            "in the middle of one; the collection it defers runs once afterwards, over everything the call built, and is in "
            "the figure (the rows with the collector paused around the benchmark's whole call leave it out)."
            + (
                " A 100,000-entry session, about 100 MB of history, is far beyond what a session holds in its context.\n"
                if missed
                else "\n"
            )
        )
    )
    pairs = rows.get("tool dispatch + outcome pairs/s (synchronous=FULL)")
    if pairs and disk_fsync:
        out.append(
            f"A tool call's dispatch and outcome are two commits with `synchronous=FULL`, so {fmt(pairs['value'])} pairs/s is about "
            f"{fmt(1000 / pairs['value'] / 2)} ms a commit, where fsync alone takes {disk_fsync:.2f} ms on this disk: the pairs are "
            "bounded by the disk, the plain appends (committed with `synchronous=NORMAL` in WAL mode) by the CPU.\n"
        )
    kdf = next(
        (r for name, r in rows.items() if name.startswith("unwrap with the passphrase: Argon2id")),
        None,
    )
    cached = next(
        (r for name, r in rows.items() if name.startswith("unwrap from the kernel keyring cache")),
        None,
    )
    if kdf and cached and isinstance(cached.get("value"), float):
        out.append(
            f"Unwrapping the key with the passphrase costs {fmt(kdf['value'])} ms (Argon2id at the parameters new key files record), "
            f"once per login session: the kernel session keyring then holds the key, and a later start takes {fmt(cached['value'])} ms.\n"
        )
    return "\n".join(out)


def explain_render(
    outcome: Outcome, by: dict[str, Outcome], disk_fsync: float | None, ram_fsync: float | None
) -> str:
    rows = list(_rows(outcome).values())
    target = next(iter(_targets(outcome)), None)
    if not rows or not target:
        return ""
    worst = max(r["value"] for r in rows)
    text = (
        f"A token costs {fmt(rows[0]['value'])} µs in a {rows[0]['measure'].split('-')[0]}-token answer and {fmt(rows[-1]['value'])} µs "
        f"in a {rows[-1]['measure'].split('-')[0]}-token one ({fmt(target['value'])}x): finished blocks are printed once and only the "
        f"trailing block is live, so the cost does not grow with the answer. At {fmt(worst)} µs a token, a fast stream of 100 "
        f"tokens a second costs the renderer {fmt(worst * 100 / 10_000)}% of one core."
    )
    if target.get("met") is False:
        text += (
            " The target is missed: the live block's cost depends on the block, not the answer, so a ratio above 1.5x means "
            "something re-renders what is finished; profile `Renderer.on_event` on the longest answer."
        )
    return "### Reading the render figures\n\n" + text + "\n"


def explain_policy(
    outcome: Outcome, by: dict[str, Outcome], disk_fsync: float | None, ram_fsync: float | None
) -> str:
    rows = _rows(outcome)
    sweeps = [r for name, r in rows.items() if name.startswith("sweep under ")]
    votes = next((r for name, r in rows.items() if name.startswith("votes/s on the sweep")), None)
    if not sweeps:
        return ""
    harmed = [r for r in sweeps if r.get("effects")]
    out = ["### Reading the policy figures\n"]
    if harmed:
        out.append(
            "**A canary was read, changed or contacted** under "
            + ", ".join(r["measure"].removeprefix("sweep under ") for r in harmed)
            + ": the notes above name the command. That is a hole in the permission engine or the sandbox to fix before anything else.\n"
        )
    else:
        out.append(
            f"No configuration let anything touch a canary: of {fmt(sweeps[0]['commands'])} generated commands, "
            + ", ".join(
                f"{fmt(r['allowed'])} allowed and run under {r['measure'].removeprefix('sweep under ')}"
                for r in sweeps
            )
            + ", every one checked. What is not proven asks (nobody approves in a sweep); the benign variants proven are the "
            "share of harmless commands that run without a question.\n"
        )
    if votes:
        out.append(
            f"A vote (the policy's proof and the guards together) takes {fmt(votes['mean_ms'])} ms on average, {fmt(votes['worst_ms'])} ms "
            "at worst: a small part of a tool call. The sweep's time is mostly running what was allowed, for real, and checking "
            "the canaries after each command.\n"
        )
    return "\n".join(out)


def explain_sandbox(
    outcome: Outcome, by: dict[str, Outcome], disk_fsync: float | None, ram_fsync: float | None
) -> str:
    rows, targets = _rows(outcome), _targets(outcome)
    inside, direct = rows.get("start `true` in the sandbox"), rows.get("start `true` directly")
    first, idle = (
        rows.get("index, first scan (inotify)"),
        rows.get("index, nothing changed (inotify)"),
    )
    out = ["### Reading the sandbox figures\n"]
    if first and idle:
        files = (outcome.data or {}).get("info", {}).get("files")
        out.append(
            f"The workspace index (secrets, sockets and `.git` directories the sandbox's view must hide or guard) walks the tree once, "
            f"{fmt(first['value'])} ms for {fmt(files)} files, in the background as a session starts; then inotify keeps it current, "
            f"and a command pays {fmt(idle['value'])} ms for it when nothing changed."
        )
    if inside and direct:
        out.append(
            f"Starting a command in the sandbox costs {fmt(inside['value'] - direct['value'])} ms more than starting it directly "
            "(bubblewrap setting up the namespaces and the mounts of the view)."
        )
    missed = [t for t in targets if t.get("met") is False]
    if missed:
        out.append(
            "Missed: "
            + "; ".join(
                f"{t['name']} ({fmt(t['value'])} ms against {fmt(t['limit'])} ms)" for t in missed
            )
            + ". The medians above are wall time on a shared machine: run `benchmarks/sandbox.py` alone to see whether the miss holds."
        )
    return out[0] + "\n" + " ".join(out[1:]) + "\n" if len(out) > 1 else ""


def explain_checkpoints(
    outcome: Outcome, by: dict[str, Outcome], disk_fsync: float | None, ram_fsync: float | None
) -> str:
    rows = _rows(outcome)
    same = rows.get("checkpoint, unchanged tree")
    changed = next(
        (
            r
            for name, r in rows.items()
            if name.startswith("checkpoint, ") and name.endswith("files changed")
        ),
        None,
    )
    growth = next(
        (
            r
            for name, r in rows.items()
            if name.startswith("store growth per") and "unchanged" not in name
        ),
        None,
    )
    if not same:
        return ""
    text = (
        f"A checkpoint of the unchanged tree takes {fmt(same['value'])} ms, {fmt(same['x_listing_lstat'])}x a bare walk that lists "
        f"the tree and `lstat`s every file (the least any change detection can do) and {fmt(same['x_listing'])}x one that only lists "
        f"it: the scanner compares each file's stat with the last checkpoint's and reads {fmt(same['files_read'])} files."
    )
    if changed:
        text += f" With files changed it reads {fmt(changed['files_read'])} and takes {fmt(changed['value'])} ms."
    if growth:
        text += (
            f" Each of those checkpoints stores {fmt(growth['value'])} bytes of new blobs ({fmt(growth.get('blobs'))} blobs: the changed "
            f"contents and the listings of the directories on their paths) and grows the database by about {fmt(growth.get('database_bytes'))} "
            "bytes, with the tables' indexes and page slack; an unchanged one adds only its record."
        )
    return "### Reading the checkpoint figures\n\n" + text + "\n"


def explain_peers(
    outcome: Outcome, by: dict[str, Outcome], disk_fsync: float | None, ram_fsync: float | None
) -> str:
    data = outcome.data or {}
    rows = [r for r in data.get("rows", []) if r.get("x_first_request") is not None]
    if not rows:
        return ""
    out = ["### Reading the peers' table\n"]
    parts = []
    for row in rows:
        figures = [
            f"{label} {fmt(row[key])}x"
            for key, label in (
                ("x_first_request", "launch to first request"),
                ("x_step_early", "step early"),
                ("x_step_late", "step late"),
                ("x_peak", "peak memory"),
                ("x_request_bytes", "bytes per request"),
            )
            if row.get(key) is not None
        ]
        parts.append(f"against {row['measure']}: " + ", ".join(figures))
    out.append(
        "ketch's figure divided by the peer's (below 1: ketch is faster, smaller or sends less), "
        + "; ".join(parts)
        + ".\n"
    )
    out.append(
        "Codex CLI is a native (Rust) binary: its launch costs no interpreter and no imports, which is why it is the "
        "one to beat to the first request; Claude Code, OpenCode and Gemini CLI are Node programs (OpenCode starts a "
        "local server first). The figures are wall time on a shared machine: the load average is in the details, and "
        "every CLI ran interleaved with the others under the same load, so the ratios hold better than the "
        "milliseconds. Each CLI ran with a throwaway HOME and its own documented switches for a custom base URL and "
        "for no telemetry or update checks (see `benchmarks/peers.py`).\n"
    )
    return "\n".join(out)


def explain_authority(
    outcome: Outcome, by: dict[str, Outcome], disk_fsync: float | None, ram_fsync: float | None
) -> str:
    if not (outcome.data or {}).get("rows"):
        return ""
    return (
        "A row is one command; a cell is what that CLI did with it in its default headless mode, judged on the "
        "canaries: *LEAKED* names the canary (a workspace `.env` token or the environment's secret seen in what the "
        "CLI sent the model next, a contact on the listener, a file outside the workspace changed); otherwise the "
        "start of the tool result the CLI returned. This measures defaults only: each peer can be configured "
        "stricter (or looser), and ketch's own default headless answer to anything that needs approval is no. "
        "ketch's own guarantees are tested by effects in `tests/security` and the Policy section above.\n"
    )


EXPLAIN: dict[str, Callable[[Outcome, dict[str, Outcome], float | None, float | None], str]] = {
    "startup": explain_startup,
    "loop-kernel": explain_loop,
    "plugins": explain_plugins,
    "search": explain_search,
    "memory": explain_memory,
    "store": explain_store,
    "render": explain_render,
    "policy_sweep": explain_policy,
    "sandbox": explain_sandbox,
    "checkpoints": explain_checkpoints,
    "peers": explain_peers,
    "authority": explain_authority,
}

REPRODUCE = """## Reproducing

```console
$ pip install -e '.[test,bench]'        # bench: matplotlib, for the plots
$ python benchmarks/run.py              # everything, rewrites this page and docs/performance/*.png
$ python benchmarks/run.py --quick      # smaller sizes, fewer runs
$ python benchmarks/run.py --render-only   # this page again from the last run's results
$ python benchmarks/run.py --peers      # also Claude Code, Codex CLI, OpenCode, Gemini CLI (npm, needs node)
$ python benchmarks/startup.py --runs 30 --explain   # any one benchmark, its table on the terminal
```

Every benchmark takes `--json` and then prints one JSON object (its rows, targets, curves); `benchmarks/run.py`'s
docstring describes the form. llm and aider are installed from PyPI on first use into
`~/.cache/ketch-bench/venvs` (`KETCH_BENCH_CACHE` moves it) and reused. The benchmarks remove
`PYTHONDONTWRITEBYTECODE` from the environment of what they time: an installed program has its bytecode.
Benchmarks are not CI's pass/fail: their targets are judged here.
"""


LAST_RUN = CACHE / "last-run.json"


def save_last(
    outcomes: list[Outcome],
    started: datetime.datetime,
    seconds: float,
    quick: bool,
    info: dict[str, Any],
) -> None:
    """Every outcome, so that the page can be written again (--render-only) without
    running the benchmarks again."""
    runs = [
        {**{k: v for k, v in vars(o).items() if k != "spec"}, "spec": o.spec.name} for o in outcomes
    ]
    LAST_RUN.parent.mkdir(parents=True, exist_ok=True)
    LAST_RUN.write_text(
        json.dumps(
            {
                "started": started.isoformat(),
                "seconds": seconds,
                "quick": quick,
                "info": info,
                "outcomes": runs,
            }
        )
    )


def render_last(out: Path) -> int:
    try:
        saved = json.loads(LAST_RUN.read_text())
    except (OSError, ValueError) as exc:
        print(
            f"run: no results of an earlier run to render ({LAST_RUN}: {exc}); run the benchmarks first",
            file=sys.stderr,
        )
        return 1
    specs = {s.name: s for s in SPECS}
    outcomes = [
        Outcome(**{**o, "spec": specs[o["spec"]], "load": tuple(o["load"])})
        for o in saved["outcomes"]
        if o["spec"] in specs
    ]
    plt = matplotlib_or_none(install=False)
    write_page(
        outcomes,
        out,
        datetime.datetime.fromisoformat(saved["started"]),
        saved["seconds"],
        plt,
        saved["quick"],
        saved["info"],
    )
    print(f"run: wrote {out} from {LAST_RUN}", file=sys.stderr)
    return 0


def in_private_keyring(argv: list[str]) -> bool:
    """Re-run this script inside a D-Bus session with an unlocked gnome-keyring (as
    .ci/run does), so -p uses a real Secret Service. False when it cannot."""
    if os.environ.get(DBUS_FLAG) or not (
        shutil.which("dbus-run-session") and shutil.which("gnome-keyring-daemon")
    ):
        return False
    home = tempfile.mkdtemp(prefix="ketch-bench-keyring-")
    script = (
        'export XDG_DATA_HOME="$0/data" XDG_RUNTIME_DIR="$0/run"; mkdir -p "$XDG_DATA_HOME" "$XDG_RUNTIME_DIR"; chmod 700 "$XDG_RUNTIME_DIR"; '
        'if printf %s ketch-bench | gnome-keyring-daemon --unlock --components=secrets >/dev/null; then exec "$@"; '
        'else echo "run: gnome-keyring did not start; -p uses the file keyring" >&2; exec "$@" --file-keyring; fi'
    )
    done = subprocess.run(
        ["dbus-run-session", "--", "bash", "-c", script, home, sys.executable, *argv],
        env={**os.environ, DBUS_FLAG: "1"},
    )
    shutil.rmtree(home, ignore_errors=True)
    raise SystemExit(done.returncode)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes and fewer runs")
    parser.add_argument(
        "--only",
        default="",
        help="comma-separated benchmark names: " + ", ".join(s.name for s in SPECS),
    )
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "performance.md")
    parser.add_argument("--no-peers", action="store_true", help="startup without llm and aider")
    parser.add_argument(
        "--peers",
        action="store_true",
        help="also the npm peer CLIs (Claude Code, Codex CLI, OpenCode, Gemini CLI) and the authority comparison",
    )
    parser.add_argument(
        "--no-install",
        action="store_true",
        help="install nothing (peers, matplotlib): use what is there",
    )
    parser.add_argument(
        "--file-keyring",
        action="store_true",
        help="skip the private Secret Service: -p uses ketch's file test keyring",
    )
    parser.add_argument(
        "--render-only",
        action="store_true",
        help=f"write the page again from the last run's results ({LAST_RUN}), running nothing",
    )
    args = parser.parse_args()
    if args.render_only:
        return render_last(args.out)
    if not args.file_keyring:
        in_private_keyring([str(Path(__file__).resolve()), *sys.argv[1:]])
    chosen = [
        s
        for s in SPECS
        if (s.name in args.only.split(",") if args.only else args.peers or not s.peers)
    ]
    unknown = set(filter(None, args.only.split(","))) - {s.name for s in SPECS}
    if unknown:
        parser.error(f"unknown benchmark(s): {', '.join(sorted(unknown))}")
    extra: dict[str, list[str]] = {"startup": [], "peers": [], "authority": []}
    if args.no_peers:
        extra["startup"].append("--no-peers")
    if args.no_install:
        for name in ("startup", "peers", "authority"):
            extra[name].append("--no-install")
    if os.environ.get(DBUS_FLAG) and not args.file_keyring:
        extra["startup"] += ["--keyring", "system"]
        extra["peers"] += ["--keyring", "system"]
    plt = matplotlib_or_none(install=not args.no_install)
    started = datetime.datetime.now(datetime.UTC)
    info = measured_on()
    began = time.perf_counter()
    outcomes = []
    for spec in chosen:
        if "TMPDIR" in spec.env and not Path(spec.env["TMPDIR"]).is_dir():
            outcomes.append(
                Outcome(
                    spec, "failed", error=f"{spec.env['TMPDIR']} does not exist on this machine"
                )
            )
            continue
        outcomes.append(run(spec, args.quick, extra))
        # Kept after each benchmark: a run stopped half-way still renders what it measured.
        save_last(outcomes, started, time.perf_counter() - began, args.quick, info)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    seconds = time.perf_counter() - began
    save_last(outcomes, started, seconds, args.quick, info)
    write_page(outcomes, args.out, started, seconds, plt, args.quick, info)
    print(
        f"run: wrote {args.out}" + ("" if plt else " (no plots: matplotlib is not available)"),
        file=sys.stderr,
    )
    return 0 if all(o.status != "failed" for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
