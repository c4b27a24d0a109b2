"""Checkpoint benchmarks: the cost of a checkpoint and the store's growth per checkpoint.

    .venv/bin/python benchmarks/checkpoints.py             # 10,000 files, 15 rounds
    .venv/bin/python benchmarks/checkpoints.py --files 2000 --rounds 5
    .venv/bin/python benchmarks/checkpoints.py --json      # one JSON object (benchmarks/run.py)

A real workspace of small source files (100 directories of 100, a .gitignore) in a
temporary directory, and a real SQLite store encrypted with AES-256-GCM (a throwaway
key, no keyring). A checkpoint here is what ketch does before a call: walk the
workspace (.gitignore-aware), read what changed, store new blobs and trees, and write
the record. Reported as medians, and as a ratio to a bare ``os.scandir`` walk of the
same tree (listing only, and listing plus one ``lstat`` per file, which is the least
any change detection has to do). Target (issue 15): under 100 ms median for the
unchanged tree; and, as docs/checkpoints.md says, no new blobs for an unchanged tree.
Prints a table; not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "kernel"), str(ROOT / "plugins")]

from ketch_checkpoints.scan import Scanner  # noqa: E402
from ketch_checkpoints.timeline import COLLECTION  # noqa: E402
from ketch_checkpoints.tree import Trees  # noqa: E402
from ketch_crypto.cipher import AesGcmFieldCipher  # noqa: E402
from ketch_store.store import SqliteStore  # noqa: E402

SESSION = "ses_bench"
SOURCE = (
    "def f{n}(x):\n    return x * {n}  # a line of code\n" * 4
)  # ~200 bytes, a small source file


def build_tree(root: Path, files: int) -> list[Path]:
    per_dir = 100
    paths: list[Path] = []
    old = time.time() - 3600  # written an hour ago, as a checked-out tree would be
    for n in range(files):
        directory = root / f"pkg{n // (per_dir * 10)}" / f"mod{n // per_dir}"
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"f{n}.py"
        path.write_text(SOURCE.format(n=n))
        os.utime(path, (old, old))
        paths.append(path)
    (root / ".gitignore").write_text("*.pyc\n__pycache__/\nbuild/\n")
    os.utime(root / ".gitignore", (old, old))
    return paths


def bare_walk(root: Path, *, stat: bool) -> int:
    count = 0
    stack = [str(root)]
    while stack:
        with os.scandir(stack.pop()) as listing:
            for entry in listing:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                elif stat:
                    entry.stat(follow_symlinks=False)
                count += 1
    return count


def median_ms(
    fn: Callable[[], object], rounds: int, before: Callable[[int], None] | None = None
) -> float:
    times = []
    for n in range(rounds):
        if before is not None:
            before(n)
        began = time.perf_counter()
        fn()
        times.append(time.perf_counter() - began)
    return statistics.median(times) * 1000


def db_bytes(store: SqliteStore) -> int:
    """The database's size with the WAL folded in (what stays on disk)."""
    with store.lock:
        store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        pages = (
            store.conn.execute("PRAGMA page_count").fetchone()[0]
            - store.conn.execute("PRAGMA freelist_count").fetchone()[0]
        )
        return int(pages * store.conn.execute("PRAGMA page_size").fetchone()[0])


