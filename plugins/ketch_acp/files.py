"""The editor as the session's file backend: ``fs/read_text_file`` and
``fs/write_text_file``, used when the client advertises them.

Reads then return the editor's buffer (unsaved changes included); edits land in the
editor, which tracks and can undo them. The file tools call this from a worker
thread; each call crosses over to the ACP connection's loop and waits there.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

TIMEOUT = 60.0  # seconds the editor may take to answer one file request


class EditorFiles:
    def __init__(
        self,
        conn: Any,
        session_id: str,
        loop: asyncio.AbstractEventLoop,
        *,
        read: bool,
        write: bool,
    ) -> None:
        self.conn, self.session_id, self.loop = conn, session_id, loop
        self.can_read, self.can_write = read, write

    def _call(self, coro: Any) -> Any:
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self.loop:
            coro.close()
            raise RuntimeError(
                "the editor's files were used from the event loop; file tools must call them from a worker thread"
            )
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(TIMEOUT)

    def read(self, path: Path) -> bytes | None:
        if not self.can_read:
            return None
        try:
            response = self._call(
                self.conn.read_text_file(session_id=self.session_id, path=str(path))
            )
        except TimeoutError:
            raise OSError(f"the editor did not return {path} within {TIMEOUT:g} s") from None
        except Exception as exc:  # noqa: BLE001 - the editor's error, as one line for the model
            if not path.exists():
                raise FileNotFoundError(str(path)) from None
            raise OSError(f"the editor could not read {path}: {exc}") from None
        return str(response.content).encode("utf-8", "replace")

    def write(self, path: Path, data: bytes) -> bool:
        if not self.can_write:
            return False
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return (
                False  # not UTF-8 (a legacy encoding kept from disk): ketch writes the bytes itself
            )
        try:
            self._call(
                self.conn.write_text_file(session_id=self.session_id, path=str(path), content=text)
            )
        except TimeoutError:
            raise OSError(
                f"the editor did not confirm writing {path} within {TIMEOUT:g} s; it may or may not have been written"
            ) from None
        except Exception as exc:  # noqa: BLE001
            raise OSError(f"the editor could not write {path}: {exc}") from None
        return True
