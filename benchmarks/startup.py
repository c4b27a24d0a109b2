"""Start-up: ketch's commands against bare Python and two peers, simonw/llm and aider.

    .venv/bin/python benchmarks/startup.py [--runs 30] [--no-peers] [--json]

Interleaves, round by round in a shuffled order (so machine noise hits every command
alike): ``python -c pass``, ``ketch --version``, ``--help``, ``plugins``, ``ketch -p``
until its first chat request reaches a loopback OpenAI-compatible server on 127.0.0.1,
and ``llm`` and ``aider`` (``--version``, ``--help``), each peer installed from PyPI in
its own virtualenv under ``$KETCH_BENCH_CACHE/venvs`` (default
``~/.cache/ketch-bench/venvs``), created on first use and reused after that. Every
command runs as its console script, in an isolated HOME and ketch dirs, with bytecode
caches on (``PYTHONDONTWRITEBYTECODE`` is removed: installed software has its ``.pyc``
files). Reports wall-time medians, CPU-time medians (user + system of the process,
from ``wait4``) and ratios measured in this one run; the targets (issue 19):

* ``ketch --help`` at most a quarter of ``llm --help``;
* ``ketch --version`` at most 1.5x ``python -c pass``;
* ``ketch -p`` to the first request under a third of ``llm --version``;
* ``ketch plugins`` under 150 ms.

``-p`` runs a real headless turn: the encrypted store opens its key through keyring
(``--keyring file``: ketch's file test backend; ``--keyring system``: whatever keyring
finds, e.g. a real Secret Service). Prints a table (``--json``: one JSON object, the
benchmarks' machine-readable form described in benchmarks/run.py); not a test.
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
import time
import venv
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loopback import Loopback

CACHE = Path(os.environ.get("KETCH_BENCH_CACHE") or Path.home() / ".cache" / "ketch-bench")
PEERS = {"llm": "llm", "aider": "aider-chat"}  # console script -> PyPI distribution
TARGET_PLUGINS_MS = 150.0


@dataclass
class Case:
    name: str
    argv: list[str]
    group: str  # python | ketch | llm | aider
    first_request: bool = False
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    first_get: list[float] = field(default_factory=list)


def run_once(case: Case, env: dict[str, str], cwd: Path, server: Loopback) -> None:
    start = time.perf_counter()
    proc = subprocess.Popen(
        case.argv,
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    end = time.perf_counter()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(
            f"startup: {case.name} exited {proc.returncode}: {err.decode(errors='replace').strip()[-400:]}"
        )
    if case.first_request:
        post = server.first("POST", start)
        if post is None:
            raise SystemExit(
                f"startup: {case.name} never sent a chat request: {err.decode(errors='replace').strip()[-400:]}"
            )
        case.wall.append(post - start)
        get = server.first("GET", start)
        if get is not None and get < post:
            case.first_get.append(get - start)
    else:
        case.wall.append(end - start)
    case.cpu.append(usage.ru_utime + usage.ru_stime)


# What -p imports before its first request, imported the way ketch imports it (httpx and
# keyring through ketch_import_kit, without httpx's CLI client and keyring's macOS probe) ...
FLOOR = (
    "import asyncio, json, sqlite3, argparse; import pydantic; from pydantic import BaseModel; "
    "from ketch_import_kit.httpx import httpx; from ketch_import_kit.keyring import keyring; "
    "keyring.get_keyring(); from cryptography.hazmat.primitives.ciphers.aead import AESGCM; "
    "import pluggy, importlib.metadata; httpx.AsyncClient()"
)
# ... and plainly, as any program would: the difference is what the kit saves.
PLAIN_FLOOR = FLOOR.replace(
    "from ketch_import_kit.httpx import httpx; from ketch_import_kit.keyring import keyring",
    "import httpx; import keyring",
)


def peer_script(
    name: str, package: str, cache: Path, install: bool
) -> tuple[list[str], str] | None:
    """The peer's console script in its own cached virtualenv (created on first use) and
    its version; None when it is not installed and ``install`` is off or pip fails."""
    home = cache / "venvs" / name
    script, python = home / "bin" / name, home / "bin" / "python"
    if not script.exists():
        if not install:
            return None
        print(
            f"startup: installing {package} into {home} (once; reused after that)", file=sys.stderr
        )
        shutil.rmtree(home, ignore_errors=True)
        venv.EnvBuilder(with_pip=True).create(home)
        done = subprocess.run(
            [str(python), "-m", "pip", "install", "-q", package], capture_output=True, text=True
        )
        if done.returncode != 0 or not script.exists():
            print(
                f"startup: could not install {package}: {done.stderr.strip()[-300:]}",
                file=sys.stderr,
            )
            return None
    version = subprocess.run(
        [str(python), "-c", f"import importlib.metadata as m; print(m.version({package!r}))"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    return [str(script)], version


def keyring_backend(env: dict[str, str], cwd: Path) -> str:
    """The keyring backend -p's store used (its class), as keyring chooses it in that env."""
    code = "import keyring; k = keyring.get_keyring(); print(type(k).__module__ + '.' + type(k).__name__)"
    return (
        subprocess.run(
            [sys.executable, "-c", code], env=env, cwd=cwd, capture_output=True, text=True
        ).stdout.strip()
        or "unknown"
    )


