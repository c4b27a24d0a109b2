"""What storage and field encryption are, to the kernel (interfaces only).

The store plugin (``ketch_open_store``) and the encryption plugin
(``ketch_field_cipher``) meet here, so either can be replaced. The store observes
sessions through ``ketch_event`` and keeps it (``ketch_session_store``, ``ketch_resume_record``);
frontends and commands call the methods below to list, load and resume sessions. What else a store offers to other plugins (blobs, approvals, keyed
digests) is a contract between those plugins: ``ketch_store_kit.protocols``.
"""

from __future__ import annotations

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
    says so once. The store and cipher hooks raise it; the plugin that keeps the store
    (``ketch_session_store``) keeps it and ``Kernel.store`` raises it again at every use.
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
    active: History | None = None  # the derived context, when something replaced it
    usage: Usage = Field(default_factory=Usage)
    unknown_outcomes: list[dict[str, Any]] = Field(default_factory=list)
    state: dict[str, Any] = Field(default_factory=dict)  # the plugins' saved state


@runtime_checkable
class Store(Protocol):
    def latest_session_id(self, workspace: str) -> str | None: ...

    def load_session(self, session_id: str) -> SessionRecord:
        """Raise KetchError when there is no such session."""
        ...

    def list_sessions(self, workspace: str | None = None) -> list[SessionSummary]: ...

    def delete_session(self, session_id: str) -> None: ...

    def rename_session(self, session_id: str, name: str) -> None: ...

    def close(self) -> None: ...
