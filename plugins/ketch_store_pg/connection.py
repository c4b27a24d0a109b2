"""A PostgreSQL connection that speaks what :class:`ketch_store_kit.journal.SqlJournal` expects.

The driver is pg8000 (BSD-3-Clause, pure Python, DB-API 2.0): psycopg 3 is LGPL-3.0,
which ketch's licence policy does not accept, and asyncpg (Apache-2.0) is asyncio-only
while the store is called synchronously from the loop's event observer.

:class:`PgConnection` runs in autocommit mode and opens transactions itself, takes the
``?`` placeholders the shared SQL is written with, and reconnects: a server restart or
a dropped connection is retried (idempotent work only: every journal entry carries an
event id, so one written before the connection dropped is found, not written twice)
for ``reconnect_wait`` seconds before it becomes an error that says so.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import parse_qs, unquote, urlsplit

from ketch.api import KetchError

T = TypeVar("T")
_QMARK = re.compile(r"'(?:[^']|'')*'|\?|%")
RECONNECT_WAIT = 30.0


@dataclass(frozen=True)
class Target:
    """Where the server is (never printed with its password)."""

    host: str
    port: int
    database: str
    user: str
    password: str | None
    ssl: str  # disable | require | verify-full

    @property
    def shown(self) -> str:
        return f"postgresql://{self.user}@{self.host}:{self.port}/{self.database}"


def parse_url(url: str) -> Target:
    """``postgresql://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?sslmode=...]``; a password
    is better given in ``PGPASSWORD`` than written in a config file."""
    parts = urlsplit(url)
    if parts.scheme not in ("postgresql", "postgres"):
        raise KetchError(
            f"not a PostgreSQL URL: {redact(url)} (postgresql://user@host/db)", exit_code=2
        )
    query = parse_qs(parts.query)
    ssl = (query.get("sslmode") or ["prefer"])[0]
    return Target(
        host=parts.hostname or "localhost",
        port=parts.port or 5432,
        database=unquote(parts.path.lstrip("/")) or (parts.username or "postgres"),
        user=unquote(
            parts.username or os.environ.get("PGUSER", "") or os.environ.get("USER", "postgres")
        ),
        password=unquote(parts.password) if parts.password else os.environ.get("PGPASSWORD"),
        ssl=ssl,
    )


def redact(url: str) -> str:
    return re.sub(r"(://[^:/@]*):[^@]*@", r"\1:***@", url)


def qmark(sql: str) -> str:
    """``?`` placeholders to pg8000's ``%s`` (a literal ``%`` doubled; quoted text left alone)."""

    def swap(match: re.Match[str]) -> str:
        token = match.group(0)
        return "%s" if token == "?" else "%%" if token == "%" else token.replace("%", "%%")

    return _QMARK.sub(swap, sql)


def lost(exc: BaseException) -> bool:
    """The connection is gone (network, server shut down or restarting), not the query wrong."""
    import pg8000

    if isinstance(exc, (pg8000.InterfaceError, OSError, EOFError)):
        return True
    if isinstance(exc, pg8000.DatabaseError):
        code = _code(exc)
        return code in ("57P01", "57P02", "57P03", "08000", "08003", "08006", "08001", "08004")
    return False


def conflict(exc: BaseException) -> bool:
    """A serialization failure or deadlock: the transaction can simply run again."""
    return _code(exc) in ("40001", "40P01")


def _code(exc: BaseException) -> str:
    args = getattr(exc, "args", ())
    if args and isinstance(args[0], dict):
        return str(args[0].get("C", ""))
    return ""


def message(exc: BaseException) -> str:
    args = getattr(exc, "args", ())
    if args and isinstance(args[0], dict):
        return str(args[0].get("M", exc))
    return str(exc) or type(exc).__name__


class PgConnection:
    """One connection; ``execute`` with ``?`` placeholders; ``transaction`` as BEGIN/COMMIT."""

    def __init__(self, target: Target, *, reconnect_wait: float = RECONNECT_WAIT) -> None:
        self.target = target
        self.reconnect_wait = reconnect_wait
        self.raw: Any = None
        self.notice: Callable[[str], None] | None = None  # told once when it reconnects
        self.connect()

    def connect(self) -> None:
        import ssl

        import pg8000.dbapi

        context: Any = None
        if self.target.ssl in ("require", "verify-ca", "verify-full"):
            context = ssl.create_default_context()
            if self.target.ssl == "require":
                context.check_hostname = False
                context.verify_mode = ssl.CERT_NONE
        self.close()
        self.raw = pg8000.dbapi.connect(
            user=self.target.user,
            password=self.target.password,
            host=self.target.host,
            port=self.target.port,
            database=self.target.database,
            ssl_context=context,
            timeout=30,
            application_name="ketch",
        )
        self.raw.autocommit = True

    def close(self) -> None:
        if self.raw is not None:
            with contextlib.suppress(Exception):  # closing a dead connection
                self.raw.close()
            self.raw = None

    def execute(self, sql: str, params: Any = ()) -> Any:
        if self.raw is None:  # a reconnect has not succeeded yet: as lost as it gets
            import pg8000

            raise pg8000.InterfaceError("not connected")
        cursor = self.raw.cursor()
        if params:
            cursor.execute(qmark(sql), tuple(params))
        else:  # pg8000 sends a statement without arguments as it is (no % escapes)
            cursor.execute(sql, ())
        return cursor

    def executemany(self, sql: str, rows: Any) -> Any:
        cursor = None
        for row in rows:
            cursor = self.execute(sql, row)
        return cursor

    @contextmanager
    def transaction(self) -> Iterator[PgConnection]:
        self.execute("BEGIN")
        try:
            yield self
        except BaseException:
            with contextlib.suppress(Exception):  # the connection may be the reason
                self.execute("ROLLBACK")
            raise
        self.execute("COMMIT")

    def retrying(self, work: Callable[[], T], what: str) -> T:
        """Run ``work``; when the connection is lost (a server restart), reconnect and run
        it again, for up to ``reconnect_wait`` seconds. ``work`` must be idempotent."""
        deadline = time.monotonic() + self.reconnect_wait
        told = False
        while True:
            try:
                return work()
            except Exception as exc:
                if not (lost(exc) or conflict(exc)):
                    raise
                if time.monotonic() >= deadline:
                    raise KetchError(
                        f"the PostgreSQL session store ({self.target.shown}) is unreachable while {what}: "
                        f"{message(exc)}; retried for {self.reconnect_wait:g}s. Nothing acknowledged was lost; "
                        "run again when the server is back"
                    ) from None
                if lost(exc):
                    if not told and self.notice is not None:
                        self.notice(
                            f"the PostgreSQL session store ({self.target.shown}) went away ({message(exc)}); reconnecting"
                        )
                        told = True
                    time.sleep(0.25)
                    try:
                        self.connect()
                    except Exception as again:  # noqa: BLE001 - still down: try until the deadline
                        if not lost(again):
                            raise