def record_bytes(store: SqliteStore) -> int:
    """The checkpoint records' own sealed bytes (a record is smaller than a page, so the
    database's size in pages can stay the same over several)."""
    with store.lock:
        row = store.conn.execute(
            "SELECT coalesce(sum(length(data)), 0) FROM blob_records WHERE collection = ?",
            (COLLECTION,),
        ).fetchone()
    return int(row[0])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--changed", type=int, default=10)
    parser.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object (the form benchmarks/run.py reads) instead of the table",
    )
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="ketch-bench-") as tmp:
        base = Path(tmp)
        ws, state = base / "ws", base / "state"
        ws.mkdir()
        state.mkdir()
        paths = build_tree(ws, args.files)
        store = SqliteStore.open(state / "sessions.db", AesGcmFieldCipher.from_key(os.urandom(32)))
        store.ensure_session(
            SESSION,
            workspace=str(ws),
            provider="bench",
            model="bench",
            mode="build",
            created=time.time(),
        )
        blobs = store.blobs
        scanner = Scanner(ws, blobs, Trees(blobs), max_file_size=2 << 20, max_files=1_000_000)

        def checkpoint() -> None:
            result = scanner.scan()
            blobs.add_record(
                SESSION, COLLECTION, {"kind": "pre", "root": result.root}, [result.root]
            )

        began = time.perf_counter()
        checkpoint()
        cold = (time.perf_counter() - began) * 1000
        first_size = db_bytes(store)

        listing = median_ms(lambda: bare_walk(ws, stat=False), args.rounds)
        with_stat = median_ms(lambda: bare_walk(ws, stat=True), args.rounds)
        size0, stats0, records0 = db_bytes(store), blobs.stats(), record_bytes(store)
        unchanged = median_ms(checkpoint, args.rounds)
        size1, stats1, records1 = db_bytes(store), blobs.stats(), record_bytes(store)
        reads_unchanged = scanner.last.read if scanner.last else -1

        step = max(1, len(paths) // args.changed)

        def change(round_: int) -> None:
            for k in range(args.changed):
                path = paths[(k * step + round_) % len(paths)]
                path.write_text(f"# changed in round {round_}\n" + SOURCE.format(n=k))
                past = time.time() - 60
                os.utime(path, (past, past))  # not "too recent to trust": measure the steady state

        changed = median_ms(checkpoint, args.rounds, before=change)
        size2, stats2, records2 = db_bytes(store), blobs.stats(), record_bytes(store)
        reads_changed = scanner.last.read if scanner.last else -1
        store.close()

    unchanged_blobs = (stats1["bytes"] - stats0["bytes"]) / args.rounds
    if args.json:
        walks = f"{unchanged / listing:.1f}x the listing walk, {unchanged / with_stat:.2f}x the walk with lstat"

        def checkpointed(measure: str, ms: float, read: int) -> dict[str, Any]:
            return {
                "measure": measure,
                "value": round(ms, 2),
                "unit": "ms",
                "x_listing": round(ms / listing, 2),
                "x_listing_lstat": round(ms / with_stat, 2),
                "files_read": read,
            }

        table: list[dict[str, Any]] = [
            {
                "measure": "first checkpoint (reads everything)",
                "value": round(cold, 1),
                "unit": "ms",
                "files_read": args.files,
                "database_bytes": first_size,
            },
            {
                "measure": "bare os.scandir walk, listing only",
                "value": round(listing, 2),
                "unit": "ms",
            },
            {
                "measure": "bare os.scandir walk + lstat per file",
                "value": round(with_stat, 2),
                "unit": "ms",
            },
            checkpointed("checkpoint, unchanged tree", unchanged, reads_unchanged),
            checkpointed(f"checkpoint, {args.changed} files changed", changed, reads_changed),
            {
                "measure": "store growth per unchanged checkpoint: blobs",
                "value": round(unchanged_blobs),
                "unit": "B",
                "record_bytes": round((records1 - records0) / args.rounds),
                "database_bytes": round((size1 - size0) / args.rounds),
            },
            {
                "measure": f"store growth per {args.changed}-file checkpoint: blobs",
                "value": round((stats2["bytes"] - stats1["bytes"]) / args.rounds),
                "unit": "B",
                "blobs": round((stats2["blobs"] - stats1["blobs"]) / args.rounds, 1),
                "record_bytes": round((records2 - records1) / args.rounds),
                "database_bytes": round((size2 - size1) / args.rounds),
            },
        ]
        targets = [
            {
                "name": f"checkpoint of an unchanged {args.files:,}-file tree",
                "value": round(unchanged, 2),
                "limit": 100,
                "unit": "ms",
                "op": "<",
                "met": unchanged < 100,
                "judged_on": f"wall-time median of {args.rounds}; {walks}",
            },
            {
                "name": "blobs stored by an unchanged checkpoint",
                "value": round(unchanged_blobs),
                "limit": 0,
                "unit": "B",
                "op": "==",
                "met": unchanged_blobs == 0,
                "judged_on": f"blob bytes over {args.rounds} checkpoints",
            },
        ]
        info = {
            "files": args.files,
            "layout": "100 directories of 100 files, ~200 B each, and a .gitignore",
            "rounds": args.rounds,
            "changed_per_round": args.changed,
            "database": "its size in whole pages, the WAL folded in, free pages not counted; records: their sealed bytes",
        }
        columns = [
            "x_listing",
            "x_listing_lstat",
            "files_read",
            "blobs",
            "record_bytes",
            "database_bytes",
        ]
        print(
            json.dumps(
                {
                    "benchmark": "checkpoints",
                    "title": "Checkpoints",
                    "runs": args.rounds,
                    "rows": table,
                    "columns": columns,
                    "targets": targets,
                    "info": info,
                }
            )
        )
        return 0
    rows = [
        ("files in the workspace", f"{args.files:,}"),
        ("first checkpoint (reads everything)", f"{cold:,.0f} ms, store {first_size / 1e6:.1f} MB"),
        ("bare os.scandir walk, listing only", f"{listing:.1f} ms"),
        ("bare os.scandir walk + lstat per file", f"{with_stat:.1f} ms"),
        (
            "checkpoint, unchanged tree (median)",
            f"{unchanged:.1f} ms  = {unchanged / listing:.1f}x listing, {unchanged / with_stat:.2f}x listing+lstat; files read: {reads_unchanged}",
        ),
        (
            f"checkpoint, {args.changed} files changed (median)",
            f"{changed:.1f} ms  = {changed / listing:.1f}x listing, {changed / with_stat:.2f}x listing+lstat; files read: {reads_changed}",
        ),
        (
            "store growth per unchanged checkpoint",
            f"{unchanged_blobs:,.0f} B of blobs; database {(size1 - size0) / args.rounds:,.0f} B (the record: {(records1 - records0) / args.rounds:,.0f} B)",
        ),
        (
            f"store growth per {args.changed}-file checkpoint",
            f"{(stats2['bytes'] - stats1['bytes']) / args.rounds:,.0f} B of blobs ({(stats2['blobs'] - stats1['blobs']) / args.rounds:.0f} blobs); database {(size2 - size1) / args.rounds:,.0f} B",
        ),
        ("target", "unchanged tree under 100 ms: " + ("met" if unchanged < 100 else "NOT met")),
    ]
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
