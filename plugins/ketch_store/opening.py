"""Opening the session store, once per kernel: on first use, or concurrently with the
first model request when a frontend asks for it (headless); and finding the session to
resume in it.

The state is the kernel's (``kernel.stash``): two kernels in one process open two
stores. A store that cannot be opened is kept as its reason (:attr:`Opening.problem`)
and raised again at every later use. Kept import-light: ``ketch -p`` imports it before
its first request; the store itself (SQLite, the cipher) is imported by the thread
that opens it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ketch.api import KetchError, StashKey, UsageError

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Kernel, SessionRecord, Store, StoreUnavailable


@dataclass
class Opening:
    """How far this kernel's store is: opened (or failed), opening, or asked to open later."""

    store: Store | None = None
    opened: bool = False  # opened, failed, or its thread started
    later: bool = False  # open_concurrently() was asked for
    thread: threading.Thread | None = None
    # Why the store could not be opened (kept, and raised again at every later use).
    problem: StoreUnavailable | None = None


OPENING = StashKey[Opening]()


def opening(kernel: Kernel) -> Opening:
    return kernel.stash.setdefault(OPENING, Opening())


def store(kernel: Kernel) -> Store | None:
    """The session store (opened on first use), or None when no plugin provides one.

    A store that cannot be opened raises :class:`StoreUnavailable` here, now and at
    every later use, with the reason it failed the first time. ``--no-save`` opens
    nothing. While it opens concurrently (:func:`open_concurrently`) this waits for it.
    """
    state = opening(kernel)
    thread = state.thread
    if thread is not None:
        thread.join()
    elif not state.opened:
        state.opened = True
        _open(kernel, state)
    if state.problem is not None:
        raise state.problem.with_traceback(None)
    return state.store


def open_concurrently(kernel: Kernel) -> None:
    """Open the store (its key fetched, its file opened) while the first model request
    is under way instead of before it: a frontend's choice (headless). Until it is
    open, :func:`pending` is True: the store's own observer keeps the session's events
    until then, and an event that must be journaled before an effect (a tool starting)
    waits for it, so nothing runs unrecorded and a store that fails is known before any
    tool runs. Anything that needs the store earlier opens it at once."""
    state = opening(kernel)
    if not (state.opened or state.thread or getattr(kernel.args, "no_save", False)):
        state.later = True


def pending(kernel: Kernel) -> bool:
    """Whether the store is being opened concurrently and is not open (or failed) yet."""
    state = opening(kernel)
    if not state.later:
        return False
    thread = state.thread
    return (thread is None and not state.opened) or (thread is not None and thread.is_alive())


def start(kernel: Kernel) -> None:
    """Begin the concurrent open now (the loop's first wait in a model request)."""
    state = opening(kernel)
    if not state.later or state.opened or state.thread is not None:
        return
    _ = kernel.settings  # validated in this thread: a refusal is the caller's error
    state.opened = True

    def run() -> None:
        from ketch.api import StoreUnavailable

        try:
            _open(kernel, state)
        except BaseException as exc:  # noqa: BLE001 - said where the store is used
            state.problem = StoreUnavailable(
                f"the session store could not be opened ({type(exc).__name__}: {exc})",
                exists=True,
            )

    state.thread = threading.Thread(target=run, name="ketch-store-open", daemon=True)
    state.thread.start()


def _open(kernel: Kernel, state: Opening) -> None:
    from ketch.api import StoreUnavailable

    if getattr(kernel.args, "no_save", False):
        state.problem = StoreUnavailable("--no-save was given", exists=False)
        return
    settings = kernel.settings  # a config refusal (the managed policy) is not a store problem
    try:
        cipher = kernel.hooks.first("ketch_field_cipher", settings=settings)
        state.store = kernel.hooks.first("ketch_open_store", settings=settings, cipher=cipher)
    except StoreUnavailable as exc:
        state.problem = exc
    except KetchError as exc:  # any other refusal: assume there was data it should have opened
        state.problem = StoreUnavailable(exc.message, exists=True)


def resume_record(kernel: Kernel, session_id: str | None) -> SessionRecord:
    """The session to resume (``session_id``, or this workspace's latest), from this
    workspace only: a session is never rebound to another workspace silently."""
    if getattr(kernel.args, "no_save", False):
        raise UsageError(
            "--no-save opens no session store, so there is nothing to resume; drop --no-save or --continue/--resume"
        )
    try:
        found = store(kernel)
    except KetchError as exc:
        raise KetchError(f"cannot resume: {exc.message}", exit_code=exc.exit_code) from None
    if found is None:
        raise KetchError(
            "cannot resume: no session store is loaded (is the 'store' plugin disabled?)"
        )
    if session_id is None:
        session_id = found.latest_session_id(str(kernel.workspace))
        if session_id is None:
            raise KetchError(
                f"no earlier session in {kernel.workspace}; start one without --continue"
            )
    record = found.load_session(session_id)
    if record.workspace and Path(record.workspace) != kernel.workspace:
        raise KetchError(
            f"session {record.id} belongs to workspace {record.workspace}; run ketch there to resume it (sessions are never rebound silently)"
        )
    return record
