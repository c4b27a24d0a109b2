"""ketch_store: the SQLite session store, its event journal and crash recovery.

Implements ``ketch_open_store`` (one database in the user state dir, fields sealed by
the cipher ``ketch_field_cipher`` provides), observes sessions through ``ketch_event``
(the journal), flushes pins/state at ``ketch_session_end``, and registers the
``ketch sessions`` and ``ketch store`` commands. Everything heavy is imported inside
the hooks.

It keeps the store for the kernel (``ketch_session_store`` behind ``kernel.store``,
``ketch_resume_record``): :mod:`ketch_store.opening` opens it on first use, or beside
the first request when a frontend asks (``store_open_concurrently``, ``store_pending``).
A store that refuses to open raises ``StoreUnavailable``; the reason is kept
(``store_problem``) and raised again at every use. A frontend decides what that means before the session
starts (a headless run stops when there was a store to open); a session that runs
anyway runs unsaved and says so once. Resuming, and the ``sessions`` command, fail
with the store's explanation.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ketch.api import Command, StashKey, hookimpl

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import (
        Event,
        FieldCipher,
        Kernel,
        Session,
        SessionRecord,
        Settings,
        Store,
        StoreUnavailable,
    )


@hookimpl
def ketch_register_settings(register: Callable[[Any], None]) -> None:
    from ketch_store.settings import STORAGE

    register(STORAGE)


@hookimpl
def ketch_add_hookspecs(pluginmanager: Any) -> None:
    from ketch_store import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


@hookimpl
def ketch_session_store(kernel: Kernel) -> Store | None:
    from ketch_store.opening import store

    return store(kernel)


@hookimpl
def ketch_resume_record(kernel: Kernel, session_id: str | None) -> SessionRecord:
    from ketch_store.opening import resume_record

    return resume_record(kernel, session_id)


@hookimpl
def ketch_request_started(session: Session) -> None:
    from ketch_store.opening import start

    start(session.kernel)


@hookimpl
def store_open_concurrently(kernel: Kernel) -> None:
    from ketch_store.opening import open_concurrently

    open_concurrently(kernel)


@hookimpl
def store_pending(kernel: Kernel) -> bool:
    from ketch_store.opening import pending

    return pending(kernel)


@hookimpl
def store_problem(kernel: Kernel) -> StoreUnavailable | None:
    from ketch_store.opening import opening

    return opening(kernel).problem


@hookimpl
def ketch_open_store(settings: Settings, cipher: FieldCipher | None) -> Store | None:
    from ketch.api import state_dir
    from ketch_store.settings import StorageSettings
    from ketch_store.store import SqliteStore
    from ketch_store_kit.journal import store_url, writer_wait
    from ketch_store_kit.recorder import Recorder

    wait = writer_wait(settings)  # a bad value is a config error before anything opens
    url = store_url(settings)
    if url is not None and not url.startswith("sqlite:"):
        # A store plugin for this URL would have answered first (tryfirst): never fall
        # back to the local file silently when sessions are meant to go elsewhere.
        from ketch.api import StoreUnavailable

        raise StoreUnavailable(
            f"[storage] url (or KETCH_STORE_URL) asks for {url.split(':', 1)[0]}://..., and no loaded plugin "
            "serves it (is the 'store_pg' plugin disabled?); sessions are not kept in the local file instead",
            exists=True,
        )

    path = sqlite_path(url) if url is not None else state_dir() / "sessions.db"
    store = SqliteStore.open(path, cipher, encryption=settings.of(StorageSettings).encryption)
    store.writer_wait = wait
    store.recorder = Recorder(store)
    return store


@hookimpl
def store_open_url(url: str, settings: Settings, cipher: FieldCipher | None) -> Store | None:
    """``sqlite:///PATH`` (migrations to and from a file other than the default)."""
    if not url.startswith("sqlite:"):
        return None
    from ketch_store.settings import StorageSettings
    from ketch_store.store import SqliteStore
    from ketch_store_kit.recorder import Recorder

    store = SqliteStore.open(
        sqlite_path(url), cipher, encryption=settings.of(StorageSettings).encryption
    )
    store.recorder = Recorder(store)
    return store


def sqlite_path(url: str) -> Any:
    from pathlib import Path

    return Path(url.removeprefix("sqlite://").removeprefix("sqlite:")).expanduser()


