"""Memory: peak RSS of a 2,000-step headless session and of the shell after 200 turns.

    .venv/bin/python benchmarks/memory.py [--steps 2000] [--turns 200] [--json]

* Headless: ``ketch -p`` (every bundled plugin, the encrypted store, the default
  profile) against a loopback OpenAI-compatible server on 127.0.0.1 that answers
  ``--steps`` requests with a ``read_file`` call (50 small files in turn), then text,
  all in one turn (so the model's window is set to 10M tokens: a turn in progress is
  never compacted).
  The server reads the client's RSS (``/proc/PID/status``) as each request arrives:
  the curve of memory over the session. Peak RSS from ``wait4`` (``ru_maxrss``).
  A one-step session gives the baseline.
* Shell: ``ketch`` in tmux (the interactive shell, every bundled plugin), driven as a
  person would: ``--turns`` prompts typed one after the other, each answered by the
  scripted provider with about 400 tokens of Markdown streamed in pieces; RSS and the
  high-water mark (``VmHWM``) read after each turn.

Not a test; no targets in the issue: the figures to watch are the growth per step and
per turn (a leak shows as a slope that does not flatten).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "kernel"), str(ROOT / "plugins"), str(ROOT)]

from loopback import Loopback  # noqa: E402

ANSWER = (
    "## Turn {n}\n\nThe handler in `app/server.py` now **validates** the body first, so a bad request "
    "gets a clear *400*.\n\n- parse once\n- check `user_id`\n- return early\n\n"
    "```python\ndef handle(request):\n    body = parse(request.body)\n    if not body.get('user_id'):\n"
    "        return error(400, 'user_id is required')\n    return respond(body)\n```\n\n"
    "| file | change |\n|------|--------|\n| server.py | validation |\n| test_server.py | two tests |\n\n"
) * 3


def status(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM of a process, in KiB."""
    values: dict[str, int] = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                values[key] = int(rest.split()[0])
    except OSError:
        pass
    return values


def isolated(root: Path) -> dict[str, str]:
    from ketch.testing import isolated_env

    env = {k: v for k, v in os.environ.items() if not k.startswith(("KETCH_", "OPENAI_"))}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.update(isolated_env(root / "home"))
    env.update(
        {
            "PYTHON_KEYRING_BACKEND": "ketch.testing.keyring_backend.FileKeyring",
            "KETCH_TEST_KEYRING_FILE": str(root / "keyring.json"),
        }
    )
    return env


