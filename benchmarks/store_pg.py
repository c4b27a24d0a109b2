"""The PostgreSQL store beside the SQLite store: appends per second and the load of a
10,000-entry session, through the same journal code (``ketch_store_kit.journal``).

    .venv/bin/python benchmarks/store_pg.py            # 10,000 entries, 3 loads each
    .venv/bin/python benchmarks/store_pg.py --quick    # 2,000 entries
    .venv/bin/python benchmarks/store_pg.py --json     # for benchmarks/run.py

The server is the one ``KETCH_TEST_PG_URL`` names, else a throwaway one started with
``.ci/postgres`` on loopback (and stopped afterwards). Every append is its own
transaction, as the recorder does it (on PostgreSQL: the key-epoch check, the lease
fence, the sequence and chain allocation, the insert, the head); the load checks the
whole MAC chain. SQLite's file is in a temporary directory on the same disk. Not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "kernel"), str(ROOT / "plugins"), str(ROOT / "benchmarks")]

from ketch_crypto.cipher import AesGcmFieldCipher  # noqa: E402
from ketch_crypto.settings import KeySettings  # noqa: E402
from ketch_crypto.team import TeamKeys  # noqa: E402
from store import append_messages, dispatch_pairs, new_session  # noqa: E402


class _BenchCipher:
    """What the PostgreSQL store asks of the crypto plugin, with a throwaway identity."""

    def __init__(self, directory: Path) -> None:
        self.team = TeamKeys(KeySettings(), directory)
        self.team._private = os.urandom(32)

    @staticmethod
    def for_key(key: bytes) -> AesGcmFieldCipher:
        return AesGcmFieldCipher.from_key(key)


def _server() -> tuple[str, str | None]:
    url = os.environ.get("KETCH_TEST_PG_URL")
    if url:
        return url, None
    started = subprocess.run(
        ["bash", str(ROOT / ".ci" / "postgres")], capture_output=True, text=True, check=True
    )
    values = dict(
        part.split("=", 1)
        for part in started.stdout.replace("export ", "").replace(";", "").split()
    )
    return values["KETCH_TEST_PG_URL"], values["KETCH_TEST_PG_DIR"]


def _database(admin: str) -> str:
    import pg8000.dbapi

    from ketch_store_pg.connection import parse_url

    target = parse_url(admin)
    name = f"ketch_bench_{uuid.uuid4().hex[:8]}"
    conn = pg8000.dbapi.connect(
        user=target.user, host=target.host, port=target.port, database=target.database
    )
    conn.autocommit = True
    conn.cursor().execute(f"CREATE DATABASE {name}")
    conn.close()
    return admin.rsplit("/", 1)[0] + "/" + name


def measure(store: Any, entries: int, loads: int) -> dict[str, float]:
    sid = f"ses_bench_{uuid.uuid4().hex[:8]}"
    new_session(store, sid)
    wall, cpu = append_messages(store, sid, entries)
    pairs = 500
    pair_sid = f"ses_pairs_{uuid.uuid4().hex[:8]}"
    new_session(store, pair_sid)
    pair_wall = dispatch_pairs(store, pair_sid, pairs)
    load_walls, load_cpus = [], []
    for _ in range(loads):
        began, began_cpu = time.perf_counter(), time.process_time()
        store.history(sid)
        load_walls.append(time.perf_counter() - began)
        load_cpus.append(time.process_time() - began_cpu)
    return {
        "appends_per_s": entries / wall,
        "cpu_us_per_append": cpu / entries * 1e6,
        "pairs_per_s": pairs / pair_wall,
        "load_ms": statistics.median(load_walls) * 1000,
        "load_cpu_ms": statistics.median(load_cpus) * 1000,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    entries = 2_000 if args.quick else 10_000
    loads = 3
    from ketch_store.store import SqliteStore
    from ketch_store_pg.store import PgStore

    admin, started = _server()
    results: dict[str, dict[str, float]] = {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            directory = Path(tmp)
            sqlite = SqliteStore.open(
                directory / "sessions.db", AesGcmFieldCipher.from_key(os.urandom(32))
            )
            try:
                results["SQLite (file, WAL)"] = measure(sqlite, entries, loads)
            finally:
                sqlite.close()
            pg = PgStore.open(_database(admin), _BenchCipher(directory))  # type: ignore[arg-type]
            try:
                results["PostgreSQL (loopback)"] = measure(pg, entries, loads)
            finally:
                pg.close()
    finally:
        if started:
            subprocess.run(["bash", str(ROOT / ".ci" / "postgres"), "stop", started], check=False)
    pg, lite = results["PostgreSQL (loopback)"], results["SQLite (file, WAL)"]
    measures = [
        (f"appends/s, one transaction each ({entries:,} entries)", "appends_per_s", "/s", 0),
        ("CPU per append", "cpu_us_per_append", "µs", 0),
        ("tool dispatch + outcome pairs/s (durable commits)", "pairs_per_s", "/s", 0),
        (f"load a {entries:,}-entry session (chain checked)", "load_ms", "ms", 1),
        (f"load a {entries:,}-entry session, CPU", "load_cpu_ms", "ms", 1),
    ]
    rows = [
        {
            "measure": name,
            "value": round(pg[key], digits),
            "unit": unit,
            "sqlite": round(lite[key], digits),
            "vs_sqlite": round(pg[key] / lite[key], 2) if lite[key] else None,
        }
        for name, key, unit, digits in measures
    ]
    if args.json:
        print(
            json.dumps(
                {
                    "rows": rows,
                    "columns": ["sqlite", "vs_sqlite"],
                    "runs": loads,
                    "notes": [
                        "value: the PostgreSQL store on a server on loopback; sqlite: the SQLite store on a file in a "
                        "temporary directory; both run the same journal code (ketch_store_kit.journal).",
                        "PostgreSQL adds a round trip per statement of an append (the key-epoch lock and check, the lease "
                        "fence, the event-id check, the sequence, the previous link, the insert, the head) and commits "
                        "every append durably (synchronous_commit on); SQLite commits messages with synchronous=NORMAL in "
                        "WAL and tool dispatches/outcomes with FULL.",
                    ],
                }
            )
        )
        return 0
    for row in rows:
        print(
            f"{row['measure']:<55} postgresql {row['value']:>10} {row['unit']:<3} sqlite {row['sqlite']:>10}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
