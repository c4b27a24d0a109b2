"""/sessions, /resume, /rename and /diff: this workspace's sessions and what this one changed."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from prompt_toolkit.formatted_text import FormattedText

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import SessionSummary
    from ketch_interactive.shell import Shell

MAX_LISTED = 30


def age(ts: float, now: float | None = None) -> str:
    """How long ago, as a person says it: "just now", "5 min ago", "3 h ago", "2 days ago"."""
    seconds = max((now or time.time()) - ts, 0)
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return f"{int(seconds // 60)} min ago"
    if seconds < 86400:
        return f"{int(seconds // 3600)} h ago"
    days = int(seconds // 86400)
    return f"{days} day{'s' if days != 1 else ''} ago"


def describe(summary: SessionSummary, width: int = 100) -> str:
    name = summary.name or "(no name)"
    first = " ".join((summary.title or "").split()) or "(no prompt)"
    text = f"{name} · {age(summary.updated)} · {first}"
    return text if len(text) <= width else text[: width - 1] + "…"


def _summaries(shell: Shell) -> list[SessionSummary] | None:
    store = shell.kernel.store
    if store is None:
        shell.renderer.line(
            "no session store is loaded (is the 'store' plugin disabled?): sessions are not kept",
            "yellow",
        )
        return None
    errors: list[str] = []
    try:
        rows = store.list_sessions(str(shell.session.workspace), errors=errors)  # type: ignore[call-arg]
    except TypeError:  # a store without the errors argument
        rows = store.list_sessions(str(shell.session.workspace))
    for error in errors[:3]:
        shell.renderer.line(f"! {error}", "yellow")
    return rows


async def sessions_command(shell: Shell, argument: str) -> bool:
    rows = _summaries(shell)
    if rows is None:
        return False
    if not rows:
        shell.renderer.say("no saved sessions in this workspace yet")
        return False
    shell.renderer.say(f"sessions in {shell.session.workspace} (newest first; /resume picks one):")
    for row in rows[:MAX_LISTED]:
        mark = "●" if row.id == shell.session.id else " "
        shell.renderer.say(f" {mark} {row.id[:16]}  {describe(row)}")
    if len(rows) > MAX_LISTED:
        shell.renderer.say(
            f"   … and {len(rows) - MAX_LISTED} older (ketch sessions list shows all)"
        )
    return False


async def resume_command(shell: Shell, argument: str) -> bool:
    from ketch.api import KetchError
    from ketch_interactive.approval import Interrupted, choose

    rows = _summaries(shell)
    if rows is None:
        return False
    others = [r for r in rows if r.id != shell.session.id]
    wanted = argument.strip()
    if wanted:
        matches = [r for r in others if r.id.startswith(wanted) or (r.name and r.name == wanted)]
        if len(matches) != 1:
            shell.renderer.line(
                f"{'no' if not matches else 'more than one'} session of this workspace matches {wanted!r} (/sessions lists them)",
                "yellow",
            )
            return False
        chosen: Any = matches[0].id
    else:
        if not others:
            shell.renderer.say("no other saved session in this workspace to resume")
            return False
        options: list[tuple[Any, str, str]] = [(r.id, describe(r), "") for r in others[:MAX_LISTED]]
        try:
            chosen = await choose(
                FormattedText([("class:title", "Resume which session? (Esc: stay here)\n")]),
                options,
                cancel=None,
            )
        except (Interrupted, EOFError):
            chosen = None
        if chosen is None:
            return False
    try:
        await shell.switch_session(str(chosen))
    except KetchError as exc:
        shell.renderer.line(f"ketch: {exc.message}", "red")
    return False


async def rename_command(shell: Shell, argument: str) -> bool:
    name = " ".join(argument.split())
    if not name:
        shell.renderer.say(f"name: {shell.session.name or '(none)'}; set it with /rename NAME")
        return False
    store = shell.kernel.store
    shell.session.name = name
    if store is None:
        shell.renderer.line("named for this run only: no session store is loaded", "yellow")
        return False
    try:
        store.rename_session(shell.session.id, name)
    except Exception as exc:  # noqa: BLE001 - a store that cannot rename says why, in one line
        shell.renderer.line(f"could not save the name: {getattr(exc, 'message', exc)}", "yellow")
        return False
    shell.renderer.say(f"session renamed: {name}")
    return False


def _counts(diff: str) -> tuple[int, int]:
    lines = [line for line in diff.splitlines() if not line.startswith(("+++", "---"))]
    return sum(line.startswith("+") for line in lines), sum(line.startswith("-") for line in lines)


async def diff_command(shell: Shell, argument: str) -> bool:
    """Every change the session's tools made, grouped by file, in the order they were made."""
    from ketch_interactive.diffview import diff_file_name
    from ketch_interactive.render import diff_text

    changes = shell.renderer.changes
    renderer = shell.renderer
    if not changes:
        note = (
            " in this run (changes made before it was resumed are not shown)"
            if shell.session.resumed
            else ""
        )
        renderer.say(f"no file changes{note}")
        return False
    by_file: dict[str, list[str]] = {}
    for tool, diff in changes:
        by_file.setdefault(diff_file_name(diff) or tool, []).append(diff)
    wanted = argument.strip()
    total_added = total_removed = 0
    for name, diffs in by_file.items():
        if wanted and wanted not in name:
            continue
        added = sum(_counts(d)[0] for d in diffs)
        removed = sum(_counts(d)[1] for d in diffs)
        total_added, total_removed = total_added + added, total_removed + removed
        times = f", {len(diffs)} changes" if len(diffs) > 1 else ""
        renderer.line(f"{name}  +{added} -{removed}{times}", "bold")
        for diff in diffs:
            renderer.line(diff_text(diff))
    renderer.say(
        f"{len(by_file)} file(s) changed this session: +{total_added} -{total_removed} lines"
    )
    return False
