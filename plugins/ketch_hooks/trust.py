"""The workspace's hooks as trust items: each ``[[hooks.EVENT]]`` entry of its
``.ketch/config.toml`` is one (its event, matcher, command line and the workspace files
that command runs), and so is each hook of Claude Code's ``.claude/settings*.json``
(shown, not run: ``ketch hooks import`` brings them over). A workspace hook runs only
while its item is pinned; the user's own hooks always run."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from ketch_hooks.settings import HookCommand

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Kernel, Session
    from ketch_trust_kit import TrustItem

SOURCE = ".ketch/config.toml"
CLAUDE_FILES = (".claude/settings.json", ".claude/settings.local.json")


def _item(kernel: Kernel, event: str, index: int, table: Any) -> TrustItem:
    from ketch_trust_kit import make_item

    entry = table if isinstance(table, dict) else {"command": table}
    command = str(entry.get("command", ""))
    args = entry.get("args")
    argv = [command, *[str(a) for a in args]] if isinstance(args, list) else None
    matcher = entry.get("matcher", "*")
    line = " ".join(argv) if argv else command
    return make_item(
        "hook",
        f"{event} #{index + 1}",
        SOURCE,
        {"event": event, "matcher": matcher, "command": command, "args": args},
        f"on {event} (matcher {matcher}): {line}",
        workspace=kernel.workspace,
        command=argv if argv else command,
        setting=("hooks", event, index),
    )


def setting_items(kernel: Kernel, value: Any) -> list[TrustItem]:
    items: list[TrustItem] = []
    if not isinstance(value, dict):
        return items
    for event, entries in value.items():
        for index, table in enumerate(entries if isinstance(entries, list) else [entries]):
            items.append(_item(kernel, str(event), index, table))
    return items


def claude_items(kernel: Kernel) -> list[TrustItem]:
    from ketch_trust_kit import make_item

    items = []
    for name in CLAUDE_FILES:
        path = kernel.workspace / name
        try:
            data = json.loads(path.read_text(encoding="utf-8-sig"))
        except (OSError, ValueError):
            continue
        hooks = data.get("hooks") if isinstance(data, dict) else None
        if not isinstance(hooks, dict):
            continue
        for event, groups in hooks.items():
            for g, group in enumerate(groups if isinstance(groups, list) else []):
                handlers = group.get("hooks") if isinstance(group, dict) else None
                for h, handler in enumerate(handlers if isinstance(handlers, list) else []):
                    if not isinstance(handler, dict):
                        continue
                    command = str(handler.get("command") or handler.get("url") or "")
                    items.append(
                        make_item(
                            "Claude Code hook",
                            f"{event} #{g + 1}.{h + 1}",
                            name,
                            {"event": event, "matcher": group.get("matcher"), "handler": handler},
                            f"on {event} (matcher {group.get('matcher') or '*'}): {command}",
                            workspace=kernel.workspace,
                            command=command,
                            note="Claude Code runs it; ketch runs it only after `ketch hooks import`",
                        )
                    )
    return items


def allowed(session: Session, event: str, hook: HookCommand) -> bool:
    """Whether ``hook`` may run: the user's own always; the workspace's while pinned
    (checked now, so a script rewritten since start-up is held back)."""
    from ketch_trust_kit import check, workspace_config

    kernel = session.kernel
    entries = (workspace_config(kernel).get("hooks") or {}).get(event)
    for index, table in enumerate(entries if isinstance(entries, list) else []):
        try:
            if HookCommand.model_validate(table) != hook:
                continue
        except ValidationError:
            continue
        return check(kernel, _item(kernel, event, index, table), session=session)
    return True
