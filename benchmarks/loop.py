"""Loop overhead: ketch's own time per step over a long session.

    .venv/bin/python benchmarks/loop.py                 # 2,000 steps
    .venv/bin/python benchmarks/loop.py --steps 500

A provider that answers instantly (a tool call each time, no logging) drives N steps
of a trivial read-only tool through the whole stack: every bundled plugin loaded (the
policy, the guards, context, compaction, user hooks...), every event delivered, and the
encrypted, journaled SQLite store writing each step (a throwaway key, no keyring).

Per step it measures the wall time between two consecutive provider calls, and
subtracts only the JSON encoding of the request body, "the bytes of the request
itself", which must grow with the history. What is left is ketch's own overhead,
including the provider plugin's conversion of the history to its wire format (the
OpenAI chat conversion here), shown in a column of its own.
The figure of merit (issue 12): the median overhead around step 2,000 within 1.5x of
the median around step 100. Prints a table; not a test.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "kernel"), str(ROOT / "plugins")]

from pydantic import BaseModel  # noqa: E402

from ketch import hookimpl  # noqa: E402
from ketch.messages import Message, ToolCallPart, Usage  # noqa: E402
from ketch.providers import Completed, ProviderConfig, ProviderKind  # noqa: E402
from ketch.tools import Access, Effect, Tool, ToolResult  # noqa: E402


class PeekInput(BaseModel):
    path: str


class Peek(Tool):
    name = "peek"
    description = "Return a fixed line about a workspace file (benchmark tool)."
    input_model = PeekInput
    effects = frozenset({Effect.READ})
    mutating = False

    def accesses(self, args: Any, ctx: Any) -> list[Access]:
        return [Access(effect=Effect.READ, target=str(ctx.workspace / args.path))]

    async def run(self, args: Any, ctx: Any) -> ToolResult:
        return ToolResult.success(f"{args.path}: 12 lines, nothing unusual")


class InstantProvider:
    """Answers every request at once with one tool call (then text after ``steps``),
    after building the real OpenAI chat body from the request, as a provider would."""

    kind = "bench"

    def __init__(self, steps: int) -> None:
        self.name, self.model = "bench", "bench-model"
        self.config = ProviderConfig(
            name="bench", kind="bench", model="bench-model", context_window=10_000_000
        )
        self.steps = steps
        self.calls = 0
        self.starts: list[float] = []
        self.provider_time: list[float] = []  # converting to the wire format
        self.json_time: list[float] = []  # encoding the body: the request's own bytes
        self.body_bytes: list[int] = []

    async def stream(self, request: Any) -> Any:
        from ketch_openai.chat import chat_messages

        began = time.perf_counter()
        self.starts.append(began)
        body = {
            "model": self.model,
            "messages": chat_messages(request, "openai"),
            "tools": [t.model_dump() for t in request.tools],
            "stream": True,
        }
        converted = time.perf_counter()
        encoded = json.dumps(body).encode()
        self.json_time.append(time.perf_counter() - converted)
        self.provider_time.append(converted - began)
        self.body_bytes.append(len(encoded))
        self.calls += 1
        if self.calls <= self.steps:
            part = ToolCallPart(
                id=f"call_{self.calls}",
                name="peek",
                input={"path": f"src/module_{self.calls % 50}.py"},
            )
            message = Message(role="assistant", parts=(part,))
            stop = "tool_use"
        else:
            message = Message.assistant("done")
            stop = "end_turn"
        yield Completed(
            message=message,
            stop_reason=stop,
            usage=Usage(input_tokens=len(encoded) // 4, output_tokens=12),
        )

    async def list_models(self) -> list[Any]:
        return []

    async def context_window(self) -> int | None:
        return 10_000_000

    async def aclose(self) -> None:
        pass


class BenchPlugin:
    def __init__(self, provider: InstantProvider) -> None:
        self.provider = provider

    @hookimpl
    def ketch_register_providers(self, register: Any) -> None:
        register(
            ProviderKind(
                kind="bench",
                create=lambda cfg, key: self.provider,
                needs_key=False,
                default_model="bench-model",
            )
        )

    @hookimpl
    def ketch_register_tools(self, register: Any) -> None:
        register(Peek())

    @hookimpl(tryfirst=True)
    def ketch_field_cipher(self, settings: Any) -> Any:
        from ketch_crypto.cipher import AesGcmFieldCipher

        return AesGcmFieldCipher.from_key(os.urandom(32))


def run(steps: int) -> dict[str, Any]:
    from ketch.kernel import Kernel

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        workspace = root / "ws"
        (workspace / "src").mkdir(parents=True)
        for name in ("config", "state", "cache"):
            os.environ[f"KETCH_{name.upper()}_DIR"] = str(root / name)
        os.environ["KETCH_AUTOLOAD"] = "bundled"
        provider = InstantProvider(steps)
        kernel = Kernel.boot(
            workspace=workspace,
            plugins=[("bench", BenchPlugin(provider))],
            cli_settings={
                "provider": "bench",
                "loop": {"max_iterations": steps + 5, "duplicate_call_limit": 1000},
                "compaction": {"trigger": 1.0},
            },
        )
        session = kernel.new_session(provider=provider)
        began = time.perf_counter()
        end = asyncio.run(kernel.run_turn(session, "look at every module"))
        total = time.perf_counter() - began
        kernel.end(session)
    starts, encoding = provider.starts, provider.json_time
    overhead = [(starts[i + 1] - starts[i]) - encoding[i] for i in range(len(starts) - 1)]
    return {
        "end": end.stop_reason,
        "total": total,
        "overhead": overhead,
        "provider": provider.provider_time,
        "json": encoding,
        "bytes": provider.body_bytes,
    }


def window(values: list[float], centre: int, half: int = 25) -> float:
    lo, hi = max(centre - half, 0), min(centre + half, len(values))
    return statistics.median(values[lo:hi])


def as_json(steps: int, result: dict[str, Any], marks: list[int]) -> dict[str, Any]:
    overhead, provider, encoding, sizes = (
        result["overhead"],
        result["provider"],
        result["json"],
        result["bytes"],
    )
    rows = [
        {
            "measure": f"step {mark}",
            "value": round(window(overhead, mark - 1) * 1000, 3),
            "unit": "ms",
            "wire_conversion_ms": round(window(provider, mark - 1) * 1000, 3),
            "json_encoding_ms": round(window(encoding, mark - 1) * 1000, 3),
            "request_kib": round(sizes[min(mark - 1, len(sizes) - 1)] / 1024, 1),
        }
        for mark in marks
    ]
    median = statistics.median(overhead) * 1000
    targets = [
        {
            "name": "median overhead per step",
            "value": round(median, 3),
            "limit": 5.0,
            "unit": "ms",
            "op": "<=",
            "met": median <= 5.0,
        }
    ]
    if len(overhead) >= 100:
        ratio = window(overhead, len(overhead) - 26) / window(overhead, 99)
        targets.append(
            {
                "name": f"overhead at step {len(overhead)} vs step 100",
                "value": round(ratio, 3),
                "limit": 1.5,
                "unit": "x",
                "op": "<=",
                "met": ratio <= 1.5,
            }
        )
        # The wire conversion builds the request's message list: also the request's own bytes.
        own = [o - w for o, w in zip(overhead, provider, strict=False)]
        ratio = window(own, len(own) - 26) / window(own, 99)
        targets.append(
            {
                "name": f"overhead at step {len(overhead)} vs step 100, less the wire conversion too",
                "value": round(ratio, 3),
                "limit": 1.5,
                "unit": "x",
                "op": "<=",
                "met": ratio <= 1.5,
            }
        )
    return {
        "benchmark": "loop",
        "title": "Loop overhead",
        "runs": 1,
        "rows": rows,
        "targets": targets,
        "series": {
            name: {
                "x": list(range(1, len(overhead) + 1)),
                "y": values,
                "x_label": "step",
                "y_label": label,
            }
            for name, values, label in (
                (
                    "overhead_ms",
                    [round(v * 1000, 4) for v in overhead],
                    "ketch overhead per step (ms)",
                ),
                (
                    "wire_conversion_ms",
                    [round(v * 1000, 4) for v in provider[: len(overhead)]],
                    "of it: wire conversion (ms)",
                ),
                (
                    "json_encoding_ms",
                    [round(v * 1000, 4) for v in encoding[: len(overhead)]],
                    "JSON encoding of the body (ms)",
                ),
                (
                    "request_kib",
                    [round(b / 1024, 2) for b in sizes[: len(overhead)]],
                    "request body (KiB)",
                ),
            )
        },
        "info": {
            "steps": steps,
            "turn_end": result["end"],
            "total_s": round(result["total"], 2),
            "window": "medians of 50 steps around each mark",
        },
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object (the form benchmarks/run.py reads)",
    )
    args = parser.parse_args()
    result = run(args.steps)
    overhead, provider, encoding, sizes = (
        result["overhead"],
        result["provider"],
        result["json"],
        result["bytes"],
    )
    marks = [m for m in (10, 100, 500, 1000, 1500, 2000) if m <= len(overhead)]
    if args.json:
        print(json.dumps(as_json(args.steps, result, marks)))
        return 0
    print(
        f"{args.steps} steps, turn ended {result['end']}, {result['total']:.1f} s in all (medians of 50 steps around each mark)"
    )
    print(
        f"{'step':>6} {'ketch overhead ms':>18} {'of it: wire conversion ms':>26} {'json encoding ms':>17} {'request KiB':>12}"
    )
    for mark in marks:
        i = mark - 1
        print(
            f"{mark:>6} {window(overhead, i) * 1000:>18.2f} {window(provider, i) * 1000:>26.2f} "
            f"{window(encoding, i) * 1000:>17.2f} {sizes[min(i, len(sizes) - 1)] / 1024:>12.0f}"
        )
    if len(overhead) >= 100:
        early = window(overhead, 99)
        late = window(overhead, len(overhead) - 26)
        print(
            f"ratio late/step-100: {late / early:.2f}x (target <= 1.5x); median overall {statistics.median(overhead) * 1000:.2f} ms (target <= 5 ms)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
