"""Diagnostics after a call changed files: only the new errors and warnings, capped.

Which files: the ones a call declared it writes (``write_file``, ``edit_file``,
``rename``) when it succeeded, and the ones the checkpoints plugin saw it change (a
shell command: ``checkpoints_files_changed``). Their text before the call is read right
before it runs, for the files a server serves, so that the first edit of a file has a
baseline too. The result the model gets carries the new problems; the person sees
them as a notice right after the call's result.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ketch.api import Effect, StashKey
from ketch_lsp.diagnostics import ordered
from ketch_lsp.work import MAX_BYTES, Change, Checked

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import ProposedCall, Session, ToolResult
    from ketch_lsp.runtime import Manager

MAX_FILES = 20  # changed files checked after one call (a formatter may touch hundreds)
TAG = "[lsp]"


@dataclass
class Pending:
    """What is known of one running call: texts before it, files it changed."""

    before: dict[Path, str | None] = field(default_factory=dict)
    changed: list[Path] = field(default_factory=list)
    created: set[Path] = field(default_factory=set)


PENDING = StashKey[dict[str, Pending]]()


def read_text(path: Path) -> str | None:
    """A file's text as a server should see it (line endings kept); None when it is
    not a regular file, too large, not text, or a secret (never sent to a server)."""
    from ketch_secret_kit import is_secret
    from ketch_tool_kit.paths import PathProblem
    from ketch_tool_kit.textfile import BinaryFile, TextFile
    from ketch_tool_kit.writing import read_existing

    try:
        found = read_existing(path)
    except (OSError, PathProblem):
        return None
    if found is None or len(found[1]) > MAX_BYTES:
        return None
    try:
        if is_secret(path):
            return None
        return TextFile.from_bytes(found[1]).text
    except (BinaryFile, OSError, ValueError):
        return None


def _written(call: ProposedCall) -> list[Path]:
    return [Path(a.target) for a in call.accesses if a.effect == Effect.WRITE]


def _inside(path: Path, root: Path) -> bool:
    from ketch_tool_kit.paths import is_within

    return is_within(path, root)


def before(session: Session, found: Manager, call: ProposedCall) -> None:
    """Right before a call that may change files: the text of each file it declares
    it writes that a server serves, and those servers started (in the background)."""
    table = session.stash.setdefault(PENDING, {})
    pending = table.setdefault(call.id, Pending())
    for path in _written(call)[:MAX_FILES]:
        if not _inside(path, found.workspace) or not found.serves(path):
            continue
        pending.before[path] = read_text(path) if path.exists() else None
        if not path.exists():
            pending.created.add(path)
        for spec in found.specs_for(path):
            found.launch(found.server(spec, path), session)


def seen_changed(
    session: Session, call: ProposedCall, paths: list[Path], created: list[Path]
) -> None:
    table = session.stash.setdefault(PENDING, {})
    pending = table.setdefault(call.id, Pending())
    pending.changed.extend(paths)
    pending.created.update(created)


async def after(
    session: Session, found: Manager, call: ProposedCall, result: ToolResult
) -> str | None:
    """The text to attach to the call's result (None: nothing new to say)."""
    pending = session.stash.setdefault(PENDING, {}).pop(call.id, None) or Pending()
    candidates = list(pending.changed)
    if result.ok:
        candidates = _written(call) + candidates
    paths = [
        p for p in dict.fromkeys(candidates) if _inside(p, found.workspace) and found.serves(p)
    ][:MAX_FILES]
    if not paths:
        return None
    pairs = []
    for path in paths:
        text = read_text(path) if path.exists() else None
        change = Change(
            path,
            text,
            before=pending.before.get(path),
            created=path in pending.created,
        )
        for spec in found.specs_for(path):
            server = found.server(spec, path)
            if found.launch(server, session):
                pairs.append((server, change))
    found.tell(session)
    if not pairs:
        return None
    from ketch_lsp.work import check

    timeout = found.settings.diagnostics_timeout
    deadline = time.monotonic() + timeout
    try:
        checked = await found.thread.run(check(found, pairs, deadline), timeout + 0.5)
    except TimeoutError:
        checked = []
    found.tell(session)
    return render(found, checked)


def render(found: Manager, checked: list[Checked]) -> str | None:
    from ketch_tool_kit.paths import display

    problems = ordered([p for c in checked for p in c.problems])
    by_server = {id(p): c.server for c in checked for p in c.problems}
    if not problems:
        return None
    limit = found.settings.max_diagnostics
    files = len({p.path for p in problems})
    noun = "problem" if len(problems) == 1 else "problems"
    where = f"in {files} files" if files > 1 else f"in {display(problems[0].path, found.workspace)}"
    lines = [f"{TAG} {len(problems)} new {noun} {where} after this change:"]
    for item in problems[:limit]:
        shown = display(item.path, found.workspace)
        lines.append(f"  {item.render(shown)} ({by_server.get(id(item), '')})")
    if len(problems) > limit:
        lines.append(
            f"  ... and {len(problems) - limit} more (the diagnostics tool lists them all)"
        )
    return "\n".join(lines)


def show_later(session: Session, text: str) -> None:
    """The person sees the new problems right after the call's result (the result of a
    file edit shows its diff, not its text): a notice once the result is out."""
    from ketch.api import NoticeEvent

    def emit() -> None:
        session.kernel.emit(session, NoticeEvent(level="info", message=text))

    try:
        asyncio.get_running_loop().call_soon(emit)
    except RuntimeError:
        emit()


def warm(session: Session, found: Manager, raw: str) -> None:
    """Start the servers of a file a proposed call names (in the background)."""
    from ketch_tool_kit.paths import resolve

    try:
        path = resolve(session.workspace, raw)
    except ValueError:
        return
    if not _inside(path, found.workspace):
        return
    for spec in found.specs_for(path):
        found.launch(found.server(spec, path), session)
