"""ketch_store: the SQLite session store, its event journal and crash recovery.

Implements ``ketch_open_store`` (one database in the user state dir, fields sealed by
the cipher ``ketch_field_cipher`` provides), observes sessions through ``ketch_event``
(the journal), flushes pins/state at ``ketch_session_end``, and registers the
``ketch sessions`` command. Everything heavy is imported inside the hooks.

A store that refuses to open (recovery-locked, no keyring, plaintext not allowed)
does not stop a new session: the session runs unsaved and says so. Resuming, and the
``sessions`` command, fail with the store's explanation instead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ketch import hookimpl
from ketch.commands import Command

if TYPE_CHECKING:  # pragma: no cover
    from ketch.events import Event
    from ketch.session import Session
    from ketch.settings import Settings
    from ketch.storage import FieldCipher, Store


@hookimpl
def ketch_register_settings(register: Callable[[Any], None]) -> None:
    from ketch_store.settings import STORAGE

    register(STORAGE)


@hookimpl
def ketch_open_store(settings: Settings, cipher: FieldCipher | None) -> Store | None:
    from ketch.paths import state_dir
    from ketch_store.recorder import Recorder
    from ketch_store.settings import StorageSettings
    from ketch_store.store import SqliteStore

    store = SqliteStore.open(state_dir() / "sessions.db", cipher, encryption=settings.of(StorageSettings).encryption)
    store.recorder = Recorder(store)
    return store


def _recorder(session: Session) -> Any:
    """This kernel's recorder, or None when the store is not ours or did not open."""
    from ketch.errors import KetchError

    kernel = session.kernel
    failed = getattr(kernel, "_ketch_store_failed", None)
    if failed is not None:
        return None
    try:
        store = kernel.store
    except KetchError as exc:
        # Said once the session has started (ketch_session_start), so that the session
        # event stays the first one a frontend sees.
        kernel._ketch_store_failed = exc.message  # type: ignore[attr-defined]
        return None
    return getattr(store, "recorder", None)


@hookimpl
def ketch_session_start(session: Session) -> None:
    from ketch.events import NoticeEvent

    failed = getattr(session.kernel, "_ketch_store_failed", None)
    if failed is not None:
        message = f"this session is not being saved: {failed}"
    else:
        recorder = _recorder(session)
        if recorder is None or recorder.store.encrypted:
            return
        message = f'storage.encryption = "off": this session is saved unencrypted in {recorder.store.path}'
    session.kernel.emit(session, NoticeEvent(level="warning", message=message))


@hookimpl
def ketch_event(session: Session, event: Event) -> None:
    from ketch.errors import KetchError

    if event.type in ("text_delta", "reasoning_delta", "tool_call", "user_prompt", "notice"):
        return  # not stored; skip the lookup on the hot path of streaming
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
    recorder = _recorder(session)
    if recorder is not None:
        recorder.end(session)


@hookimpl
def ketch_register_commands(register: Callable[[Command], None]) -> None:
    from ketch_store.commands import configure, run

    register(
        Command(
            name="sessions",
            help="list, show, export, rename or delete saved sessions",
            cli=True,
            configure=configure,
            run=run,
        )
    )
