"""Saying that an item is held back: once per kernel, in one line, naming the item and
``ketch trust``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ketch.api import StashKey
from ketch_trust_kit.items import TrustItem
from ketch_trust_kit.scope import TrustScope
from ketch_trust_kit.store import PinStore

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Kernel, Session

SAID = StashKey[set[str]]()
SUMMARY = StashKey[tuple[int, list[str]]]()  # the start-up summary line: its index, its items
# How the start-up summary of items never trusted begins (a frontend that shows the
# items itself, as the shell's trust offer does, may hide it).
SUMMARY_PREFIX = "not trusted yet, so off until you trust them (`ketch trust` shows each): "


def message(item: TrustItem, changed: bool, held: str = "not run", hint: str = "") -> str:
    why = "changed since you trusted it" if changed else "not trusted yet"
    return (
        f"{item.label}: {why}, so it is {held}: `{_short(item.shows)}`; "
        f"review and trust it with {hint or '`ketch trust` (or /trust)'}"
    )


def _short(text: str, limit: int = 120) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def say_held(
    kernel: Kernel,
    item: TrustItem,
    *,
    changed: bool,
    held: str = "not run",
    session: Session | None = None,
    hint: str = "",
) -> None:
    """Say once per kernel that ``item`` is held back. A changed item (or one met during
    a session, or one pinned elsewhere than the workspace: ``hint`` says how to trust
    it) gets a line of its own, naming it and what changed; a workspace's items never
    trusted that are met at start-up share one summary line (a fresh checkout can hold
    dozens)."""
    said = kernel.stash.setdefault(SAID, set())
    if item.digest in said:
        return
    said.add(item.digest)
    if session is not None:
        from ketch.api import NoticeEvent

        kernel.emit(
            session, NoticeEvent(level="warning", message=message(item, changed, held, hint))
        )
    elif changed or hint:
        kernel.notices.append(message(item, changed, held, hint))
    else:
        index, labels = kernel.stash.get(SUMMARY, (-1, []))
        labels.append(item.label)
        text = SUMMARY_PREFIX + "; ".join(labels)
        if 0 <= index < len(kernel.notices) and kernel.notices[index].startswith(SUMMARY_PREFIX):
            kernel.notices[index] = text
        else:
            kernel.notices.append(text)
            index = len(kernel.notices) - 1
        kernel.stash[SUMMARY] = (index, labels)


def check(
    kernel: Kernel,
    item: TrustItem,
    *,
    session: Session | None = None,
    held: str = "not run",
    store: PinStore | None = None,
    scope: TrustScope | None = None,
) -> bool:
    """Whether ``item`` is pinned for the kernel's workspace (or, with ``scope``, where
    that scope pins its items: an installed Claude Code plugin's own pins). When it is
    not, say so once per kernel (:func:`say_held`: a notice on ``session`` if given,
    else among the kernel's start-up notices) and return False: the caller then leaves
    it out."""
    where: Path = kernel.workspace
    hint = ""
    if scope is not None:
        store, where, hint = scope.store(), scope.root, scope.hint
    store = store or PinStore()
    if store.is_pinned(where, item):
        return True
    say_held(
        kernel,
        item,
        changed=store.changed(where, item),
        held=held,
        session=session,
        hint=hint,
    )
    return False


def workspace_config(kernel: Any) -> dict[str, Any]:
    """The workspace's ``.ketch/config.toml`` as written (no key held back): owners
    find their workspace items in it. Never ``kernel.settings`` (items are needed while
    settings load)."""
    for layer in getattr(kernel, "layers", ()):
        if layer.name == "workspace" and not layer.error and isinstance(layer.data, dict):
            return layer.data
    return {}


def relative_source(path: Path, workspace: Path) -> str:
    try:
        return path.relative_to(workspace).as_posix()
    except ValueError:
        return str(path)
