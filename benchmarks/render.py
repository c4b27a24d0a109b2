"""Streaming Markdown render benchmark: the per-token cost of the shell's renderer.

    .venv/bin/python benchmarks/render.py [--runs 5] [--frames-every 8]

Feeds a realistic answer (headings, paragraphs with bold and code, lists, tables and
fenced code blocks) token by token (about 4 characters each) through the shell's
``Renderer`` as ``text_delta`` events, with a terminal console (truecolor, 100
columns) writing to memory, and renders the live block as the prompt would every
``--frames-every`` tokens. Finished blocks are printed once and only the trailing
block is live, so the cost of a token must not grow with the answer: target (issue
16) a 20,000-token answer within 1.5x the per-token cost of a 1,000-token one.
Prints the numbers and exits 1 when the ratio misses the target; not a test.
"""

from __future__ import annotations

import argparse
import io
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


def run_once(harness: Harness, tokens: list[str], frames_every: int) -> float:
    console = Console(file=io.StringIO(), width=100, force_terminal=True, color_system="truecolor", highlight=False, markup=False, soft_wrap=True)
    renderer = Renderer(console, harness.kernel)
    events = [TextDeltaEvent(text=t) for t in tokens]
    started = time.perf_counter()
    for index, event in enumerate(events):
        renderer.on_event(event)
        if index % frames_every == 0:
            renderer.live_ansi(100, 40)
    renderer.on_event(TurnEndEvent(text="", stop_reason="end_turn"))
    return (time.perf_counter() - started) / len(tokens)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--frames-every", type=int, default=8)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        harness = Harness.create(Path(tmp), bundled=False)
        harness.kernel.configure()
        run_once(harness, answer_tokens(500), args.frames_every)  # warm up imports and caches
        results = {}
        for count in (1_000, 20_000):
            tokens = answer_tokens(count)
            results[count] = statistics.median(run_once(harness, tokens, args.frames_every) for _ in range(args.runs))
    for count, per_token in results.items():
        print(f"{count:>6,} tokens: {per_token * 1e6:8.1f} µs per token ({per_token * count * 1e3:7.1f} ms in all)")
    ratio = results[20_000] / results[1_000]
    verdict = "ok" if ratio <= TARGET_RATIO else "MISSED"
    print(f"ratio 20k/1k: {ratio:.2f} (target <= {TARGET_RATIO}) {verdict}")
    return 0 if ratio <= TARGET_RATIO else 1


if __name__ == "__main__":
    sys.exit(main())
