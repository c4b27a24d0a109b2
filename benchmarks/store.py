"""Session store benchmarks: append rate, load time, list time, and how they grow; what
unlocking the key costs at every start; how long a key rotation takes.

    .venv/bin/python benchmarks/store.py            # 1k, 10k and 100k entries
    .venv/bin/python benchmarks/store.py --quick    # 1k and 10k only

Everything runs on a real SQLite file in a temporary directory, encrypted with
AES-256-GCM (a throwaway key, no keyring). Targets (issue 6): appends >= 2,000/s,
loading a 10,000-entry session <= 300 ms (the journal's MAC chain checked on the way),
listing 1,000 sessions <= 100 ms, and growth from 1k to 10k to 100k linear or better.
Key unwrap (issue 13): the passphrase KDF at its recorded parameters (paid once per login
session where the kernel keyring caches it, at every start where it cannot) and the
cached path; rotation of a 10,000-entry store. Prints a table; not a test. ``--json``
prints one JSON object instead (the form benchmarks/run.py reads), with the targets
judged: growth is called linear when the CPU cost per entry (per append, per entry
loaded, per session listed) at the largest size is within 1.5x of the smallest's.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "kernel"), str(ROOT / "plugins")]

from ketch_crypto.cipher import AesGcmFieldCipher, DerivedKeys  # noqa: E402
from ketch_store.store import SqliteStore  # noqa: E402

WORKSPACE = "/home/bench/project"
LINEAR = 1.5  # the CPU cost of one entry may grow this much from the smallest size to the largest
Times = tuple[float, float]  # (wall, cpu) seconds
TEXT = "Let me look at the parser first. " * 12  # ~400 characters, a typical short message


def message(session_id: str, n: int) -> dict[str, object]:
    role = ("user", "assistant")[n % 2]
    return {
        "id": f"msg_{session_id}_{n}",
        "role": role,
        "parts": [{"type": "text", "text": f"{n} {TEXT}"}],
        "synthetic": False,
    }


def fresh_store(directory: Path) -> SqliteStore:
    return SqliteStore.open(directory / "sessions.db", AesGcmFieldCipher.from_key(os.urandom(32)))


def new_session(store: SqliteStore, session_id: str, workspace: str = WORKSPACE) -> None:
    store.ensure_session(
        session_id,
        workspace=workspace,
        provider="openai",
        model="gpt-4o",
        mode="build",
        created=time.time(),
    )


def append_messages(
    store: SqliteStore, session_id: str, count: int, start: int = 0
) -> tuple[float, float]:
    """Append ``count`` messages one transaction each, as the recorder does; (wall, cpu) seconds."""
    began, cpu = time.perf_counter(), time.process_time()
    for n in range(start, start + count):
        data = message(session_id, n)
        event_id = store.event_id(session_id, f"message\x00{n}")
        store.append(session_id, "message", data, event_id=event_id, ts=time.time(), messages=1)
    return time.perf_counter() - began, time.process_time() - cpu


def dispatch_pairs(store: SqliteStore, session_id: str, count: int) -> float:
    """Tool dispatch + outcome pairs (both committed with synchronous=FULL)."""
    began = time.perf_counter()
    owner = store.owner_id()
    for n in range(count):
        call_id = f"call_{n}"
        key = store.call_key(session_id, call_id)

        def dispatched(conn, seq, key=key):  # type: ignore[no-untyped-def]
            conn.execute(
                "INSERT INTO operations (session_id, call_key, status, owner, dispatched_seq, updated) VALUES (?, ?, 'dispatched', ?, ?, ?)",
                (session_id, key, owner, seq, time.time()),
            )

        def finished(conn, seq, key=key):  # type: ignore[no-untyped-def]
            conn.execute(
                "UPDATE operations SET status = 'succeeded', finished_seq = ? WHERE session_id = ? AND call_key = ?",
                (seq, session_id, key),
            )

        store.append(
            session_id,
            "tool_started",
            {"tool_call_id": call_id, "name": "shell", "input": {"command": "make test"}},
            event_id=store.event_id(session_id, f"s{n}"),
            ts=time.time(),
            durable=True,
            extra=dispatched,
        )
        store.append(
            session_id,
            "tool_result",
            {"tool_call_id": call_id, "ok": True, "output": "all passed", "outcome": "succeeded"},
            event_id=store.event_id(session_id, f"r{n}"),
            ts=time.time(),
            durable=True,
            extra=finished,
        )
    return time.perf_counter() - began


def best_of(fn: Callable[[], object], repeat: int = 5) -> tuple[float, float]:
    """Median wall time and median CPU time of ``repeat`` runs (CPU time is what other
    processes on a shared machine disturb least)."""
    walls, cpus = [], []
    for _ in range(repeat):
        began, cpu = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - began)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus)


def gc_paused(fn: Callable[[], object]) -> Callable[[], object]:
    """``fn`` with Python's cyclic garbage collector paused (its full collections walk
    every live object, so they cost more the more objects a load creates)."""

    def run() -> object:
        gc.disable()
        try:
            return fn()
        finally:
            gc.enable()

    return run


def ms(seconds: float) -> str:
    return f"{seconds * 1e6:.0f} µs" if seconds < 0.001 else f"{seconds * 1000:.1f} ms"


def both(times: tuple[float, float]) -> str:
    return f"{ms(times[0])} ({ms(times[1])} cpu)"


def key_costs(directory: Path) -> list[tuple[str, Times | None, str]]:
    """What unlocking costs: the KDFs at the parameters new key files record, and the
    cached path (the kernel session keyring), through the real passphrase provider."""
    from ketch_crypto import kernel_keyring, manager, wrapped
    from ketch_crypto.manager import PassphraseProvider

    rows: list[tuple[str, Times | None, str]] = []
    passphrase = "a benchmark passphrase"
    for kdf in (
        wrapped.default_kdf(),
        wrapped.Kdf("scrypt", dict(wrapped.SCRYPT_DEFAULT), os.urandom(16)),
    ):
        rows.append(
            (
                f"unwrap with the passphrase: {kdf.describe()}",
                best_of(lambda k=kdf: k.derive(passphrase), repeat=3),
                "once per login session (cached)",
            )
        )
    if not kernel_keyring.join_new_session("ketch-bench"):
        rows.append(("unwrap from the kernel keyring cache", None, "-"))
        return rows
    path = directory / "bench.key"
    PassphraseProvider(path, 3600, detach=False).write_new(
        os.urandom(32), passphrase
    )  # default KDF, cached

    def cached() -> None:
        manager.forget()  # nothing in this process: only the kernel keyring has the key
        PassphraseProvider(path, 3600, detach=False).load(False)

    rows.append(
        (
            "unwrap from the kernel keyring cache (every later start)",
            best_of(cached, repeat=20),
            "-",
        )
    )
    manager.forget()
    return rows


def rotation_cost(directory: Path, entries: int = 10_000) -> tuple[int, Times]:
    """``ketch store key rotate`` on a store of ``entries`` journal entries (100 sessions)."""
    from ketch_crypto import manager as keys
    from ketch_crypto.manager import KeyManager
    from ketch_crypto.settings import KeySettings
    from ketch_store.rotate import rotate

    db = directory / "rotate" / "sessions.db"
    db.parent.mkdir()
    keys.forget()
    manager = KeyManager(KeySettings(provider="passphrase", cache_seconds=0), db, detach=False)
    from ketch_crypto.wrapped import Kdf

    fast = Kdf(
        "argon2id", {"memory_kib": 8192, "iterations": 1, "lanes": 1}, os.urandom(16)
    )  # the unwrap is measured above
    manager.passphrase.write_new(os.urandom(32), "a benchmark passphrase", fast)
    store = SqliteStore.open(
        db, AesGcmFieldCipher(lambda create: DerivedKeys(manager.load(create)), manager)
    )
    per = entries // 100
    for n in range(100):
        sid = f"ses_rot_{n:03d}"
        new_session(store, sid)
        append_messages(store, sid, per)
        store.release(sid)
    began, cpu = time.perf_counter(), time.process_time()
    done = rotate(store, lambda line: None)
    wall, used = time.perf_counter() - began, time.process_time() - cpu
    store.close()
    keys.forget()
    return done["entries"], (wall, used)


@dataclass
class Results:
    growth: list[tuple[int, float, float, Times]] = field(
        default_factory=list
    )  # entries, appends/s, cpu/append, load
    pairs_per_s: float = 0.0
    listing: list[tuple[int, Times]] = field(default_factory=list)  # sessions, list
    load_no_gc: list[Times] = field(default_factory=list)  # per growth stage, the cyclic GC paused
    list_no_gc: list[Times] = field(default_factory=list)  # per listing size, the same
    workspace_list: Times = (0.0, 0.0)
    latest: Times = (0.0, 0.0)
    keys: list[tuple[str, Times | None, str]] = field(
        default_factory=list
    )  # name, unwrap (None: unavailable), when
    rotation: tuple[int, Times] = (0, (0.0, 0.0))
    size_mb: float = 0.0

    @property
    def sessions(self) -> int:
        return self.listing[-1][0]


def measure(sizes: list[int]) -> Results:
    found = Results()
    with tempfile.TemporaryDirectory(prefix="ketch-bench-") as tmp:
        directory = Path(tmp)
        store = fresh_store(directory)
        done = 0
        new_session(store, "ses_growth")
        for size in sizes:
            wall, cpu = append_messages(store, "ses_growth", size - done, start=done)
            rate, cpu_each = (size - done) / wall, cpu / (size - done)
            done = size
            repeat = 3 if size >= 100_000 else 5
            load = best_of(lambda: store.load_session("ses_growth"), repeat=repeat)
            found.growth.append((size, rate, cpu_each, load))
            found.load_no_gc.append(
                best_of(gc_paused(lambda: store.load_session("ses_growth")), repeat=repeat)
            )

        new_session(store, "ses_tools")
        pairs = 500
        found.pairs_per_s = pairs / dispatch_pairs(store, "ses_tools", pairs)

        created = 0
        for count in sizes:
            for n in range(created, count):
                sid = f"ses_list_{n:06d}"
                new_session(store, sid, workspace=WORKSPACE if n % 2 else "/home/bench/other")
                store.set_title(sid, f"session number {n}")
                store.append(
                    sid,
                    "message",
                    message(sid, 0),
                    event_id=store.event_id(sid, "m0"),
                    ts=time.time(),
                    messages=1,
                )
                store.release(
                    sid
                )  # a stored session, not one this process is writing (each writer holds a lock file open)
            created = count
            found.listing.append((count, best_of(lambda: store.list_sessions(None))))
            found.list_no_gc.append(best_of(gc_paused(lambda: store.list_sessions(None))))
        found.workspace_list = best_of(lambda: store.list_sessions(WORKSPACE), repeat=3)
        found.latest = best_of(lambda: store.latest_session_id(WORKSPACE))
        store.close()
        found.size_mb = sum(p.stat().st_size for p in directory.glob("sessions.db*")) / 1e6
        found.keys = key_costs(directory)
        found.rotation = rotation_cost(directory)
    return found


def print_table(found: Results) -> None:
    ten_k_load = next(load for size, _, _, load in found.growth if size == 10_000)
    rates = [rate for _, rate, _, _ in found.growth]
    cpu_most = max(cpu_each for _, _, cpu_each, _ in found.growth)
    created = found.sessions
    rows: list[tuple[str, str, str]] = [
        (
            "appends/s, encrypted, one transaction each (slowest stage)",
            f"{min(rates):,.0f}/s ({cpu_most * 1e6:.0f} µs cpu)",
            ">= 2,000/s",
        ),
        ("load a 10,000-entry session", both(ten_k_load), "<= 300 ms"),
        ("tool dispatch + outcome pairs/s (synchronous=FULL)", f"{found.pairs_per_s:,.0f}/s", "-"),
        ("list 1,000 sessions (all workspaces)", both(found.listing[0][1]), "<= 100 ms"),
        (
            f"list one workspace of {created:,} sessions ({created // 2:,} match)",
            both(found.workspace_list),
            "-",
        ),
        (f"latest session of a workspace among {created:,}", both(found.latest), "-"),
        *(
            (name, both(times) if times else "unavailable here", when)
            for name, times, when in found.keys
        ),
        (
            f"rotate the key of a {found.rotation[0]:,}-entry store (one transaction)",
            both(found.rotation[1]),
            "-",
        ),
    ]
    width = max(len(r[0]) for r in rows)
    print(f"{'measure':<{width}}  {'result':>26}  target")
    for name, value, target in rows:
        print(f"{name:<{width}}  {value:>26}  {target}")
    print()
    print("growth of one session (appends, and a full load of all its entries):")
    print(
        f"{'entries':>9}  {'appends/s':>10}  {'cpu/append':>10}  {'load':>11}  {'load cpu':>11}  {'cpu per entry':>13}"
    )
    for size, rate, cpu_each, (wall, cpu) in found.growth:
        print(
            f"{size:>9,}  {rate:>10,.0f}  {cpu_each * 1e6:>7.0f} µs  {ms(wall):>11}  {ms(cpu):>11}  {cpu / size * 1e6:>10.1f} µs"
        )
    print()
    print("growth of the session list (all workspaces):")
    print(f"{'sessions':>9}  {'list':>11}  {'list cpu':>11}  {'cpu per session':>15}")
    for count, (wall, cpu) in found.listing:
        print(f"{count:>9,}  {ms(wall):>11}  {ms(cpu):>11}  {cpu / count * 1e6:>12.1f} µs")
    print(f"\ndatabase size at the end: {found.size_mb:.1f} MB")


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 3)


def _timed(measure: str, times: Times, **extra: Any) -> dict[str, Any]:
    return {
        "measure": measure,
        "value": _ms(times[0]),
        "unit": "ms",
        "cpu_ms": _ms(times[1]),
        **extra,
    }


def _target(
    name: str, value: float, limit: float, unit: str, op: str, judged_on: str, **extra: Any
) -> dict[str, Any]:
    met = value >= limit if op == ">=" else value <= limit
    return {
        "name": name,
        "value": round(value, 3),
        "limit": limit,
        "unit": unit,
        "op": op,
        "met": met,
        "judged_on": judged_on,
        **extra,
    }


def as_json(found: Results) -> dict[str, Any]:
    """The same measurements in the form benchmarks/run.py reads, the targets judged."""
    rows: list[dict[str, Any]] = []
    for size, rate, cpu_each, _ in found.growth:
        rows.append(
            {
                "measure": f"appends/s while a session grows to {size:,} entries",
                "value": round(rate),
                "unit": "/s",
                "cpu_us_each": round(cpu_each * 1e6, 2),
            }
        )
    for size, _, _, load in found.growth:
        rows.append(
            _timed(
                f"load a {size:,}-entry session", load, cpu_us_each=round(load[1] / size * 1e6, 2)
            )
        )
    for index in (0, -1):
        size = found.growth[index][0]
        paused = found.load_no_gc[index]
        rows.append(
            _timed(
                f"load a {size:,}-entry session, the cyclic GC paused",
                paused,
                cpu_us_each=round(paused[1] / size * 1e6, 2),
            )
        )
    rows.append(
        {
            "measure": "tool dispatch + outcome pairs/s (synchronous=FULL)",
            "value": round(found.pairs_per_s),
            "unit": "/s",
        }
    )
    for count, listed in found.listing:
        rows.append(
            _timed(
                f"list {count:,} sessions (all workspaces)",
                listed,
                cpu_us_each=round(listed[1] / count * 1e6, 2),
            )
        )
    for index in (0, -1):
        count = found.listing[index][0]
        paused = found.list_no_gc[index]
        rows.append(
            _timed(
                f"list {count:,} sessions, the cyclic GC paused",
                paused,
                cpu_us_each=round(paused[1] / count * 1e6, 2),
            )
        )
    created = found.sessions
    rows.append(
        _timed(
            f"list one workspace of {created:,} sessions ({created // 2:,} match)",
            found.workspace_list,
        )
    )
    rows.append(_timed(f"latest session of a workspace among {created:,}", found.latest))
    for name, times, when in found.keys:
        rows.append(
            _timed(name, times, when=when)
            if times
            else {"measure": name, "value": "unavailable here", "when": when}
        )
    rows.append(
        _timed(
            f"rotate the key of a {found.rotation[0]:,}-entry store (one transaction)",
            found.rotation[1],
        )
    )

    slowest = min(found.growth, key=lambda g: g[1])
    load_10k = next((load for size, _, _, load in found.growth if size == 10_000), None)
    first, last = found.growth[0], found.growth[-1]
    span = f"{first[0]:,} to {last[0]:,}"

    def per_each(times: list[Times], sizes: list[int]) -> float:
        """CPU per item at the largest size over that at the smallest."""
        return (times[-1][1] / sizes[-1]) / (times[0][1] / sizes[0])

    entries = [g[0] for g in found.growth]
    sessions = [c for c, _ in found.listing]
    load_growth, list_growth = (
        per_each([g[3] for g in found.growth], entries),
        per_each([t for _, t in found.listing], sessions),
    )
    load_paused, list_paused = (
        per_each(found.load_no_gc, entries),
        per_each(found.list_no_gc, sessions),
    )
    targets = [
        _target(
            "appends/s, encrypted, one transaction each (slowest stage)",
            slowest[1],
            2000,
            "/s",
            ">=",
            "wall time of each stage's appends",
            stage=slowest[0],
        ),
        _target(
            "load a 10,000-entry session",
            _ms(load_10k[0]),
            300,
            "ms",
            "<=",
            "wall-time median",
            cpu_ms=_ms(load_10k[1]),
        )
        if load_10k
        else None,
        _target(
            "list 1,000 sessions",
            _ms(found.listing[0][1][0]),
            100,
            "ms",
            "<=",
            "wall-time median",
            cpu_ms=_ms(found.listing[0][1][1]),
        ),
        _target(
            f"linear growth: CPU per append, {span} entries",
            last[2] / first[2],
            LINEAR,
            "x",
            "<=",
            "CPU time of each stage's appends",
        ),
        _target(
            f"linear growth: load CPU per entry, {span} entries",
            load_growth,
            LINEAR,
            "x",
            "<=",
            f"CPU-time medians; {load_paused:.2f}x with the cyclic GC paused",
            gc_paused_ratio=round(load_paused, 3),
        ),
        _target(
            f"linear growth: list CPU per session, {sessions[0]:,} to {sessions[-1]:,} sessions",
            list_growth,
            LINEAR,
            "x",
            "<=",
            f"CPU-time medians; {list_paused:.2f}x with the cyclic GC paused",
            gc_paused_ratio=round(list_paused, 3),
        ),
    ]
    series = {
        "appends_per_s": {
            "x": entries,
            "y": [round(g[1]) for g in found.growth],
            "x_label": "entries in the session",
            "y_label": "appends/s",
            "title": "appends per second",
        },
        "load_ms": {
            "x": entries,
            "y": [_ms(g[3][0]) for g in found.growth],
            "x_label": "entries in the session",
            "y_label": "load (ms)",
            "title": "load a whole session",
        },
        "list_ms": {
            "x": sessions,
            "y": [_ms(t[0]) for _, t in found.listing],
            "x_label": "sessions",
            "y_label": "list (ms)",
            "title": "list every session",
        },
    }
    return {
        "benchmark": "store",
        "title": "Session store",
        "runs": 5,
        "rows": rows,
        "columns": ["cpu_ms", "cpu_us_each", "when"],
        "targets": [t for t in targets if t],
        "series": series,
        "info": {
            "store": "SQLite file, AES-256-GCM (a throwaway key)",
            "medians": "5 runs (3 for loads of 100,000 entries and the workspace list, 20 for the cached unwrap, 3 for the KDFs); appends and rotation: one run",
            "database_mb": round(found.size_mb, 1),
        },
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="stop at 10k entries")
    parser.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object (the form benchmarks/run.py reads) instead of the table",
    )
    args = parser.parse_args()
    found = measure([1_000, 10_000] if args.quick else [1_000, 10_000, 100_000])
    if args.json:
        print(json.dumps(as_json(found)))
    else:
        print_table(found)
    return 0


if __name__ == "__main__":
    sys.exit(main())
