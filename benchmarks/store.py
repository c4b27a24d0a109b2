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
cached path; rotation of a 10,000-entry store. Prints a table; not a test.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "kernel"), str(ROOT / "plugins")]

from ketch_crypto.cipher import AesGcmFieldCipher, DerivedKeys  # noqa: E402
from ketch_store.store import SqliteStore  # noqa: E402

WORKSPACE = "/home/bench/project"
TEXT = "Let me look at the parser first. " * 12  # ~400 characters, a typical short message


def message(session_id: str, n: int) -> dict[str, object]:
    role = ("user", "assistant")[n % 2]
    return {"id": f"msg_{session_id}_{n}", "role": role, "parts": [{"type": "text", "text": f"{n} {TEXT}"}], "synthetic": False}


def fresh_store(directory: Path) -> SqliteStore:
    return SqliteStore.open(directory / "sessions.db", AesGcmFieldCipher.from_key(os.urandom(32)))


def new_session(store: SqliteStore, session_id: str, workspace: str = WORKSPACE) -> None:
    store.ensure_session(session_id, workspace=workspace, provider="openai", model="gpt-4o", mode="build", created=time.time())


def append_messages(store: SqliteStore, session_id: str, count: int, start: int = 0) -> tuple[float, float]:
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
            conn.execute("UPDATE operations SET status = 'succeeded', finished_seq = ? WHERE session_id = ? AND call_key = ?", (seq, session_id, key))

        store.append(session_id, "tool_started", {"tool_call_id": call_id, "name": "shell", "input": {"command": "make test"}},
                     event_id=store.event_id(session_id, f"s{n}"), ts=time.time(), durable=True, extra=dispatched)
        store.append(session_id, "tool_result", {"tool_call_id": call_id, "ok": True, "output": "all passed", "outcome": "succeeded"},
                     event_id=store.event_id(session_id, f"r{n}"), ts=time.time(), durable=True, extra=finished)
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


def ms(seconds: float) -> str:
    return f"{seconds * 1e6:.0f} µs" if seconds < 0.001 else f"{seconds * 1000:.1f} ms"


def both(times: tuple[float, float]) -> str:
    return f"{ms(times[0])} ({ms(times[1])} cpu)"


def key_costs(directory: Path) -> list[tuple[str, str, str]]:
    """What unlocking costs: the KDFs at the parameters new key files record, and the
    cached path (the kernel session keyring), through the real passphrase provider."""
    from ketch_crypto import kernel_keyring, manager, wrapped
    from ketch_crypto.manager import PassphraseProvider

    rows: list[tuple[str, str, str]] = []
    passphrase = "a benchmark passphrase"
    for kdf in (wrapped.default_kdf(), wrapped.Kdf("scrypt", dict(wrapped.SCRYPT_DEFAULT), os.urandom(16))):
        rows.append((f"unwrap with the passphrase: {kdf.describe()}", both(best_of(lambda k=kdf: k.derive(passphrase), repeat=3)), "once per login session (cached)"))
    if not kernel_keyring.join_new_session("ketch-bench"):
        rows.append(("unwrap from the kernel keyring cache", "unavailable here", "-"))
        return rows
    path = directory / "bench.key"
    PassphraseProvider(path, 3600, detach=False).write_new(os.urandom(32), passphrase)  # default KDF, cached

    def cached() -> None:
        manager.forget()  # nothing in this process: only the kernel keyring has the key
        PassphraseProvider(path, 3600, detach=False).load(False)

    rows.append(("unwrap from the kernel keyring cache (every later start)", both(best_of(cached, repeat=20)), "-"))
    manager.forget()
    return rows


