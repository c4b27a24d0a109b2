"""The ``diagnostics`` tool's work: every error and warning of some files, now."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ketch.api import ToolContext, ToolResult
from ketch_lsp.diagnostics import ERROR, WARNING, counts, ordered, problem

if TYPE_CHECKING:  # pragma: no cover
    from ketch_lsp.client import Server
    from ketch_lsp.runtime import Manager

MAX_FILES = 500  # files one workspace check opens
AT_ONCE = 8  # files asked about side by side


def served_files(found: Manager, workspace: Path) -> list[Path]:
    """The workspace's files (``.gitignore``-aware, no symlinks) a server serves."""
    from ketch_tool_kit.walk import walk

    out: list[Path] = []
    for entry in walk(workspace):
        if entry.is_dir or entry.is_symlink:
            continue
        if found.specs_for(entry.path):
            out.append(entry.path)
            if len(out) >= MAX_FILES:
                break
    return out


def mentioning(
    found: Manager, workspace: Path, word: str, skip: Path, limit: int = 150
) -> list[tuple[Path, str]]:
    """The served files of the workspace whose text names ``word`` (as a word), with
    their text: handed to a server before a cross-file request, so that its answer
    covers every file that can hold a use, whether or not it has indexed them yet (a
    server that just started has not)."""
    import re

    from ketch_lsp.edits import read_text

    if not word:
        return []
    pattern = re.compile(r"(?<!\w)" + re.escape(word) + r"(?!\w)")
    out: list[tuple[Path, str]] = []
    for path in served_files(found, workspace):
        if path == skip:
            continue
        text = read_text(path)
        if text is not None and pattern.search(text):
            out.append((path, text))
            if len(out) >= limit:
                break
    return out


async def check_files(
    found: Manager, session: Any, files: list[Path], ctx: ToolContext
) -> ToolResult:
    from ketch_lsp.edits import read_text
    from ketch_tool_kit.paths import display

    texts: dict[Path, str] = {}
    pairs: list[tuple[Server, Path]] = []
    for path in files:
        text = await asyncio.to_thread(read_text, path)
        if text is None:
            continue
        texts[path] = text
        for spec in found.specs_for(path):
            server = found.server(spec, path)
            if found.launch(server, session):
                pairs.append((server, path))
    if not pairs:
        reasons = sorted({why for why in found.off.values()})
        return ToolResult.error(
            "[lsp] No language server could check "
            + ("these files" if len(files) > 1 else display(files[0], ctx.workspace))
            + (f": {'; '.join(reasons)}" if reasons else "")
            + "."
        )
    settings = found.settings
    timeout = settings.request_timeout * (1 if len(files) == 1 else 3)
    deadline = time.monotonic() + timeout
    limit = asyncio.Semaphore(AT_ONCE)

    async def one(server: Server, path: Path) -> tuple[list[Any], str]:
        from ketch_lsp.client import ServerGone
        from ketch_lsp.work import current, synced

        async with limit:
            try:
                since = server.seq
                doc = await synced(found, server, path, texts[path], deadline)
                return await current(server, path, doc, since, deadline), ""
            except TimeoutError:
                return [], f"{server.spec.name}: no answer in time"
            except ServerGone as exc:
                return [], f"{server.spec.name}: {exc}"

    async def work() -> list[tuple[list[Any], str]]:
        return list(await asyncio.gather(*(one(s, p) for s, p in pairs)))

    try:
        results = await found.thread.run(work(), timeout + 1.0)
    except TimeoutError:
        results = [([], "no answer in time")] * len(pairs)
    problems = []
    server_of = {}
    missing: set[str] = set()
    for (server, path), (items, why) in zip(pairs, results, strict=True):
        if why:
            missing.add(why)
        for diagnostic in items:
            if counts(diagnostic):
                found_problem = problem(path, diagnostic, texts[path])
                problems.append(found_problem)
                server_of[id(found_problem)] = server.spec.name
    problems = ordered(problems)
    errors = sum(1 for p in problems if p.severity == ERROR)
    warnings = sum(1 for p in problems if p.severity == WARNING)
    checked = len({p for _, p in pairs})
    head = (
        f"{errors} error{'s' if errors != 1 else ''}, {warnings} warning{'s' if warnings != 1 else ''}"
        f" in {checked} file{'s' if checked != 1 else ''} checked"
    )
    if len(files) >= MAX_FILES:
        head += f" (the first {MAX_FILES} files the servers serve)"
    lines = [head + (":" if problems else ".")]
    cap = settings.max_results
    for item in problems[:cap]:
        lines.append(f"{item.render(display(item.path, ctx.workspace))} ({server_of[id(item)]})")
    if len(problems) > cap:
        lines.append(f"... and {len(problems) - cap} more")
    if missing:
        lines.append("[lsp] not complete: " + "; ".join(sorted(missing)[:5]))
    return ToolResult.success("\n".join(lines))
