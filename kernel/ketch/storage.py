"""What storage and field encryption are, to the kernel (interfaces only).

The store plugin (``ketch_open_store``) and the encryption plugin
(``ketch_field_cipher``) meet here, so either can be replaced. The store observes
sessions through ``ketch_event``; the kernel calls the methods below to list, load and
resume sessions.

A store may offer more, which callers look up with ``getattr`` (a store without them
still is a :class:`Store`):

* ``blobs``: a :class:`BlobStore` (content-addressed encrypted blobs; checkpoints);
* ``read_session(id) -> SessionRecord``: read a session without taking it over (a
  store with one writer per session claims it in ``load_session``);
* ``append_event(id, event)``: journal one event for a session no live process of
  this kernel holds (a command that rewinds a stored session's conversation).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from ketch.errors import KetchError
from ketch.messages import History, Usage


class IntegrityError(KetchError):
    """Stored data failed authentication (tampered, moved, or the wrong key)."""


class StoreUnavailable(KetchError):
    """The session store cannot be used; the message says why and what to do.

    ``exists`` tells whether there is data that should have opened (recovery-locked,
    damaged, a wrong passphrase): a headless run then stops before calling the model
    unless ``--no-save``, because continuing would silently not keep the user's work.
    Without data (no store yet and no way to make one) the run continues unsaved and
    says so once. The store and cipher hooks raise it; the kernel keeps it
    (``Kernel.store_problem``) and raises it again wherever the store is used later.
    """

    def __init__(self, message: str, *, exists: bool, exit_code: int | None = None) -> None:
        super().__init__(message, exit_code=exit_code)
        self.exists = exists


class RecoveryLocked(StoreUnavailable):
    """The data exists but its key cannot be had: the store refuses to open."""

    def __init__(self, message: str, *, exists: bool = True, exit_code: int | None = None) -> None:
        super().__init__(message, exists=exists, exit_code=exit_code)


@runtime_checkable
class FieldCipher(Protocol):
    """Authenticated encryption of single fields, with the record identity as AAD."""

    algorithm: str

    def encrypt(self, plaintext: bytes, aad: bytes) -> bytes: ...

    def decrypt(self, envelope: bytes, aad: bytes) -> bytes:
        """Return the plaintext, or raise IntegrityError. Never returns unauthenticated data."""
        ...

    def index(self, value: str) -> str:
        """A keyed, deterministic index of ``value`` (HMAC-SHA-256, hex) for lookups."""
        ...


class SessionSummary(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    name: str = ""
    title: str = ""  # the session's first prompt, shortened (for lists when it has no name)
    model: str = ""
    mode: str = ""
    created: float = 0.0
    updated: float = 0.0
    messages: int = 0
    workspace: str = ""


class SessionRecord(BaseModel):
    """What restoring a session brings back: knowledge, never authority."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    id: str
    name: str = ""
    workspace: str = ""
    provider: str = ""
    model: str = ""
    mode: str = ""
    transcript: History = ()
    active: History | None = None  # the derived context after the last compaction
    pins: tuple[str, ...] = ()
    compactions: list[dict[str, Any]] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    unknown_outcomes: list[dict[str, Any]] = Field(default_factory=list)
    state: dict[str, Any] = Field(default_factory=dict)
    rewound: tuple[
        str, ...
    ] = ()  # transcript message ids a rewind abandoned (still in the transcript)


@runtime_checkable
class Store(Protocol):
    def latest_session_id(self, workspace: str) -> str | None: ...

    def load_session(self, session_id: str) -> SessionRecord:
        """Raise KetchError when there is no such session."""
        ...

    def list_sessions(self, workspace: str | None = None) -> list[SessionSummary]: ...

    def delete_session(self, session_id: str) -> None: ...

    def rename_session(self, session_id: str, name: str) -> None: ...

    # "Always allow" approvals, persisted per workspace (scopes as the policy writes them).
    def list_approvals(self, workspace: str) -> list[str]: ...

    def add_approval(self, workspace: str, scope: str) -> None: ...

    def remove_approval(self, workspace: str, scope: str) -> bool: ...

    def close(self) -> None: ...


@runtime_checkable
class KeyedDigest(Protocol):
    """A store that names things by a keyed digest, for plugins that file data outside the
    store without revealing what it is about (MCP pins name a workspace this way)."""

    def keyed_digest(self, purpose: str, value: str) -> str:
        """HMAC-SHA-256 (hex) of ``value`` for ``purpose`` under a key derived from the
        store's data key; stable for the life of the store (key rotations included)."""


@dataclass(frozen=True)
class NewBlob:
    """A blob to store: its id (:meth:`BlobStore.blob_id` of ``data``), its content, and
    the blobs it refers to (a directory tree names its files and subtrees)."""

    id: str
    data: bytes
    children: tuple[str, ...] = ()


class BlobRecord(BaseModel):
    """One record of a collection: its per-session, per-collection sequence number,
    when it was written, and its (decrypted) JSON data."""

    model_config = ConfigDict(frozen=True)

    seq: int
    ts: float
    data: dict[str, Any]


@runtime_checkable
class BlobStore(Protocol):
    """Content-addressed, encrypted blobs, and the per-session records that keep them.

    A store offers one as ``store.blobs``. A blob's id is a keyed digest of its content
    (it reveals nothing without the store's key), its content is sealed with its id as
    associated data, and reading it back checks both. A blob is kept while a record
    refers to it, or to a blob whose children lead to it; :meth:`collect_garbage`
    removes the rest (those written or kept within a grace period excepted, so that a
    writer in another process never loses what it is about to refer to). Records live
    in named collections per session and go with their session.
    """

    def blob_id(self, data: bytes) -> str:
        """The id ``data`` is stored under."""
        ...

    def missing(self, ids: Iterable[str]) -> set[str]:
        """Which of ``ids`` are not stored."""
        ...

    def put(self, blobs: Iterable[NewBlob]) -> int:
        """Store blobs (one transaction); ones already stored are only marked as kept.
        Returns the bytes added."""
        ...

    def get(self, blob_id: str) -> bytes:
        """A blob's content; ``KetchError`` when it is not stored, ``IntegrityError``
        when it does not authenticate."""
        ...

    def keep(self, ids: Iterable[str]) -> None:
        """Renew the grace period of blobs (and everything they reach) about to be
        referred to again."""
        ...

    def add_record(
        self, session_id: str, collection: str, data: dict[str, Any], refs: Iterable[str] = ()
    ) -> int:
        """Append a record (sealed JSON) referring to blobs ``refs``; returns its seq."""
        ...

    def records(self, session_id: str, collection: str) -> list[BlobRecord]:
        """A collection's records of one session, oldest first."""
        ...

    def drop_records(self, session_id: str, collection: str, seqs: Iterable[int]) -> int:
        """Delete records (their blobs go at the next collection); returns how many."""
        ...

    def collect_garbage(self) -> dict[str, int]:
        """Delete blobs nothing refers to any more; returns counts (blobs, bytes)."""
        ...