def git_workspace(path: Path, env: dict[str, str]) -> None:
    """A small repository, as ketch usually starts in one."""
    (path / "src").mkdir(parents=True)
    (path / "README.md").write_text("# demo\n\nA small project.\n")
    for n in range(20):
        (path / "src" / f"module_{n}.py").write_text(f"def f{n}(x):\n    return x * {n}\n")
    if shutil.which("git"):
        for argv in (
            ["init", "-q"],
            ["add", "-A"],
            ["-c", "user.name=b", "-c", "user.email=b@example.invalid", "commit", "-qm", "init"],
        ):
            subprocess.run(["git", *argv], cwd=path, env=env, check=True, capture_output=True)


@contextmanager
def sandbox_home() -> Iterator[tuple[Path, dict[str, str]]]:
    root = Path(tempfile.mkdtemp(prefix="ketch-bench-startup-"))
    try:
        env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("KETCH_", "LLM_", "AIDER_", "OPENAI_"))
        }
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env.update(
            {
                "HOME": str(root / "home"),
                "XDG_CONFIG_HOME": str(root / "home" / ".config"),
                "XDG_STATE_HOME": str(root / "home" / ".local" / "state"),
                "XDG_CACHE_HOME": str(root / "home" / ".cache"),
                "XDG_DATA_HOME": str(root / "home" / ".local" / "share"),
                "KETCH_CONFIG_DIR": str(root / "ketch" / "config"),
                "KETCH_STATE_DIR": str(root / "ketch" / "state"),
                "KETCH_CACHE_DIR": str(root / "ketch" / "cache"),
                "KETCH_AUTOLOAD": "bundled",
                "NO_COLOR": "1",
            }
        )
        (root / "home").mkdir()
        yield root, env
    finally:
        shutil.rmtree(root, ignore_errors=True)