def _recorder(session: Session) -> Any:
    """This kernel's recorder, or None when the store is not ours or did not open."""
    from ketch.api import KetchError

    kernel = session.kernel
    if store_problem(kernel) is not None:
        return None
    try:
        store = kernel.store
    except KetchError:
        return None  # kept as store_problem; said once at session start
    return getattr(store, "recorder", None)


@hookimpl
def ketch_session_start(session: Session) -> None:
    if store_pending(session.kernel):  # opening concurrently: said when it is open (_flush)
        session.stash.setdefault(PENDING, [])
        return
    _say_state(session)


def _say_state(session: Session, concurrent: bool = False) -> None:
    """Whether this session is being saved, and how (a notice when it is not, or in clear).
    ``concurrent``: the store was opened concurrently, and the frontend that asked for it
    says what a store that exists but cannot open means (headless: the run fails)."""
    from ketch.api import NoticeEvent

    recorder = _recorder(session)
    problem = store_problem(session.kernel)
    messages: list[str] = []
    if problem is not None and not (concurrent and problem.exists):
        messages.append(f"this session is not being saved: {problem.message}")
    elif recorder is not None:
        store = recorder.store
        messages += store.notices
        store.notices = []
        if not store.encrypted:
            messages.append(
                f'storage.encryption = "off": this session is saved unencrypted in {store.path}'
            )
    for message in messages:
        session.kernel.emit(session, NoticeEvent(level="warning", message=message))


# Events that wait for a store opening concurrently: a tool's dispatch is journaled before
# it runs, and a turn is whole in the journal when it ends. The rest is kept in order
# (``Pending``) and journaled first when the store is open.
PENDING = StashKey["list[Event]"]()
_WAIT_FOR = frozenset({"tool_started", "turn_end"})
_NOT_STORED = frozenset(
    {"text_delta", "reasoning_delta", "tool_call", "tool_output", "user_prompt", "notice"}
)


@hookimpl
def ketch_event(session: Session, event: Event) -> None:
    if event.type in _NOT_STORED:
        return  # not stored; skip the lookup on the hot path of streaming
    if store_pending(session.kernel) and event.type not in _WAIT_FOR:
        session.stash.setdefault(PENDING, []).append(event)
        return
    for each in [*_flush(session), event]:
        _record(session, each)


@hookimpl
def ketch_notification(session: Session, message: str, kind: str) -> None:
    """A call is about to wait for a person: the turn so far goes into the journal first
    (waiting for a store that is still opening, as a tool's dispatch does), so what reads
    the store meanwhile -- ``ketch sessions show``, a background run's ``ketch ps`` and
    ``attach`` -- sees what waits."""
    if kind != "permission" or PENDING not in session.stash:
        return
    for each in _flush(session):
        _record(session, each)


def _flush(session: Session) -> list[Event]:
    """The events kept while the store opened (it is open, or failed, now); the first
    time, the notices the session start would have given."""
    kept = session.stash.pop(PENDING, None)
    if kept is None:
        return []
    _say_state(session, concurrent=True)
    return kept


def _record(session: Session, event: Event) -> None:
    from ketch.api import KetchError

    recorder = _recorder(session)
    if recorder is None:
        return
    try:
        recorder.observe(session, event)
    except KetchError:
        raise
    except Exception as exc:  # noqa: BLE001 - fail closed: nothing runs unrecorded
        raise KetchError(
            f"the session store could not record a '{event.type}' event ({type(exc).__name__}: {exc}); "
            "stopping so that nothing runs unrecorded"
        ) from exc


@hookimpl
def ketch_session_end(session: Session, reason: str) -> None:
    for event in _flush(session):
        _record(session, event)
    recorder = _recorder(session)
    if recorder is not None:
        recorder.end(session)


@hookimpl
def ketch_register_commands(register: Callable[[Command], None]) -> None:
    from ketch_store import commands, keycmd

    register(
        Command(
            name="sessions",
            help="list, show, export, verify, rename or delete saved sessions",
            cli=True,
            configure=commands.configure,
            run=commands.run,
        )
    )
    register(
        Command(
            name="store",
            help="the session store's key: status, export, import, rotate, passphrase",
            cli=True,
            configure=keycmd.configure,
            run=keycmd.run,
        )
    )
