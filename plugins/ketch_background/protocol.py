"""The attach protocol: JSON lines over the worker's unix socket.

A client sends one request line first:

* ``{"op": "status"}`` — answered with one ``status`` line, then the connection closes
  (``ketch ps``);
* ``{"op": "attach"}`` — answered with ``hello`` (the session so far: its messages, the
  approvals it waits for, the answer streaming now), then, as they happen, ``event``
  (every event of the session, subagents' included), ``approval`` (a question),
  ``approval_closed`` (answered, here or by another attached person) and ``end`` (the
  turn is over). The client may then send ``answer`` (``id``, ``approved``,
  ``remember``: ``once``/``session``, ``message``) and ``steer`` (``text``) lines.

The socket is the user's own (mode 0600 in a 0700 folder) and the worker accepts a
connection only from a process of the same user (``SO_PEERCRED``). Lines are bounded.
"""

from __future__ import annotations

import json
import socket
import struct
from typing import Any

MAX_LINE = 64 << 20  # a hello can carry a long transcript


def encode(message: dict[str, Any]) -> bytes:
    return json.dumps(message, ensure_ascii=False, default=str).encode("utf-8") + b"\n"


def decode(line: bytes) -> dict[str, Any] | None:
    """The message of one line; None for anything that is not a JSON object."""
    try:
        value = json.loads(line)
    except (ValueError, UnicodeDecodeError):
        return None
    return value if isinstance(value, dict) else None


def peer_uid(sock: socket.socket) -> int | None:
    """The uid of the process at the other end (Linux ``SO_PEERCRED``)."""
    try:
        data = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    except (OSError, AttributeError):
        return None
    _pid, uid, _gid = struct.unpack("3i", data)
    return int(uid)


def ask(path: str, request: dict[str, Any], *, timeout: float = 2.0) -> dict[str, Any] | None:
    """One request, one answer line (``status``); None when the worker does not answer."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(timeout)
            sock.connect(path)
            sock.sendall(encode(request))
            reader = sock.makefile("rb")
            return decode(reader.readline(MAX_LINE))
    except OSError:
        return None
