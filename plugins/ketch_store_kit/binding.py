"""The MAC over the columns that decide where a session's content goes.

A session row keeps its provider, model, mode and workspace index in the open (lists
and ``--continue`` need them without the key). Editing them would send the whole
decrypted transcript to another provider or model on the next ``--continue``, or
file the session under another workspace, while every sealed field still
authenticates. So the row also carries ``binding = MAC(session, provider, model, mode,
workspace index)`` under a subkey of the data key (``session-binding``): a session
whose binding does not match is refused on load (nothing is sent anywhere) and named
by ``ketch sessions verify``. Every write of those columns recomputes it in the same
transaction.
"""

from __future__ import annotations

import struct
from typing import Any

BINDING = "session-binding"
COLUMNS = ("provider", "model", "mode", "workspace_index")


def binding_input(
    session_id: str, provider: str, model: str, mode: str, workspace_index: str
) -> bytes:
    parts = (b"ketch/session-binding/v1", session_id, provider, model, mode, workspace_index)
    out = b""
    for part in parts:
        raw = part if isinstance(part, bytes) else str(part).encode("utf-8")
        out += struct.pack(">I", len(raw)) + raw
    return out


def binding_of(fields: Any, session_id: str, row: tuple[Any, ...]) -> bytes:
    """The binding of a row's ``(provider, model, mode, workspace_index)``."""
    provider, model, mode, workspace_index = (str(v or "") for v in row)
    return bytes(
        fields.mac(BINDING, binding_input(session_id, provider, model, mode, workspace_index))
    )


def rebind(conn: Any, fields: Any, session_id: str) -> None:
    """Recompute a session's binding from its row, inside the caller's transaction."""
    row = conn.execute(
        "SELECT provider, model, mode, workspace_index FROM sessions WHERE id = ?", (session_id,)
    ).fetchone()
    if row is not None:
        conn.execute(
            "UPDATE sessions SET binding = ? WHERE id = ?",
            (binding_of(fields, session_id, tuple(row)), session_id),
        )