def rotation_cost(directory: Path, entries: int = 10_000) -> tuple[str, str, str]:
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

    fast = Kdf("argon2id", {"memory_kib": 8192, "iterations": 1, "lanes": 1}, os.urandom(16))  # the unwrap is measured above
    manager.passphrase.write_new(os.urandom(32), "a benchmark passphrase", fast)
    store = SqliteStore.open(db, AesGcmFieldCipher(lambda create: DerivedKeys(manager.load(create)), manager))
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
    return (f"rotate the key of a {done['entries']:,}-entry store (one transaction)", both((wall, used)), "-")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="stop at 10k entries")
    args = parser.parse_args()
    sizes = [1_000, 10_000] if args.quick else [1_000, 10_000, 100_000]
    rows: list[tuple[str, str, str]] = []

    with tempfile.TemporaryDirectory(prefix="ketch-bench-") as tmp:
        directory = Path(tmp)
        store = fresh_store(directory)
        growth: list[tuple[int, float, float, tuple[float, float]]] = []
        done = 0
        new_session(store, "ses_growth")
        for size in sizes:
            wall, cpu = append_messages(store, "ses_growth", size - done, start=done)
            rate, cpu_each = (size - done) / wall, cpu / (size - done)
            done = size
            load = best_of(lambda: store.load_session("ses_growth"), repeat=3 if size >= 100_000 else 5)
            growth.append((size, rate, cpu_each, load))
        ten_k_load = next(load for size, _, _, load in growth if size == 10_000)
        rates = [rate for _, rate, _, _ in growth]
        cpu_most = max(cpu_each for _, _, cpu_each, _ in growth)
        rows.append(("appends/s, encrypted, one transaction each (slowest stage)", f"{min(rates):,.0f}/s ({cpu_most * 1e6:.0f} µs cpu)", ">= 2,000/s"))
        rows.append(("load a 10,000-entry session", both(ten_k_load), "<= 300 ms"))

        new_session(store, "ses_tools")
        pairs = 500
        seconds = dispatch_pairs(store, "ses_tools", pairs)
        rows.append(("tool dispatch + outcome pairs/s (synchronous=FULL)", f"{pairs / seconds:,.0f}/s", "-"))

        listing: list[tuple[int, tuple[float, float]]] = []
        list_sizes = [1_000, 10_000] if args.quick else [1_000, 10_000, 100_000]
        created = 0
        for count in list_sizes:
            for n in range(created, count):
                sid = f"ses_list_{n:06d}"
                new_session(store, sid, workspace=WORKSPACE if n % 2 else "/home/bench/other")
                store.set_title(sid, f"session number {n}")
                store.append(sid, "message", message(sid, 0), event_id=store.event_id(sid, "m0"), ts=time.time(), messages=1)
            created = count
            listing.append((count, best_of(lambda: store.list_sessions(None))))
        rows.append(("list 1,000 sessions (all workspaces)", both(listing[0][1]), "<= 100 ms"))
        ws_time = best_of(lambda: store.list_sessions(WORKSPACE), repeat=3)
        rows.append((f"list one workspace of {created:,} sessions ({created // 2:,} match)", both(ws_time), "-"))
        latest = best_of(lambda: store.latest_session_id(WORKSPACE))
        rows.append((f"latest session of a workspace among {created:,}", both(latest), "-"))
        store.close()
        size_mb = sum(p.stat().st_size for p in directory.glob("sessions.db*")) / 1e6
        rows += key_costs(directory)
        rows.append(rotation_cost(directory))

    width = max(len(r[0]) for r in rows)
    print(f"{'measure':<{width}}  {'result':>26}  target")
    for name, value, target in rows:
        print(f"{name:<{width}}  {value:>26}  {target}")
    print()
    print("growth of one session (appends, and a full load of all its entries):")
    print(f"{'entries':>9}  {'appends/s':>10}  {'cpu/append':>10}  {'load':>11}  {'load cpu':>11}  {'cpu per entry':>13}")
    for size, rate, cpu_each, (wall, cpu) in growth:
        print(f"{size:>9,}  {rate:>10,.0f}  {cpu_each * 1e6:>7.0f} µs  {ms(wall):>11}  {ms(cpu):>11}  {cpu / size * 1e6:>10.1f} µs")
    print()
    print("growth of the session list (all workspaces):")
    print(f"{'sessions':>9}  {'list':>11}  {'list cpu':>11}  {'cpu per session':>15}")
    for count, (wall, cpu) in listing:
        print(f"{count:>9,}  {ms(wall):>11}  {ms(cpu):>11}  {cpu / count * 1e6:>12.1f} µs")
    print(f"\ndatabase size at the end: {size_mb:.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
