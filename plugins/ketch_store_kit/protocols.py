"""What a store offers other plugins beyond the kernel's :class:`ketch.storage.Store`.

Callers find these with ``getattr`` (a store without them still is a store):

* ``blobs``: a :class:`BlobStore` (content-addressed encrypted blobs; checkpoints);
* ``list_approvals`` / ``add_approval`` / ``remove_approval``: an :class:`ApprovalStore`
  ("always allow" answers, persisted per workspace: the policy);
* ``keyed_digest``: a :class:`KeyedDigest` (MCP's pins name a workspace this way);
* ``read_session(id) -> SessionRecord``: read a session without taking it over (a
  store with one writer per session claims it in ``load_session``);
* ``append_event(id, event)``: journal one event for a session no live process of
  this kernel holds (a command that rewinds a stored session's conversation).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict


@runtime_checkable
class ApprovalStore(Protocol):
    """Always-allow approvals, persisted per workspace (scopes as the policy writes them)."""

    def list_approvals(self, workspace: str) -> list[str]: ...

    def add_approval(self, workspace: str, scope: str) -> None: ...

    def remove_approval(self, workspace: str, scope: str) -> bool: ...


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
