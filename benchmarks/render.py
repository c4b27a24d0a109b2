"""Streaming Markdown render benchmark: the per-token cost of the shell's renderer.

    .venv/bin/python benchmarks/render.py [--runs 5] [--frames-every 8] [--json]

Feeds a realistic answer (headings, paragraphs with bold and code, lists, tables and
fenced code blocks) token by token (about 4 characters each) through the shell's
``Renderer`` as ``text_delta`` events, with a terminal console (truecolor, 100
columns) writing to memory, and renders the live block as the prompt would every
``--frames-every`` tokens. Finished blocks are printed once and only the trailing
block is live, so the cost of a token must not grow with the answer: target (issue
16) a 20,000-token answer within 1.5x the per-token cost of a 1,000-token one
(medians of wall time; the CPU time is measured beside it). Answers of 1,000, 5,000 and
20,000 tokens. Prints the numbers (``--json``: one JSON object, the form
benchmarks/run.py reads) and exits 1 when the ratio misses the target; not a test.
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "kernel"), str(ROOT / "plugins")]

from rich.console import Console  # noqa: E402

from ketch.events import TextDeltaEvent, TurnEndEvent  # noqa: E402
from ketch.testing import Harness  # noqa: E402
from ketch_interactive.render import Renderer  # noqa: E402

TARGET_RATIO = 1.5
SIZES = (1_000, 5_000, 20_000)
SECTION = (
    "## Step {n}: what changes\n\n"
    "The handler in `server/app.py` now **validates** the request before it touches the database, "
    "so a malformed body gets a clear *400* instead of a stack trace.\n\n"
    "- parse the body once\n- check the `user_id` field\n- return early on errors\n\n"
    "| file | change |\n|------|--------|\n| app.py | validation |\n| test_app.py | two new tests |\n\n"
    "```python\ndef handler(request):\n    body = parse(request.body)\n    if 'user_id' not in body:\n"
    "        return respond({{'error': 'user_id is required'}}, status=400)\n    return respond(save(body))\n```\n\n"
)


def answer_tokens(count: int) -> list[str]:
    text = ""
    n = 1
    while len(text) < count * 4:
        text += SECTION.format(n=n)
        n += 1
    return [text[i : i + 4] for i in range(0, count * 4, 4)]


def run_once(harness: Harness, tokens: list[str], frames_every: int) -> tuple[float, float]:
    """(wall, cpu) seconds per token of one whole answer."""
    console = Console(
        file=io.StringIO(),
        width=100,
        force_terminal=True,
        color_system="truecolor",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )
    renderer = Renderer(console, harness.kernel)
    events = [TextDeltaEvent(text=t) for t in tokens]
    started, cpu = time.perf_counter(), time.process_time()
    for index, event in enumerate(events):
        renderer.on_event(event)
        if index % frames_every == 0:
            renderer.live_ansi(100, 40)
    renderer.on_event(TurnEndEvent(text="", stop_reason="end_turn"))
    return (time.perf_counter() - started) / len(tokens), (time.process_time() - cpu) / len(tokens)


def as_json(
    results: dict[int, tuple[float, float]], runs: int, frames_every: int
) -> dict[str, object]:
    wall, cpu = (
        results[SIZES[-1]][0] / results[SIZES[0]][0],
        results[SIZES[-1]][1] / results[SIZES[0]][1],
    )
    rows = [
        {
            "measure": f"{count:,}-token answer",
            "value": round(w * 1e6, 2),
            "unit": "µs per token",
            "cpu_us_per_token": round(c * 1e6, 2),
            "total_ms": round(w * count * 1e3, 1),
            "x_1k": round(w / results[SIZES[0]][0], 3),
        }
        for count, (w, c) in results.items()
    ]
    target = {
        "name": f"per-token cost, {SIZES[-1] // 1000}k vs {SIZES[0] // 1000}k-token answer",
        "value": round(wall, 3),
        "limit": TARGET_RATIO,
        "unit": "x",
        "op": "<=",
        "met": wall <= TARGET_RATIO,
        "judged_on": "wall-time medians",
        "cpu_ratio": round(cpu, 3),
    }
    series = {
        "us_per_token": {
            "x": list(results),
            "y": [round(w * 1e6, 2) for w, _ in results.values()],
            "x_label": "answer (tokens)",
            "y_label": "µs per token (wall-time median)",
            "title": "cost of a token",
        }
    }
    info = {
        "console": "rich, truecolor, 100 columns, to memory",
        "frames": f"the live block rendered every {frames_every} tokens",
        "token": "4 characters",
    }
    return {
        "benchmark": "render",
        "title": "Streaming Markdown render",
        "runs": runs,
        "rows": rows,
        "targets": [target],
        "series": series,
        "info": info,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--frames-every", type=int, default=8)
    parser.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object (the form benchmarks/run.py reads)",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        harness = Harness.create(Path(tmp), bundled=False)
        harness.kernel.configure()
        run_once(harness, answer_tokens(500), args.frames_every)  # warm up imports and caches
        results: dict[int, tuple[float, float]] = {}
        for count in SIZES:
            tokens = answer_tokens(count)
            times = [run_once(harness, tokens, args.frames_every) for _ in range(args.runs)]
            results[count] = (
                statistics.median(w for w, _ in times),
                statistics.median(c for _, c in times),
            )
    ratio = results[SIZES[-1]][0] / results[SIZES[0]][0]
    if args.json:
        print(json.dumps(as_json(results, args.runs, args.frames_every)))
        return 0 if ratio <= TARGET_RATIO else 1
    for count, (per_token, _) in results.items():
        print(
            f"{count:>6,} tokens: {per_token * 1e6:8.1f} µs per token ({per_token * count * 1e3:7.1f} ms in all)"
        )
    verdict = "ok" if ratio <= TARGET_RATIO else "MISSED"
    print(f"ratio 20k/1k: {ratio:.2f} (target <= {TARGET_RATIO}) {verdict}")
    return 0 if ratio <= TARGET_RATIO else 1


if __name__ == "__main__":
    sys.exit(main())