# Phases of ``ketch -p`` (inclusive; indented ones are inside the one above), found in a
# cProfile of one run by (file, function): what the time to the first request is made of.
PHASES = (
    (
        "discover the plugins (the discovery cache) and import their entry modules",
        "ketch/kernel.py",
        "boot",
        0,
    ),
    ("build the command line (commands, modes, options)", "ketch/cli.py", "build_parser", 0),
    ("the headless frontend (its module)", "ketch/kernel.py", "frontends", 0),
    (
        "wait for the store (opened on a thread beside the first request: key via keyring)",
        "ketch/kernel.py",
        "store",
        0,
    ),
    ("open the session", "ketch/kernel.py", "new_session", 0),
    (
        "register tools (schemas from the tool cache; modules load at first call)",
        "ketch/kernel.py",
        "tools",
        1,
    ),
    ("register provider kinds", "ketch/kernel.py", "provider_kinds", 1),
    ("validate the settings (every plugin's section)", "ketch/kernel.py", "loaded_settings", 1),
    (
        "plugins' configure hooks (the sandbox's bwrap probe: kept once it worked)",
        "ketch/hooks.py",
        "configure",
        1,
    ),
    ("build the provider (its module, the HTTP client)", "ketch/kernel.py", "build_provider", 1),
    ("start: session event, session-start hooks", "ketch/kernel.py", "start", 1),
    (
        "the prompt's intake (prompt hooks, the user_prompt event)",
        "ketch/intake.py",
        "accept_prompt",
        0,
    ),
    ("fit the request (system prompt, tool schemas, the budget)", "ketch/loop.py", "_fitted", 0),
    ("send it (the HTTP client, until it connects)", "ketch/streaming.py", "stream_response", 0),
)


