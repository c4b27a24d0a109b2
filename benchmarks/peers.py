"""ketch against the coding agents people pick instead, in one interleaved run.

    .venv/bin/python benchmarks/peers.py [--runs 10] [--steps 200] [--only codex,claude] [--json]

The peers (Claude Code ``@anthropic-ai/claude-code``, Codex CLI ``@openai/codex``,
OpenCode ``opencode-ai``, Gemini CLI ``@google/gemini-cli``) are installed on first use
from the npm registry into ``$KETCH_BENCH_CACHE/npm/NAME`` (default
``~/.cache/ketch-bench``) and reused after that (``--upgrade`` installs the newest again);
without ``node``/``npm`` (or when an install fails) a peer is skipped and the page says
why. Every CLI runs headless with its default permissions, in its own throwaway HOME
(configured as its documentation says: a base URL for the loopback model, an API key
that is not a key, telemetry and update checks off), in the same small git workspace,
against one scripted model on 127.0.0.1 (``wire.py``) speaking the CLI's own wire format:
OpenAI Chat Completions (ketch, OpenCode), the Responses API (Codex CLI), Anthropic
Messages (Claude Code), Gemini ``streamGenerateContent`` (Gemini CLI). Measured:

* **launch to first request**: from ``exec`` to the arrival of the first model request
  that carries the prompt and the tools (side calls such as titles, quota checks or a
  routing classifier are not it, but their time is inside it); ``--runs`` rounds, the
  CLIs in a shuffled order each round, after one warm-up round;
* **per-step overhead** in one 200-step session (the model reads a different small file
  with the CLI's own file tool at each step; Codex CLI has none and runs ``cat`` through
  its shell tool, in its sandbox): from the answer that asks for a call to the request
  that brings its result, median of the first and of the last 20 steps; the sessions
  run one after another in a shuffled order;
* **peak memory of the process tree** during that session (RSS of the CLI and every
  process under it, summed, sampled every 50 ms);
* **bytes per request**: the first request's body, and the mean over the session.

Every figure is also given as ketch's ratio to each peer. Not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wire import Script, Step, Wire, step_times

CACHE = Path(os.environ.get("KETCH_BENCH_CACHE") or Path.home() / ".cache" / "ketch-bench")
PROMPT = "Read the files the task names and say done."
SECRET_ENV = ("_API_KEY", "_TOKEN")


@dataclass
class Run:
    """How one CLI is started: argv, environment, and the tool call that reads a file."""

    argv: list[str]
    env: dict[str, str]
    read: Callable[[Path], Step]  # the call that reads this file (absolute path)
    tool: str  # the tool name that marks its main requests


@dataclass
class Peer:
    name: str  # short name on the page
    label: str  # the product's name
    package: str  # npm package ("" for ketch)
    binary: str
    wire: str
    setup: Callable[[Peer, Path, Path, Wire, str], Run]  # (peer, home, workspace, server, prompt)
    version: str = ""
    path: Path | None = None  # the installed executable
    skipped: str = ""  # why it is not measured

    @property
    def key(self) -> str:
        return self.name


# --- each CLI's headless set-up ---------------------------------------------------------


def _base_env(home: Path) -> dict[str, str]:
    keep = ("PATH", "LANG", "LC_ALL", "TERM", "TZ", "DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR")
    env = {k: os.environ[k] for k in keep if k in os.environ}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env.update(
        {
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_CACHE_HOME": str(home / ".cache"),
            "XDG_DATA_HOME": str(home / ".local" / "share"),
            "XDG_STATE_HOME": str(home / ".local" / "state"),
            "NO_COLOR": "1",
            "CI": "1",
        }
    )
    if os.environ.get("NODE_EXTRA_CA_CERTS"):
        env["NODE_EXTRA_CA_CERTS"] = os.environ["NODE_EXTRA_CA_CERTS"]
    return env


def setup_ketch(peer: Peer, home: Path, ws: Path, server: Wire, prompt: str) -> Run:
    env = _base_env(home)
    env.update(
        {
            "KETCH_CONFIG_DIR": str(home / "ketch" / "config"),
            "KETCH_STATE_DIR": str(home / "ketch" / "state"),
            "KETCH_CACHE_DIR": str(home / "ketch" / "cache"),
            "KETCH_AUTOLOAD": "bundled",
            "OPENAI_API_KEY": "sk-bench-not-a-key",
            "OPENAI_BASE_URL": f"{server.root}/v1",
        }
    )
    # A default install finds no language server; this one's test extras bring basedpyright
    # and ruff, which ketch_lsp would start for the Python workspace (a Node process of
    # ~100 MiB): off, so that every ketch measured is a default install's.
    config = home / "ketch" / "config"
    config.mkdir(parents=True, exist_ok=True)
    (config / "config.toml").write_text("[lsp]\nenabled = false\n")
    if os.environ.get("KETCH_BENCH_KEYRING") != "system":
        env.update(
            {
                "PYTHON_KEYRING_BACKEND": "ketch.testing.keyring_backend.FileKeyring",
                "KETCH_TEST_KEYRING_FILE": str(home / "keyring.json"),
            }
        )
    assert peer.path is not None
    argv = [str(peer.path), "--provider", "openai", "--model", "gpt-4o-mini"]
    argv += ["--max-iterations", "1000", "-p", prompt]
    return Run(
        argv,
        env,
        lambda path: Step("read_file", {"path": str(path.relative_to(ws))}),
        "read_file",
    )


def setup_claude(peer: Peer, home: Path, ws: Path, server: Wire, prompt: str) -> Run:
    env = _base_env(home)
    env.update(
        {
            "ANTHROPIC_BASE_URL": server.root,
            "ANTHROPIC_API_KEY": "sk-ant-bench-not-a-key",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "DISABLE_AUTOUPDATER": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        }
    )
    assert peer.path is not None
    return Run(
        [str(peer.path), "-p", prompt],
        env,
        lambda path: Step("Read", {"file_path": str(path)}),
        "Read",
    )


def setup_codex(peer: Peer, home: Path, ws: Path, server: Wire, prompt: str) -> Run:
    env = _base_env(home)
    # Codex refuses to put its sandbox helper under /tmp, and without it every command
    # fails; its home goes under the benchmark cache instead.
    codex_home = home / "codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    (codex_home / "config.toml").write_text(
        'model = "bench-model"\nmodel_provider = "bench"\ncheck_for_update_on_startup = false\n\n'
        f'[model_providers.bench]\nname = "bench"\nbase_url = "{server.root}/v1"\n'
        'wire_api = "responses"\nenv_key = "BENCH_API_KEY"\n\n[analytics]\nenabled = false\n'
    )
    env.update({"CODEX_HOME": str(codex_home), "BENCH_API_KEY": "sk-bench-not-a-key"})
    assert peer.path is not None
    return Run(
        [str(peer.path), "exec", "--skip-git-repo-check", prompt],
        env,
        lambda path: Step("exec_command", {"cmd": f"cat {path.relative_to(ws)}"}),
        "exec_command",
    )


def setup_opencode(peer: Peer, home: Path, ws: Path, server: Wire, prompt: str) -> Run:
    env = _base_env(home)
    config = home / ".config" / "opencode"
    config.mkdir(parents=True, exist_ok=True)
    (config / "opencode.json").write_text(
        json.dumps(
            {
                "$schema": "https://opencode.ai/config.json",
                "autoupdate": False,
                "share": "disabled",
                "provider": {
                    "bench": {
                        "npm": "@ai-sdk/openai-compatible",
                        "name": "bench",
                        "options": {"baseURL": f"{server.root}/v1", "apiKey": "sk-bench-not-a-key"},
                        "models": {"bench-model": {"name": "bench", "tool_call": True}},
                    }
                },
                "model": "bench/bench-model",
            }
        )
    )
    env.update({"OPENCODE_DISABLE_AUTOUPDATE": "1", "OPENCODE_DISABLE_MODELS_FETCH": "1"})
    assert peer.path is not None
    return Run(
        [str(peer.path), "run", prompt],
        env,
        lambda path: Step("read", {"filePath": str(path)}),
        "read",
    )


def setup_gemini(peer: Peer, home: Path, ws: Path, server: Wire, prompt: str) -> Run:
    env = _base_env(home)
    settings = home / ".gemini"
    settings.mkdir(parents=True, exist_ok=True)
    (settings / "settings.json").write_text(
        json.dumps(
            {
                "security": {"auth": {"selectedType": "gemini-api-key"}},
                "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
                "privacy": {"usageStatisticsEnabled": False},
                "telemetry": {"enabled": False},
            }
        )
    )
    # Headless Gemini CLI refuses to run in a folder it does not trust; this is the
    # documented switch for automated runs (it trusts the workspace, nothing more).
    env.update(
        {
            "GEMINI_API_KEY": "bench-not-a-key",
            "GOOGLE_GEMINI_BASE_URL": server.root,
            "GEMINI_CLI_TRUST_WORKSPACE": "true",
        }
    )
    assert peer.path is not None
    return Run(
        [str(peer.path), "-p", prompt],
        env,
        lambda path: Step("read_file", {"file_path": str(path.relative_to(ws))}),
        "read_file",
    )


PEERS = [
    Peer("claude", "Claude Code", "@anthropic-ai/claude-code", "claude", "anthropic", setup_claude),
    Peer("codex", "Codex CLI", "@openai/codex", "codex", "responses", setup_codex),
    Peer("opencode", "OpenCode", "opencode-ai", "opencode", "chat", setup_opencode),
    Peer("gemini", "Gemini CLI", "@google/gemini-cli", "gemini", "gemini", setup_gemini),
]


def ketch_peer() -> Peer:
    from importlib.metadata import version

    script = Path(sys.executable).parent / "ketch"
    if not script.exists():
        raise SystemExit(
            f"peers: no ketch console script next to {sys.executable}; pip install -e . first"
        )
    peer = Peer("ketch", "ketch", "", "ketch", "chat", setup_ketch, path=script)
    peer.version = version("ketch")
    return peer


def baseline_peer(script: Path, label: str) -> Peer:
    """An older ketch (another checkout's console script), set up as ketch is: before/after."""
    if not script.exists():
        raise SystemExit(f"peers: no ketch console script at {script}")
    version = subprocess.run([str(script), "--version"], capture_output=True, text=True)
    peer = Peer("ketch-baseline", label, "", "ketch", "chat", setup_ketch, path=script)
    peer.version = version.stdout.strip().rsplit(" ", 1)[-1] or "?"
    return peer


# --- installing the peers -----------------------------------------------------------------


def install(peer: Peer, upgrade: bool, allow: bool) -> None:
    """The peer's executable from its npm install under the cache (installed when missing)."""
    if not shutil.which("node") or not shutil.which("npm"):
        peer.skipped = "node and npm are not installed here"
        return
    prefix = CACHE / "npm" / peer.name
    binary = prefix / "node_modules" / ".bin" / peer.binary
    if upgrade or not binary.exists():
        if not allow:
            peer.skipped = f"not installed in {prefix} (and --no-install was given)"
            return
        print(f"peers: installing {peer.package} into {prefix}", file=sys.stderr, flush=True)
        prefix.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(
            [
                "npm",
                "install",
                "--prefix",
                str(prefix),
                "--no-audit",
                "--no-fund",
                f"{peer.package}@latest",
            ],
            capture_output=True,
            text=True,
            timeout=1800,
        )
        if done.returncode != 0 or not binary.exists():
            peer.skipped = (
                f"npm install {peer.package} failed: {(done.stderr or done.stdout).strip()[-200:]}"
            )
            return
    manifest = prefix / "node_modules" / peer.package / "package.json"
    try:
        peer.version = str(json.loads(manifest.read_text())["version"])
    except (OSError, ValueError, KeyError):
        peer.version = "?"
    peer.path = binary


# --- measuring ----------------------------------------------------------------------------


def tree_rss(root: int) -> int:
    """Resident memory of ``root`` and every process under it, in bytes."""
    parents: dict[int, int] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        rest = stat[stat.rfind(b")") + 2 :].split()
        parents[int(entry.name)] = int(rest[1])
    tree, frontier = {root}, [root]
    while frontier:
        pid = frontier.pop()
        for child, parent in parents.items():
            if parent == pid and child not in tree:
                tree.add(child)
                frontier.append(child)
    page = os.sysconf("SC_PAGE_SIZE")
    total = 0
    for pid in tree:
        try:
            with open(f"/proc/{pid}/statm", "rb") as fh:
                total += int(fh.read().split()[1]) * page
        except (OSError, IndexError, ValueError):
            continue
    return total


class PeakSampler:
    def __init__(self, pid: int, every: float = 0.05) -> None:
        self.pid, self.every, self.peak = pid, every, 0
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, tree_rss(self.pid))
            self._stop.wait(self.every)

    def stop(self) -> int:
        self._stop.set()
        self.thread.join()
        return self.peak


