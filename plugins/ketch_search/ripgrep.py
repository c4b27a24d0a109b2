"""Running ripgrep safely on an untrusted pattern.

* the pattern and the path always come after ``--``, so ``-foo`` or ``--pre=./x.sh`` is
  text to search for, never an option; the file glob is passed as one ``--glob=VALUE``
  argument, which rg cannot read as anything but a glob;
* ``--no-config`` and no ``RIPGREP_CONFIG_PATH`` in the child's environment: no config
  file can add ``--pre`` (or anything else) behind our back; nothing here ever passes
  ``--pre``, ``--search-zip`` or ``--follow``;
* ``--json`` output, turned into :class:`Hit` records for the shared formatter.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import shutil
import signal
from collections.abc import Callable
from pathlib import Path

from ketch_search.hits import Hit, Search

MAX_JSON_LINE = 4 << 20


class RipgrepUnusable(RuntimeError):
    """rg is missing or too old for the flags we need: use the Python engine."""


def find_rg() -> str | None:
    return shutil.which("rg")


def build_argv(
    rg: str,
    *,
    pattern: str,
    target: Path,
    glob: str,
    ignore_case: bool,
    literal: bool,
    context: int,
    max_filesize: int,
) -> list[str]:
    argv = [
        rg,
        "--json",
        "--no-config",
        "--hidden",
        "--no-require-git",
        "--sort=path",
        "--glob=!.git",
        f"--max-filesize={max_filesize}",
    ]
    if ignore_case:
        argv.append("--ignore-case")
    if literal:
        argv.append("--fixed-strings")
    if context:
        argv.append(f"--context={context}")
    if glob:
        argv.append(f"--glob={glob}")
    # rg matches globs relative to its working directory: run it in the search root
    # (see ``search_root``) and name the target relative to it.
    argv += ["--", pattern, "." if target.is_dir() else target.name]
    return argv


def search_root(target: Path) -> Path:
    return target if target.is_dir() else target.parent


def _text(field: dict[str, str]) -> str:
    if "text" in field:
        return field["text"]
    return base64.b64decode(field.get("bytes", "")).decode("utf-8", "replace")


def _os_text(field: dict[str, str]) -> str:
    """A path from rg's JSON: its bytes kept (``surrogateescape``) when they are not
    UTF-8, so the name is shown escaped and can be used again."""
    if "text" in field:
        return field["text"]
    return os.fsdecode(base64.b64decode(field.get("bytes", "")))


def _strip_newline(text: str) -> str:
    if text.endswith("\n"):
        text = text[:-1]
    return text[:-1] if text.endswith("\r") else text


async def run_rg(
    argv: list[str], *, cwd: Path, cap: int, timeout: float, skip: Callable[[Path], bool]
) -> Search:
    """Run rg, stop after ``cap`` matching lines (plus their context) or ``timeout``."""
    env = {k: v for k, v in os.environ.items() if k != "RIPGREP_CONFIG_PATH"}
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
            cwd=cwd,
        )
    except OSError as exc:
        raise RipgrepUnusable(str(exc)) from None
    search = Search()
    stderr_task = asyncio.create_task(_drain(proc.stderr))  # type: ignore[arg-type]
    try:
        await asyncio.wait_for(_consume(proc, search, cap, skip, cwd), timeout)
    except TimeoutError:
        search.timed_out = True
    finally:
        if proc.returncode is None:
            # Not proc.kill(): Popen.send_signal polls first and may reap the child
            # behind asyncio's watcher, which then loses the exit status.
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGKILL)
        await proc.wait()
    stderr = (await stderr_task).decode("utf-8", "replace").strip()
    if proc.returncode == 2 and not search.truncated and not search.timed_out:
        if (
            "unrecognized" in stderr
            or "Found argument" in stderr
            or "unexpected argument" in stderr
        ):
            raise RipgrepUnusable(stderr.splitlines()[0] if stderr else "rg rejected its arguments")
        if not search.hits:
            raise SearchError(_explain(stderr))
        search.warnings.append(_explain(stderr).splitlines()[0][:300])
    return search


async def _drain(stream: asyncio.StreamReader, keep: int = 64 * 1024) -> bytes:
    """Read a stream to its end (so the child never blocks on it), keeping its start."""
    kept = bytearray()
    while chunk := await stream.read(1 << 16):
        if len(kept) < keep:
            kept += chunk[: keep - len(kept)]
    return bytes(kept)


class SearchError(ValueError):
    """A problem the model can fix (a bad regex)."""


def _explain(stderr: str) -> str:
    if "regex parse error" in stderr or "error parsing regex" in stderr:
        detail = "\n".join(line.rstrip() for line in stderr.splitlines()[:8])
        return f"invalid regular expression (ripgrep / Rust regex syntax):\n{detail}\nFix the pattern, or set literal to true to search for plain text."
    return stderr[:1000] or "ripgrep failed"


async def _consume(
    proc: asyncio.subprocess.Process,
    search: Search,
    cap: int,
    skip: Callable[[Path], bool],
    cwd: Path,
) -> None:
    assert proc.stdout is not None
    buffer = b""
    skipping = False
    while True:
        chunk = await proc.stdout.read(1 << 16)
        if not chunk:
            break
        buffer += chunk
        while True:
            newline = buffer.find(b"\n")
            if newline < 0:
                if len(buffer) > MAX_JSON_LINE:  # an absurdly long line: skip it
                    buffer, skipping = b"", True
                break
            line, buffer = buffer[:newline], buffer[newline + 1 :]
            if skipping:
                skipping = False
                continue
            if _take(line, search, cap, skip, cwd):
                search.truncated = True
                return


def _take(line: bytes, search: Search, cap: int, skip: Callable[[Path], bool], cwd: Path) -> bool:
    """Record one JSON event; True when the cap is passed (stop reading)."""
    try:
        event = json.loads(line)
    except ValueError:
        return False
    kind = event.get("type")
    if kind not in ("match", "context"):
        return False
    data = event.get("data", {})
    path = Path(os.path.normpath(cwd / _os_text(data.get("path", {}))))
    if skip(path):
        search.skipped.add(path)
        return False
    is_match = kind == "match"
    if is_match and search.matches >= cap:
        return True
    search.add(
        Hit(
            path,
            int(data.get("line_number") or 0),
            _strip_newline(_text(data.get("lines", {}))),
            is_match,
        )
    )
    return False
