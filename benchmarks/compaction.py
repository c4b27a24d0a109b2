"""Compaction benchmark: the deterministic compactor on a 200k-token history.

    .venv/bin/python benchmarks/compaction.py [--runs 30] [--tokens 200000]

Builds a realistic coding session (prompts, tool calls reading and editing files with
outputs of a few KB, answers) of about --tokens estimated tokens, then times, on a
real kernel with the bundled compact plugin:

* the compactor alone (the ``compact_compactor`` hook: plan, prune, summarize), and
* a whole compaction as the loop runs it (``ketch_compact.runner.compact``: hooks, record,
  the compaction event),

for three budgets: a 256k window (auto compaction down to the 50% target), a 128k
window (the history is far over: most of it is summarized) and ``/compact`` (the command:
everything but the last turn). Target (issue 7): under 50 ms. Prints a table (or, with
``--json``, one JSON object: the form benchmarks/run.py reads) and exits 1 when a median
misses the target; not a test.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "kernel"), str(ROOT / "plugins")]

from ketch.messages import Message, TextPart, ToolCallPart, ToolResultPart  # noqa: E402
from ketch.testing import Harness  # noqa: E402
from ketch_compact.runner import compact  # noqa: E402
from ketch_context_kit.budget import effective_capacity, estimate_messages  # noqa: E402
from ketch_context_kit.compaction import STATE_KEY, CompactionRequest  # noqa: E402

TARGET_MS = 50.0
CODE = "def handler(request):\n    value = parse(request.body)\n    return respond(value, status=200)\n"


def history(tokens: int) -> tuple[Message, ...]:
    messages: list[Message] = []
    n = 0
    while estimate_messages(messages) < tokens:
        path = f"src/module_{n % 40}.py"
        call_read = ToolCallPart(id=f"call_r{n}", name="read_file", input={"path": path})
        call_edit = ToolCallPart(
            id=f"call_e{n}", name="edit_file", input={"path": path, "old": "value", "new": "parsed"}
        )
        messages += [
            Message.user(
                f"Turn {n}: please look at {path} and fix the handler so it validates input. " * 3
            ),
            Message(
                role="assistant", parts=(TextPart(text="Let me read the file first."), call_read)
            ),
            Message(
                role="tool",
                parts=(
                    ToolResultPart(
                        tool_call_id=call_read.id,
                        name="read_file",
                        ok=True,
                        output=CODE * (20 + n % 30),
                    ),
                ),
            ),
            Message(role="assistant", parts=(TextPart(text="Now the edit."), call_edit)),
            Message(
                role="tool",
                parts=(
                    ToolResultPart(
                        tool_call_id=call_edit.id,
                        name="edit_file",
                        ok=True,
                        output=f"edited {path}: 1 replacement",
                    ),
                ),
            ),
            Message.assistant(
                f"I changed {path}: the handler now parses the body before responding. " * 4
            ),
        ]
        n += 1
    return tuple(messages)


def timed(runs: int, fn: object) -> tuple[list[float], list[float]]:
    """Wall and CPU milliseconds per run (CPU time is what a busy machine cannot inflate)."""
    wall, cpu = [], []
    for _ in range(runs):
        start, start_cpu = time.perf_counter(), time.process_time()
        fn()  # type: ignore[operator]
        wall.append((time.perf_counter() - start) * 1000)
        cpu.append((time.process_time() - start_cpu) * 1000)
    return sorted(wall), sorted(cpu)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--tokens", type=int, default=200_000)
    parser.add_argument(
        "--json", action="store_true", help="print one JSON object instead of the table"
    )
    args = parser.parse_args()
    out = (lambda *a, **k: None) if args.json else print
    messages = history(args.tokens)
    total = estimate_messages(messages)
    megabytes = sum(len(m.model_dump_json()) for m in messages) / 1e6
    out(f"history: {len(messages):,} messages, ~{total:,} tokens, {megabytes:.1f} MB as JSON")
    failed = False
    rows: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory() as tmp:
        harness = Harness.create(Path(tmp), script=[], bundled=["compact"])
        loop = asyncio.new_event_loop()
        session = harness.session
        kernel = session.kernel

        def compactor(request: CompactionRequest) -> Any:
            """The ``compact_compactor`` hook, its answer awaited (a summary may be async)."""
            return loop.run_until_complete(
                kernel.hooks.first_async("compact_compactor", request=request)
            )

        out(f"{'case':<36}{'wall median':>12}{'p95':>9}{'CPU median':>12}{'min':>8}  result")
        for label, window, reason in (
            ("256k window, auto", 256_000, "auto"),
            ("128k window, auto", 128_000, "auto"),
            ("/compact (command)", 256_000, "command"),
        ):
            capacity = effective_capacity(window)
            target = int(kernel.settings.compaction.target * capacity)

            def reset() -> None:
                session.transcript = messages
                session.active = messages
                session.state.pop(STATE_KEY, None)

            def hook_only(
                capacity: int = capacity, target: int = target, reason: str = reason
            ) -> None:
                reset()
                request = CompactionRequest(
                    session=session,
                    messages=messages,
                    system_tokens=3_000,
                    target_tokens=target,
                    capacity_tokens=capacity,
                    reason=reason,  # type: ignore[arg-type]
                )
                compactor(request)

            def whole(capacity: int = capacity, reason: str = reason) -> None:
                reset()
                # In one running loop, as in a turn (a fresh asyncio.run per call costs more than the work).
                loop.run_until_complete(
                    compact(session, reason, system_tokens=3_000, capacity=capacity)
                )

            hook_only()
            result = compactor(
                CompactionRequest(
                    session=session,
                    messages=messages,
                    system_tokens=3_000,
                    target_tokens=target,
                    capacity_tokens=capacity,
                    reason=reason,  # type: ignore[arg-type]
                )
            )
            assert result is not None
            for name, fn in (("compactor", hook_only), ("whole compaction", whole)):
                wall, cpu = timed(args.runs, fn)
                median, cpu_median = statistics.median(wall), statistics.median(cpu)
                p95 = wall[min(len(wall) - 1, int(len(wall) * 0.95))]
                ok = cpu_median < TARGET_MS
                failed |= not ok
                out(
                    f"{label + ', ' + name:<36}{median:>10.1f}ms{p95:>7.1f}ms{cpu_median:>10.1f}ms{cpu[0]:>6.1f}ms  {'ok' if ok else 'SLOW'}"
                )
                rows.append(
                    {
                        "measure": f"{label}, {name}",
                        "value": round(cpu_median, 2),
                        "unit": "ms (CPU)",
                        "wall_ms": round(median, 2),
                        "p95_wall_ms": round(p95, 2),
                        "tokens_after": result.after_tokens,
                        "met": ok,
                    }
                )
            out(
                f"{'':<36}-> {result.before_tokens:,} to {result.after_tokens:,} tokens ({result.summary}), target {target:,}"
            )
    out(
        f"target: under {TARGET_MS:.0f} ms (judged on the CPU-time median; wall time includes other load on the machine)"
    )
    if args.json:
        slowest = max(rows, key=lambda r: float(r["value"]))  # type: ignore[arg-type]
        targets = [
            {
                "name": "slowest whole compaction or compactor (CPU median)",
                "value": slowest["value"],
                "limit": TARGET_MS,
                "unit": "ms",
                "op": "<",
                "met": not failed,
                "case": slowest["measure"],
                "judged_on": "CPU-time median",
            }
        ]
        info = {"messages": len(messages), "tokens": total, "history_mb": round(megabytes, 1)}
        print(
            json.dumps(
                {
                    "benchmark": "compaction",
                    "title": "Compaction",
                    "runs": args.runs,
                    "rows": rows,
                    "targets": targets,
                    "info": info,
                }
            )
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