def launch(run: Run, ws: Path, timeout: float, sample: bool = False) -> tuple[float, str, int]:
    """Start the CLI, wait for it to end; returns (start time, its stderr's tail, peak RSS)."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        run.argv,
        cwd=ws,
        env=run.env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    sampler = PeakSampler(proc.pid) if sample else None
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        out, err = proc.communicate()
        err += b"\n(timed out)"
    peak = sampler.stop() if sampler else 0
    tail = (err or out).decode(errors="replace").strip()[-400:]
    return start, tail, peak


@dataclass
class Figures:
    first: list[float] = field(default_factory=list)  # seconds to the first main request
    first_post: list[float] = field(default_factory=list)
    first_bytes: int = 0
    early: float | None = None
    late: float | None = None
    steps_done: int = 0
    peak: int = 0
    mean_bytes: float | None = None
    session_s: float | None = None
    failures: list[str] = field(default_factory=list)


def workspace(root: Path, files: int) -> Path:
    ws = root / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "README.md").write_text("# demo\n\nA small project.\n")
    for n in range(files):
        (ws / "src" / f"module_{n:03d}.py").write_text(f"def f{n}(x):\n    return x * {n}\n")
    if shutil.which("git"):
        for argv in (
            ["init", "-q"],
            ["add", "-A"],
            ["-c", "user.name=b", "-c", "user.email=b@example.invalid", "commit", "-qm", "init"],
        ):
            subprocess.run(["git", *argv], cwd=ws, check=True, capture_output=True)
    return ws


def first_request(
    peer: Peer, run: Run, server: Wire, ws: Path, figures: Figures, keep: bool
) -> None:
    server.reset(Script(steps=[], final="done", tools=frozenset({run.tool})))
    start, tail, _ = launch(run, ws, timeout=120)
    main = server.first_main(start)
    post = server.first_post(start)
    if main is None:
        figures.failures.append(f"no request with its tools arrived: {tail[-200:]}")
        return
    if keep:
        figures.first.append(main - start)
        if post is not None:
            figures.first_post.append(post - start)
        figures.first_bytes = next(a.size for a in server.mains())


def session(
    peer: Peer, run: Run, server: Wire, ws: Path, steps: int, figures: Figures, window: int
) -> None:
    files = sorted((ws / "src").glob("module_*.py"))
    script = [run.read(files[n % len(files)]) for n in range(steps)]
    server.reset(Script(steps=script, final="done", tools=frozenset({run.tool})))
    start, tail, peak = launch(run, ws, timeout=1800, sample=True)
    mains = server.mains()
    times = step_times(mains)
    figures.peak = peak
    figures.steps_done = max((a.results for a in mains), default=0)
    figures.session_s = (mains[-1].at - start) if mains else None
    if figures.steps_done < steps:
        figures.failures.append(
            f"the session stopped after {figures.steps_done} of {steps} steps: {tail[-200:]}"
        )
    gaps = times.gaps
    if len(gaps) >= 2 * window:
        figures.early = statistics.median(gaps[:window])
        figures.late = statistics.median(gaps[-window:])
    if times.sizes:
        figures.mean_bytes = statistics.fmean(times.sizes)


def ms(value: float | None) -> float | None:
    return None if value is None else round(value * 1000, 1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10, help="launch rounds (after one warm-up)")
    parser.add_argument("--steps", type=int, default=200, help="tool calls in the long session")
    parser.add_argument(
        "--window", type=int, default=20, help="steps in the early and late medians"
    )
    parser.add_argument(
        "--only", default="", help="comma-separated peers: " + ",".join(p.name for p in PEERS)
    )
    parser.add_argument("--no-install", action="store_true", help="use installed peers only")
    parser.add_argument("--upgrade", action="store_true", help="install the newest peers again")
    parser.add_argument("--no-session", action="store_true", help="launch figures only")
    parser.add_argument("--seed", type=int, default=32)
    parser.add_argument(
        "--baseline",
        default=os.environ.get("KETCH_BENCH_BASELINE", ""),
        help="another ketch console script (an older build) measured beside this one",
    )
    parser.add_argument(
        "--baseline-label", default=os.environ.get("KETCH_BENCH_BASELINE_LABEL", "ketch (baseline)")
    )
    parser.add_argument(
        "--keyring",
        choices=("file", "system"),
        default=os.environ.get("KETCH_BENCH_KEYRING", "file"),
        help="ketch's key: the test file keyring, or the session's Secret Service (run.py's private one)",
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    os.environ["KETCH_BENCH_KEYRING"] = args.keyring  # read by setup_ketch
    chosen = [p for p in PEERS if not args.only or p.name in args.only.split(",")]
    for peer in chosen:
        install(peer, args.upgrade, not args.no_install)
    ketch = ketch_peer()
    cli = [ketch, *[p for p in chosen if not p.skipped]]
    if args.baseline:
        cli.insert(1, baseline_peer(Path(args.baseline), args.baseline_label))
    figures = {p.name: Figures() for p in cli}
    server = Wire()
    rng = random.Random(args.seed)
    root = Path(tempfile.mkdtemp(prefix="peers-", dir=_scratch()))
    began = time.perf_counter()
    load = [os.getloadavg()[0]]
    try:
        ws = workspace(root, max(args.steps, 1))
        homes = {p.name: root / "home" / p.name for p in cli}
        for home in homes.values():
            home.mkdir(parents=True)
        runs = {p.name: p.setup(p, homes[p.name], ws, server, PROMPT) for p in cli}
        for round_ in range(1 + args.runs):
            order = cli[:]
            rng.shuffle(order)
            for peer in order:
                first_request(
                    peer, runs[peer.name], server, ws, figures[peer.name], keep=round_ > 0
                )
            print(f"peers: launch round {round_}/{args.runs} done", file=sys.stderr, flush=True)
        load.append(os.getloadavg()[0])
        if not args.no_session and args.steps:
            order = cli[:]
            rng.shuffle(order)
            for peer in order:
                session(
                    peer, runs[peer.name], server, ws, args.steps, figures[peer.name], args.window
                )
                subprocess.run(["git", "checkout", "-q", "--", "."], cwd=ws, capture_output=True)
                print(
                    f"peers: {peer.name}: {args.steps}-step session done",
                    file=sys.stderr,
                    flush=True,
                )
        load.append(os.getloadavg()[0])
    finally:
        server.close()
        shutil.rmtree(root, ignore_errors=True)
    result = report(ketch, cli, chosen, figures, args, time.perf_counter() - began, load)
    if args.json:
        print(json.dumps(result))
    else:
        print_table(result)
    return 0


def _scratch() -> str:
    """Scratch space outside /tmp (Codex CLI will not put its sandbox helper under /tmp)."""
    path = CACHE / "run"
    path.mkdir(parents=True, exist_ok=True)
    return str(path)


def report(
    ketch: Peer,
    cli: list[Peer],
    chosen: list[Peer],
    figures: dict[str, Figures],
    args: argparse.Namespace,
    seconds: float,
    load: list[float],
) -> dict[str, Any]:
    k = figures["ketch"]

    def med(values: list[float]) -> float | None:
        return statistics.median(values) if values else None

    def ratio(a: float | None, b: float | None) -> float | None:
        return round(a / b, 3) if a and b else None

    rows = []
    for peer in cli:
        f = figures[peer.name]
        row: dict[str, Any] = {
            "measure": f"{peer.label} {peer.version}",
            "value": ms(med(f.first)),
            "unit": "ms",
            "first_request_ms": ms(med(f.first)),
            "any_request_ms": ms(med(f.first_post)),
            "step_early_ms": ms(f.early),
            "step_late_ms": ms(f.late),
            "peak_mib": round(f.peak / 2**20, 1) if f.peak else None,
            "first_request_kib": round(f.first_bytes / 1024, 1) if f.first_bytes else None,
            "request_kib_mean": round(f.mean_bytes / 1024, 1) if f.mean_bytes else None,
            "steps": f.steps_done,
        }
        if peer is not ketch:
            row.update(
                {
                    "x_first_request": ratio(med(k.first), med(f.first)),
                    "x_step_early": ratio(k.early, f.early),
                    "x_step_late": ratio(k.late, f.late),
                    "x_peak": ratio(k.peak, f.peak),
                    "x_request_bytes": ratio(k.mean_bytes, f.mean_bytes),
                }
            )
        rows.append(row)
    notes = [f"{p.label} ({p.package}): skipped: {p.skipped}" for p in chosen if p.skipped]
    for peer in cli:
        for failure in figures[peer.name].failures[:3]:
            notes.append(f"{peer.label}: {failure}")
    targets = []
    by = {p.name: p for p in cli}
    for name, limit in (("codex", 1.0), ("claude", 0.6)):
        if name not in by:
            continue
        value = ratio(med(k.first), med(figures[name].first))
        targets.append(
            {
                "name": f"ketch -p launch to first request vs {by[name].label}",
                "value": value,
                "limit": limit,
                "unit": "x",
                "op": "<=",
                "met": value is not None and value <= limit,
                "judged_on": "wall-time medians, one interleaved run",
            }
        )
    return {
        "benchmark": "peers",
        "title": "Peers",
        "runs": args.runs,
        "rows": rows,
        "targets": targets,
        "columns": [
            "first_request_ms",
            "x_first_request",
            "any_request_ms",
            "step_early_ms",
            "x_step_early",
            "step_late_ms",
            "x_step_late",
            "peak_mib",
            "x_peak",
            "first_request_kib",
            "request_kib_mean",
            "x_request_bytes",
            "steps",
        ],
        "info": {
            "versions": {p.name: p.version for p in cli},
            "steps": args.steps,
            "window": args.window,
            "node": _node_version(),
            "load": [round(x, 2) for x in load],
            "seconds": round(seconds, 1),
        },
        "notes": notes,
    }


def _node_version() -> str:
    node = shutil.which("node")
    if not node:
        return "not installed"
    return subprocess.run([node, "--version"], capture_output=True, text=True).stdout.strip()


def print_table(result: dict[str, Any]) -> None:
    cols = [
        "first_request_ms",
        "x_first_request",
        "step_early_ms",
        "step_late_ms",
        "peak_mib",
        "request_kib_mean",
        "steps",
    ]
    print(f"{'':<26}" + "".join(f"{c[:16]:>17}" for c in cols))
    for row in result["rows"]:
        print(f"{row['measure']:<26}" + "".join(f"{str(row.get(c, '')):>17}" for c in cols))
    for target in result["targets"]:
        print(
            f"target {target['name']}: {target['value']} (limit {target['op']} {target['limit']}) {'met' if target['met'] else 'MISSED'}"
        )
    for note in result["notes"]:
        print(f"note: {note}")
    print(f"info: {result['info']}")


if __name__ == "__main__":
    sys.exit(main())