FIRST_REQUEST_MARK = "ketch-bench: the first request leaves\n"
# Runs a console script (argv[1]) as Python runs a script (sys.path[0] its directory: the
# discovery and tool caches see the same installation, so they hit as in the timed runs;
# ``python -m cProfile`` would put the working directory there and miss them) and writes
# FIRST_REQUEST_MARK on stderr when it first connects to the loopback server's port:
# -X importtime's lines before it are the path. With KETCH_BENCH_PROFILE, the main thread
# runs under cProfile until then, and the profile is written there; with
# KETCH_BENCH_THREADS, the CPU time of the main thread, the process and every other thread
# (by name, ended or running) until then is written there as JSON.
UNTIL_FIRST_REQUEST = f"""
import json, os, runpy, sys, threading, time
PORT = int(os.environ.pop("KETCH_BENCH_PORT"))
OUT = os.environ.pop("KETCH_BENCH_PROFILE", "")
OUT_THREADS = os.environ.pop("KETCH_BENCH_THREADS", "")
profile = None
if OUT:
    import cProfile
    profile = cProfile.Profile()
said = []
ended = []  # (thread name, its CPU seconds) of threads that ended before the request
_run = threading.Thread.run
def run(self):
    try:
        _run(self)
    finally:
        if not said:
            ended.append((self.name, time.thread_time()))
threading.Thread.run = run
def hook(event, args):
    if not said and event == "socket.connect" and isinstance(args[1], tuple) and args[1][1:2] == (PORT,):
        said.append(1)
        if OUT_THREADS:
            cpu = dict(ended)
            for thread in threading.enumerate():
                if thread is not threading.main_thread() and thread.ident is not None:
                    try:
                        cpu[thread.name] = time.clock_gettime(time.pthread_getcpuclockid(thread.ident))
                    except (OSError, AttributeError):
                        pass
            with open(OUT_THREADS, "w") as out:
                json.dump({{"main": time.thread_time(), "process": time.process_time(), "threads": cpu}}, out)
        if profile is not None:
            profile.disable()
            profile.dump_stats(OUT)
        sys.stderr.write({FIRST_REQUEST_MARK!r})
        sys.stderr.flush()
sys.addaudithook(hook)
sys.argv = sys.argv[1:]
sys.path[0] = os.path.dirname(os.path.abspath(sys.argv[0]))
if profile is not None:
    profile.enable()
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def explain_first_request(
    case: Case, env: dict[str, str], cwd: Path, scratch: Path, port: int
) -> dict[str, Any]:
    """One ``-p`` run under cProfile and one under ``-X importtime``, each until its first
    request leaves: each phase's share of the profiled main thread (applied to the
    unprofiled wall-time median to the first request, so an estimate: the profiler
    inflates Python-heavy code more than C), and the imports that cost most."""
    import pstats

    out = scratch / "p.prof"
    script = case.argv[0]

    def until_first_request(**extra: str) -> None:
        subprocess.run(
            [sys.executable, "-c", UNTIL_FIRST_REQUEST, script, *case.argv[1:]],
            env={**env, "KETCH_BENCH_PORT": str(port), **extra},
            cwd=cwd,
            capture_output=True,
            check=True,
        )

    until_first_request(KETCH_BENCH_PROFILE=str(out))
    stats = pstats.Stats(str(out)).stats  # type: ignore[attr-defined]
    total = max(entry[3] for entry in stats.values())
    cpu = median_ms(case.wall)  # the profiled span: until the first request leaves
    phases = []
    for label, path, function, depth in PHASES:
        cumulative = sum(
            entry[3]
            for (file, _, name), entry in stats.items()
            if name == function and file.endswith(path)
        )
        phases.append(
            {
                "phase": label,
                "depth": depth,
                "share": round(cumulative / total, 3),
                "cpu_ms_estimate": round(cpu * cumulative / total, 1),
            }
        )
    # Other threads' CPU before the request (an unprofiled run): work beside the request's
    # path competes with it for the interpreter (one thread runs Python at a time).
    threads_out = scratch / "threads.json"
    until_first_request(KETCH_BENCH_THREADS=str(threads_out))
    threads = json.loads(threads_out.read_text(encoding="utf-8"))
    imported = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", UNTIL_FIRST_REQUEST, script, *case.argv[1:]],
        env={**env, "KETCH_BENCH_PORT": str(port)},
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    ).stderr
    # Only what was imported before the first request left (any thread): what follows
    # (the answer, the session's end) is not on the path this table explains.
    imported = imported.partition(FIRST_REQUEST_MARK)[0]
    rows = []
    for line in imported.splitlines():
        if line.startswith("import time:") and "self [us]" not in line:
            _, cumulative_us, name = line[len("import time:") :].split("|")
            rows.append((name.rstrip()[1:], int(cumulative_us)))  # nested imports are indented
    all_imports = sum(us for name, us in rows if not name.startswith(" ")) / 1000
    top = sorted(
        ((name.strip(), us / 1000) for name, us in rows if not name.startswith(" ")),
        key=lambda r: -r[1],
    )[:12]
    httpx_cli = sum(us for name, us in rows if name.strip() == "httpx._main") / 1000
    return {
        "phases": phases,
        "imports_ms": round(all_imports, 1),
        "top_imports": [{"module": name, "ms": round(ms, 1)} for name, ms in top],
        "httpx_cli_ms": round(httpx_cli, 1),
        "cpu_before_request_ms": {
            "main thread": round(threads["main"] * 1000, 1),
            "process": round(threads["process"] * 1000, 1),
            **{
                f"thread {name}": round(seconds * 1000, 1)
                for name, seconds in sorted(threads["threads"].items(), key=lambda kv: -kv[1])
            },
        },
        "note": "phase shares from cProfile (an estimate: the profiler slows Python code more than C); import times from -X importtime until the first request leaves (its own overhead included)",
    }


def median_ms(values: list[float]) -> float:
    return statistics.median(values) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--runs", type=int, default=30, help="runs of each command (after 3 warm-up rounds)"
    )
    parser.add_argument("--no-peers", action="store_true", help="skip llm and aider")
    parser.add_argument(
        "--no-install", action="store_true", help="use peers already in the cache, install none"
    )
    parser.add_argument(
        "--keyring",
        choices=["file", "system"],
        default="file",
        help="the keyring behind -p's encrypted store",
    )
    parser.add_argument(
        "--json", action="store_true", help="print one JSON object instead of the table"
    )
    parser.add_argument("--seed", type=int, default=19)
    parser.add_argument(
        "--explain",
        action="store_true",
        help="profile one -p run: its phases and its costliest imports",
    )
    args = parser.parse_args()

    bindir = Path(sys.executable).parent
    ketch = bindir / "ketch"
    if not ketch.exists():
        raise SystemExit(
            f"startup: no ketch console script next to {sys.executable}; pip install -e . first"
        )
    server = Loopback(text="ok")
    notes: list[str] = []
    versions: dict[str, str] = {}
    with sandbox_home() as (root, env):
        workspace = root / "ws"
        git_workspace(workspace, env)
        env_p = {**env, "OPENAI_API_KEY": "sk-bench-not-a-key", "OPENAI_BASE_URL": server.base_url}
        if args.keyring == "file":
            env_p.update(
                {
                    "PYTHON_KEYRING_BACKEND": "ketch.testing.keyring_backend.FileKeyring",
                    "KETCH_TEST_KEYRING_FILE": str(root / "keyring.json"),
                }
            )
        cases = [
            Case("python -c pass", [sys.executable, "-c", "pass"], "python"),
            Case("ketch --version", [str(ketch), "--version"], "ketch"),
            Case("ketch --help", [str(ketch), "--help"], "ketch"),
            Case("ketch plugins", [str(ketch), "plugins"], "ketch"),
            Case(
                "ketch -p (to first request)",
                [str(ketch), "--provider", "openai", "--model", "gpt-4o-mini", "-p", "say ok"],
                "ketch",
                first_request=True,
            ),
        ]
        # The floor under -p: only importing the libraries it needs before its first request
        # (and the HTTP client's TLS context), with and without httpx's eager CLI import.
        cases += [
            Case("python: the libraries -p needs", [sys.executable, "-c", FLOOR], "floor"),
            Case(
                "python: the same, imported plainly",
                [sys.executable, "-c", PLAIN_FLOOR],
                "floor",
            ),
        ]
        if not args.no_peers:
            for name, package in PEERS.items():
                found = peer_script(name, package, CACHE, install=not args.no_install)
                if found is None:
                    notes.append(f"{name} ({package}) is not installed: its rows are missing")
                    continue
                script, versions[name] = found
                cases += [
                    Case(f"{name} --version", [*script, "--version"], name),
                    Case(f"{name} --help", [*script, "--help"], name),
                ]
        rng = random.Random(args.seed)
        for round_ in range(3 + args.runs):
            order = cases[:]
            rng.shuffle(order)
            for case in order:
                run_once(case, env_p if case.first_request else env, workspace, server)
            if round_ < 3:  # warm-up: page cache, bytecode caches, the store's first run
                for case in cases:
                    case.wall.clear()
                    case.cpu.clear()
                    case.first_get.clear()
        by = {case.name: case for case in cases}
        explained = (
            explain_first_request(
                by["ketch -p (to first request)"],
                env_p,
                workspace,
                root,
                server.server.server_address[1],
            )
            if args.explain
            else None
        )
        backend = keyring_backend(env_p, workspace)
    base_wall, base_cpu = median_ms(by["python -c pass"].wall), median_ms(by["python -c pass"].cpu)
    rows = []
    for case in cases:
        wall, cpu = median_ms(case.wall), median_ms(case.cpu)
        samples = sorted(case.wall)
        rows.append(
            {
                "measure": case.name,
                "value": round(wall, 1),
                "unit": "ms",
                "p90_ms": round(samples[max(0, int(len(samples) * 0.9) - 1)] * 1000, 1),
                "cpu_ms": round(cpu, 1),
                "x_python": round(wall / base_wall, 2),
                "x_python_cpu": round(cpu / base_cpu, 2),
            }
        )
        if case.first_request:
            notes.append(
                f"{case.name}: the wall time runs to the request's arrival; the CPU time is the whole process's, until it exits after the answer"
            )
        if case.first_get:
            notes.append(
                f"{case.name}: the provider's GET /models (context window) arrives first, at {median_ms(case.first_get):.0f} ms median"
            )
    targets = []

    def ratio_target(name: str, num: str, den: str, limit: float, strict: bool = False) -> None:
        if num not in by or den not in by:
            targets.append(
                {
                    "name": name,
                    "value": None,
                    "limit": limit,
                    "unit": "x",
                    "met": None,
                    "note": f"{den} not measured",
                }
            )
            return
        value = median_ms(by[num].wall) / median_ms(by[den].wall)
        cpu = median_ms(by[num].cpu) / median_ms(by[den].cpu)
        met = value < limit if strict else value <= limit
        targets.append(
            {
                "name": name,
                "value": round(value, 3),
                "limit": limit,
                "unit": "x",
                "op": "<" if strict else "<=",
                "met": met,
                "cpu_ratio": round(cpu, 3),
                "judged_on": "wall-time medians",
            }
        )

    ratio_target("ketch --help vs llm --help", "ketch --help", "llm --help", 0.25)
    ratio_target("ketch --version vs python -c pass", "ketch --version", "python -c pass", 1.5)
    ratio_target(
        "ketch -p to first request vs llm --version",
        "ketch -p (to first request)",
        "llm --version",
        1 / 3,
        strict=True,
    )
    plugins_ms = median_ms(by["ketch plugins"].wall)
    targets.append(
        {
            "name": "ketch plugins",
            "value": round(plugins_ms, 1),
            "limit": TARGET_PLUGINS_MS,
            "unit": "ms",
            "op": "<",
            "met": plugins_ms < TARGET_PLUGINS_MS,
            "cpu_ms": round(median_ms(by["ketch plugins"].cpu), 1),
            "judged_on": "wall-time median",
        }
    )
    result = {
        "benchmark": "startup",
        "title": "Start-up",
        "runs": args.runs,
        "rows": rows,
        "targets": targets,
        "info": {
            "peers": versions,
            "keyring": backend,
            "python": sys.version.split()[0],
            "interleaved": "shuffled order each round, 3 warm-up rounds",
        },
        "notes": notes,
    }
    if explained:
        result["explain"] = explained
    if args.json:
        print(json.dumps(result))
        return 0
    print(f"{args.runs} interleaved runs each (medians); peers: {versions or 'none'}")
    print(
        f"{'command':<30} {'wall ms':>8} {'p90 ms':>8} {'cpu ms':>8} {'x python':>9} {'x (cpu)':>8}"
    )
    for row in rows:
        print(
            f"{row['measure']:<30} {row['value']:>8.1f} {row['p90_ms']:>8.1f} {row['cpu_ms']:>8.1f} {row['x_python']:>9.2f} {row['x_python_cpu']:>8.2f}"
        )
    for target in targets:
        verdict = {True: "met", False: "MISSED", None: "not measured"}[target["met"]]
        shown = "-" if target["value"] is None else f"{target['value']:.3g}"
        print(
            f"target {target['name']}: {shown} {target['unit']} (limit {target.get('op', '<=')} {target['limit']:.3g}) {verdict}"
        )
    for note in notes:
        print(f"note: {note}")
    if explained:
        print(
            "\nketch -p until its first request, where its time goes (estimated from one cProfile run):"
        )
        for phase in explained["phases"]:
            print(
                f"  {'  ' * phase['depth']}{phase['phase']:<{80 - 2 * phase['depth']}} {phase['cpu_ms_estimate']:>7.1f} ms {phase['share']:>6.1%}"
            )
        print(
            f"imports (-X importtime): {explained['imports_ms']:.0f} ms in all, of them httpx's CLI module {explained['httpx_cli_ms']:.0f} ms; costliest:"
        )
        for row in explained["top_imports"]:
            print(f"  {row['module']:<40} {row['ms']:>7.1f} ms")
        print("CPU time until the first request leaves (one unprofiled run), by thread:")
        for name, ms in explained["cpu_before_request_ms"].items():
            print(f"  {name:<40} {ms:>7.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
