"""The plugins that run in this kernel's workspace, and what they hand the readers.

A plugin runs when it is installed and enabled — at user scope (``ketch plugin
enable``), or by the workspace's ``[claude_plugins] enabled`` once trusted — and the
workspace does not disable it. Worked out once per kernel (a plugin installed while a
session runs is used from the next one). Each hook and server is checked against the
plugin's pins right before it runs: a changed one is held back, with one line saying
so and how to trust it again (``ketch plugin trust``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ketch.api import StashKey
from ketch_claude_plugins.items import Bundle

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Kernel, Session
    from ketch_claude_plugins.registry import Installed
    from ketch_prompt_kit.markdown_files import Folder

ACTIVE = StashKey[list[Bundle]]()


def bundle_of(record: Installed) -> Bundle:
    """An installed plugin with its layout (a clear error when it cannot be read)."""
    from ketch_claude_plugins.bundle import read_layout

    layout = read_layout(record.root, record.entry, record.name)
    return Bundle(record.id, record.name, record.root, record.data, record.pins, layout)


def active(kernel: Kernel) -> list[Bundle]:
    found = kernel.stash.get(ACTIVE)
    if found is None:
        found = _active(kernel)
        kernel.stash[ACTIVE] = found
    return found


def _active(kernel: Kernel) -> list[Bundle]:
    from ketch.api import KetchError
    from ketch_claude_plugins import registry
    from ketch_claude_plugins.workspace import choice

    try:
        records = registry.installed()
        kernel.notices.extend(registry.problems())
    except KetchError as exc:
        kernel.notices.append(exc.message)
        return []
    chosen = choice(kernel)
    for plugin_id in chosen.enabled:
        if plugin_id not in records:
            kernel.notices.append(
                f"Claude Code plugin {plugin_id} is enabled in the config but not installed "
                f"(`ketch plugin install {plugin_id}` after adding its marketplace)"
            )
    found = []
    for record in records.values():
        on = record.enabled or record.id in chosen.enabled
        if not on or record.id in chosen.disabled:
            continue
        try:
            found.append(bundle_of(record))
        except KetchError as exc:
            kernel.notices.append(f"Claude Code plugin {record.id} not loaded: {exc.message}")
    return found


def folders(kernel: Kernel, kind: str) -> list[Folder]:
    return [f for bundle in active(kernel) for f in bundle.folders(kind)]


def hooks_now(session: Session, event: str) -> list[dict[str, Any]]:
    """The plugins' hooks of ``event`` that may run now (pinned, as their files are)."""
    from ketch_trust_kit import check

    kernel = session.kernel
    tables = []
    for bundle in active(kernel):
        entries = [e for e in bundle.hooks(event=event) if e.table is not None]
        for entry in entries:
            if entry.item is not None and check(
                kernel, entry.item, session=session, scope=bundle.scope
            ):
                tables.append(entry.table)
    return [t for t in tables if t is not None]


def servers_now(kernel: Kernel) -> dict[str, dict[str, Any]]:
    """The plugins' MCP servers that may start now (pinned, as their files are)."""
    from ketch_trust_kit import check

    found: dict[str, dict[str, Any]] = {}
    for bundle in active(kernel):
        for entry in bundle.servers():
            if entry.item is None:
                continue
            if not check(kernel, entry.item, held="not started", scope=bundle.scope):
                continue
            table, problems = bundle.server_table(entry, dict(kernel.environ))
            kernel.notices.extend(problems)
            if table is not None:
                found[entry.name] = table
    return found