def headless(steps: int, root: Path) -> dict[str, Any]:
    workspace = root / "ws"
    (workspace / "src").mkdir(parents=True, exist_ok=True)
    for n in range(50):
        (workspace / "src" / f"module_{n}.py").write_text(
            f"def f{n}(x):\n    return x * {n}\n" * 10
        )
    env = isolated(root)
    config = Path(env["KETCH_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    # One turn of --steps calls: the turn in progress is never compacted, so the window
    # must hold it all (about 150 tokens a step).
    (config / "config.toml").write_text(
        f"[loop]\nmax_iterations = {steps + 10}\n\n[providers.openai]\ncontext_window = 10000000\n"
    )
    samples: list[tuple[int, int]] = []
    pid: list[int] = []

    def sample(n: int) -> None:
        if pid and (n == 1 or n % 20 == 0):
            samples.append((n, status(pid[0]).get("VmRSS", 0)))

    server = Loopback(
        text="done",
        tool_calls=steps,
        tool="read_file",
        tool_input=lambda n: {"path": f"src/module_{n % 50}.py"},
        on_request=sample,
    )
    env.update({"OPENAI_API_KEY": "sk-bench-not-a-key", "OPENAI_BASE_URL": server.base_url})
    argv = [
        str(Path(sys.executable).with_name("ketch")),
        "--provider",
        "openai",
        "--model",
        "gpt-4o-mini",
        "--output-format",
        "json",
        "-p",
        "read every module",
    ]
    began = time.perf_counter()
    proc = subprocess.Popen(
        argv,
        cwd=workspace,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    pid.append(proc.pid)
    out, err = proc.communicate()
    seconds = time.perf_counter() - began
    server.close()
    if proc.returncode != 0:
        raise SystemExit(
            f"memory: the headless session failed ({proc.returncode}): {err.decode(errors='replace')[-300:]} {out.decode(errors='replace')[-600:]}"
        )
    result = json.loads(out)
    return {
        "steps": server.posts - 1,
        "seconds": seconds,
        "samples": samples,
        "stop": result.get("stop_reason") or result.get("subtype"),
        "request_kib_last": server.body_bytes[-1] // 1024 if server.body_bytes else 0,
    }


def peak_headless(steps: int) -> tuple[dict[str, Any], int]:
    """Run the session with ru_maxrss read from a wrapper (``wait4`` of our own child)."""
    root = Path(tempfile.mkdtemp(prefix="ketch-bench-memory-"))
    try:
        code = (
            "import os, sys, json; sys.path[:0] = [sys.argv[1]]; import memory; from pathlib import Path;"
            "r = memory.headless(int(sys.argv[2]), Path(sys.argv[3])); import resource;"
            "r['peak_kib'] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss; print(json.dumps(r))"
        )
        done = subprocess.run(
            [sys.executable, "-c", code, str(Path(__file__).parent), str(steps), str(root)],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            raise SystemExit(done.stderr[-800:])
        result = json.loads(done.stdout.strip().splitlines()[-1])
        return result, int(result["peak_kib"])
    finally:
        shutil.rmtree(root, ignore_errors=True)


def shell(turns: int) -> dict[str, Any]:
    from tests.interactive.interactive_kit import Terminal

    if shutil.which("tmux") is None:
        return {"skipped": "tmux is not installed"}
    root = Path(tempfile.mkdtemp(prefix="ketch-bench-shell-"))
    script = [
        {
            "text": ANSWER.format(n=n),
            "chunks": [
                ANSWER.format(n=n)[i : i + 16] for i in range(0, len(ANSWER.format(n=n)), 16)
            ],
        }
        for n in range(1, turns + 1)
    ]
    terminal = Terminal(
        root, script=script, plugins=None, env={k: v for k, v in os.environ.items() if k == "PATH"}
    )
    try:
        terminal.ready()
        pane = int(terminal._tmux("display-message", "-p", "-t", "main", "#{pane_pid}").strip())
        pid = python_child(pane)
        samples = [(0, status(pid))]
        began = time.perf_counter()
        for n in range(1, turns + 1):
            terminal.type(f"turn {n}: explain the change")
            terminal.wait_for(
                rf"(?m)^\s*Turn {n}\s*$", regex=True, timeout=60
            )  # the heading, rendered
            terminal.wait_idle(timeout=60)
            if n == 1 or n % 10 == 0:
                samples.append((n, status(pid)))
        seconds = time.perf_counter() - began
        terminal.keys("C-d")
        return {
            "turns": turns,
            "seconds": seconds,
            "samples": [(n, s.get("VmRSS", 0), s.get("VmHWM", 0)) for n, s in samples],
        }
    finally:
        terminal.close()
        shutil.rmtree(root, ignore_errors=True)


def python_child(pane: int) -> int:
    """The ketch process under the pane's shell."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        for child in Path(f"/proc/{pane}/task/{pane}/children").read_text().split():
            cmdline = Path(f"/proc/{child}/cmdline").read_bytes()
            if b"ketch" in cmdline:
                return int(child)
        time.sleep(0.1)
    raise SystemExit("memory: could not find the shell's ketch process")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument(
        "--json", action="store_true", help="print one JSON object instead of the table"
    )
    args = parser.parse_args()
    one, one_peak = peak_headless(1)
    long, long_peak = peak_headless(args.steps)
    interactive = shell(args.turns)
    rss = long["samples"]
    rows: list[dict[str, Any]] = [
        {
            "measure": "headless, 1 step: peak RSS",
            "value": round(one_peak / 1024, 1),
            "unit": "MiB",
        },
        {
            "measure": f"headless, {long['steps']:,} steps: peak RSS",
            "value": round(long_peak / 1024, 1),
            "unit": "MiB",
            "seconds": round(long["seconds"], 1),
            "last_request_kib": long["request_kib_last"],
        },
    ]
    series: dict[str, Any] = {
        "headless_rss_mib": {
            "x": [n for n, _ in rss],
            "y": [round(kib / 1024, 2) for _, kib in rss],
            "x_label": "step",
            "y_label": "RSS (MiB)",
            "title": f"headless: RSS during a {long['steps']:,}-step session",
        }
    }
    if len(rss) > 2:
        (n0, r0), (n1, r1) = rss[len(rss) // 4], rss[-1]
        rows.append(
            {
                "measure": "headless: RSS growth per step (last three quarters)",
                "value": round((r1 - r0) / max(n1 - n0, 1), 2),
                "unit": "KiB/step",
            }
        )
    notes = []
    if "skipped" in interactive:
        notes.append(f"shell: skipped ({interactive['skipped']})")
    else:
        samples = interactive["samples"]
        first = next(s for s in samples if s[0] == 1)
        rows += [
            {
                "measure": "shell, after 1 turn: RSS",
                "value": round(first[1] / 1024, 1),
                "unit": "MiB",
            },
            {
                "measure": f"shell, after {interactive['turns']} turns: RSS",
                "value": round(samples[-1][1] / 1024, 1),
                "unit": "MiB",
                "peak_mib": round(samples[-1][2] / 1024, 1),
                "seconds": round(interactive["seconds"], 1),
            },
            {
                "measure": "shell: RSS growth per turn (after the first)",
                "value": round((samples[-1][1] - first[1]) / max(samples[-1][0] - 1, 1), 1),
                "unit": "KiB/turn",
            },
        ]
        series["shell_rss_mib"] = {
            "x": [s[0] for s in samples],
            "y": [round(s[1] / 1024, 2) for s in samples],
            "x_label": "turn",
            "y_label": "RSS (MiB)",
            "title": f"shell: RSS after each of {interactive['turns']} turns",
        }
    result = {
        "benchmark": "memory",
        "title": "Memory",
        "runs": 1,
        "rows": rows,
        "targets": [],
        "series": series,
        "notes": notes,
        "info": {"answer_chars": len(ANSWER.format(n=1)), "headless_stop": long["stop"]},
    }
    if args.json:
        print(json.dumps(result))
        return 0
    for row in rows:
        print(f"{row['measure']:<56} {row['value']:>9} {row['unit']}")
    for note in notes:
        print(f"note: {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
