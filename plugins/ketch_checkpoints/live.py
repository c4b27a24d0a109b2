"""Checkpoints of a live session: one right before each call that can change the
workspace, one right after it, records of both, retention.

Taking one runs in a worker thread (the spinner keeps turning); the call waits for it.
When a checkpoint cannot be taken (no store, the store failing, a disk full, too many
files) the call still runs, and the person is told once, in words that say what it
means: what follows cannot be undone.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ketch.api import Effect, KetchError, StashKey
from ketch_checkpoints.scan import Scanner, TooManyFiles
from ketch_checkpoints.settings import CheckpointSettings
from ketch_checkpoints.timeline import COLLECTION, Timeline, portable_record
from ketch_checkpoints.tree import Trees
from ketch_context_kit.turns import is_prompt
from ketch_text_kit.names import shown_name

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Kernel, ProposedCall, Session, Tool
    from ketch_store_kit.protocols import BlobStore

REVERT = "/undo"
GC_EVERY = 10  # prunes between two garbage collections (and one at session end)
SEED_SESSIONS = 5  # earlier sessions of the workspace looked at for a starting point


def changes_workspace(call: ProposedCall | Tool) -> bool:
    """A call (or a tool) that may change files: mutating, and not only talking to the
    network."""
    return bool(call.mutating) and (
        not call.effects or bool(set(call.effects) & {Effect.WRITE, Effect.EXECUTE})
    )


@dataclass
class Shared:
    """Per kernel and workspace: the scanner (what was seen last) and its lock."""

    scanner: Scanner
    trees: Trees
    lock: threading.Lock = field(default_factory=threading.Lock)
    seeded: bool = False
    warmed: bool = False


SHARED = StashKey[dict[str, Shared]]()
LIVE = StashKey["Live | None"]()
OFF = StashKey[str]()  # why checkpoints are off for this session, until said


def blob_store(kernel: Kernel) -> tuple[BlobStore | None, str]:
    """The store's blobs, or None and why there are none."""
    try:
        store = kernel.store
    except KetchError as exc:
        return None, f"the session store is unavailable ({exc.message})"
    if store is None:
        return None, "no session store is loaded (is the 'store' plugin disabled?)"
    blobs = getattr(store, "blobs", None)
    if blobs is None:
        return None, "the session store keeps no blobs"
    if getattr(store, "encrypted", True) is False:
        # Copies of the workspace's files are never written in plaintext.
        return (
            None,
            'the session store is not encrypted ([storage] encryption = "off"), and file copies are kept only encrypted',
        )
    return blobs, ""


class Live:
    def __init__(self, session: Session, blobs: BlobStore, settings: CheckpointSettings) -> None:
        self.session = session
        self.blobs = blobs
        self.settings = settings
        kernel = session.kernel
        table = kernel.stash.setdefault(SHARED, {})
        key = str(session.workspace)
        if key not in table:
            trees = Trees(blobs)
            scanner = Scanner(
                session.workspace,
                blobs,
                trees,
                max_file_size=int(settings.max_file_size),
                max_files=settings.max_files,
            )
            table[key] = Shared(scanner, trees)
        self.shared = table[key]
        self.open: dict[str, tuple[str, str]] = {}  # call id -> (turn, root before it)
        self.turn_paths: dict[str, None] = {}  # what this run of the loop changed, in order
        self.turn = ""
        self.broken = ""  # why the last checkpoint failed (said once)
        self.too_big = False  # more than max_files: no more checkpoints this session
        self.told_broken = False
        self.prunes = 0

    # --- the session's turns -------------------------------------------------------------

    def prompt(self, message_id: str) -> None:
        """A prompt entered the transcript: it starts a turn (kernel numbering)."""
        self.turn = message_id
        # Only the turn's time for /rewind's list; a store that fails here fails the next
        # checkpoint too, and that one says so.
        with contextlib.suppress(Exception):
            self.blobs.add_record(self.session.id, COLLECTION, {"kind": "turn", "turn": message_id})

    def current_turn(self) -> str:
        if not self.turn:  # resumed without a new prompt yet: the last one
            self.turn = next((m.id for m in reversed(self.session.transcript) if is_prompt(m)), "")
        return self.turn

    # --- taking them --------------------------------------------------------------------------

    def _seed(self) -> None:
        """Start from the latest stored checkpoint of this workspace, if any: then the
        first checkpoint of this process reads only what changed since."""
        shared = self.shared
        if shared.seeded:
            return
        shared.seeded = True
        candidates = [self.session.id]
        store = self.session.kernel.store
        if store is not None:
            candidates += [
                s.id
                for s in store.list_sessions(str(self.session.workspace))[:SEED_SESSIONS]
                if s.id != self.session.id
            ]
        for session_id in candidates:
            latest = next(
                (
                    r
                    for r in reversed(self.blobs.records(session_id, COLLECTION))
                    if r.data.get("kind") in ("pre", "post")
                ),
                None,
            )
            if latest is None:
                continue
            root = latest.data["root"]
            if self.blobs.missing([root]):
                continue
            self.blobs.keep([root])  # it is about to be referred to again
            shared.scanner.seed(root, int(latest.data.get("t0") or latest.ts * 1e9))
            return

    def warm(self) -> None:
        """A call that will change files was proposed: while it waits for its approval,
        read the workspace once in the background, so that the checkpoint right before
        it only has to look at what changed meanwhile (the first one of a process reads
        every file a stored checkpoint does not already know); then collect the blobs
        nothing refers to any more."""
        shared = self.shared
        if shared.warmed or self.too_big:
            return
        shared.warmed = True

        def work() -> None:
            with shared.lock:
                self._seed()
                shared.scanner.scan()
            # Once per process: what deleted sessions and pruned turns left behind.
            self.blobs.collect_garbage()

        threading.Thread(
            target=lambda: self._quietly(work), name="ketch-checkpoint-warm", daemon=True
        ).start()

    @staticmethod
    def _quietly(work: Any) -> None:
        with contextlib.suppress(Exception):  # the checkpoint before the call says what is wrong
            work()

    def _take(
        self, record: dict[str, Any], before: str | None = None
    ) -> tuple[str, list[str], list[str]]:
        """Scan and record (in a worker thread). Returns the root and, with ``before``,
        the paths that differ from it and those of them that are new."""
        shared = self.shared
        with shared.lock:
            self._seed()
            result = shared.scanner.scan()
            diff = shared.trees.diff(before, result.root) if before is not None else {}
        # What the person counts: files and links, not the directories around them.
        files = sorted(
            path
            for path, (a, b) in diff.items()
            if not all(e is None or e.kind in ("d", "r") for e in (a, b))
        )
        data = {**record, "root": result.root, "t0": result.started_ns, "files": result.files}
        if before is not None:
            data["changed"], data["changed_files"] = sorted(diff), files
        self.blobs.add_record(self.session.id, COLLECTION, portable_record(data), [result.root])
        return result.root, files, [path for path in files if diff[path][0] is None]

    async def before(self, call: ProposedCall) -> None:
        if self.too_big:
            return  # said once; walking the whole tree again before every call would not help
        turn = self.current_turn()
        try:
            root, _, _ = await asyncio.to_thread(
                self._take, {"kind": "pre", "turn": turn, "call": call.id, "tool": call.tool}
            )
        except Exception as exc:  # noqa: BLE001 - the call runs anyway; the person is told
            self._failed(f"before {call.tool}", exc)
            return
        self.open[call.id] = (turn, root)

    async def after(self, call: ProposedCall) -> None:
        opened = self.open.pop(call.id, None)
        if opened is None:
            return
        turn, before = opened
        try:
            _, changed, created = await asyncio.to_thread(
                self._take, {"kind": "post", "turn": turn, "call": call.id}, before
            )
        except Exception as exc:  # noqa: BLE001
            self._failed(f"after {call.tool}", exc)
            return
        self._changed(changed)
        if changed:
            self._tell(call, changed, created)
            try:
                await asyncio.to_thread(self._prune)
            except Exception as exc:  # noqa: BLE001 - the store grows; the person is told
                self._failed("pruning", exc, loses=False)

    def _tell(self, call: ProposedCall, changed: list[str], created: list[str]) -> None:
        """Tell other plugins which files this call changed (the hook this plugin owns)."""
        root = self.session.workspace
        self.session.kernel.hooks.call(
            "checkpoints_files_changed",
            session=self.session,
            call=call,
            paths=[root / name for name in changed],
            created=[root / name for name in created],
        )

    def close_open(self) -> None:
        """The turn ended with calls still open (cancelled): record their after-state now."""
        for call_id, (turn, before) in list(self.open.items()):
            del self.open[call_id]
            try:
                _, changed, _ = self._take({"kind": "post", "turn": turn, "call": call_id}, before)
            except Exception as exc:  # noqa: BLE001
                self._failed("after a cancelled call", exc)
                continue
            self._changed(changed)

    def turn_ended(self) -> None:
        self.close_open()
        self.turn_paths = {}

    def _changed(self, changed: list[str]) -> None:
        if not changed:
            return
        self.turn_paths.update(dict.fromkeys(changed))
        from ketch_checkpoints.conversation import ChangesEvent

        shown = sorted(shown_name(path) for path in self.turn_paths)
        self.session.kernel.emit(self.session, ChangesEvent(paths=shown, revert=REVERT))

    # --- failures, said once -----------------------------------------------------------------

    def _failed(self, what: str, exc: BaseException, *, loses: bool = True) -> None:
        """Say once (on the event loop's thread) that checkpoints failed, and what it means."""
        if isinstance(exc, TooManyFiles):
            self.too_big = True
            reason = f"the workspace has {exc} after .gitignore (raise [checkpoints] max_files to include it)"
        elif isinstance(exc, KetchError):
            reason = exc.message
        else:
            reason = f"{type(exc).__name__}: {exc}"
        self.broken = reason
        if self.told_broken:
            return
        self.told_broken = True
        from ketch.api import NoticeEvent

        if loses:
            message = f"no checkpoint {what}: {reason}. What this step changes cannot be undone with /undo or /rewind."
        else:
            message = f"checkpoints: {what} failed: {reason}"
        self.session.kernel.emit(self.session, NoticeEvent(level="warning", message=message))

    # --- retention -------------------------------------------------------------------------------

    def _prune(self) -> None:
        """Keep the last ``keep`` steps: drop whole turns, oldest first, never the
        current one; collect unreferenced blobs now and then."""
        records = self.blobs.records(self.session.id, COLLECTION)
        line = Timeline.read(records)
        steps = [w for w in line.windows]
        if len(steps) <= self.settings.keep:
            return
        current = self.current_turn()
        order = list(dict.fromkeys(w.turn for w in steps))
        dropped: set[str] = set()
        left = len(steps)
        for turn in order:
            if left <= self.settings.keep or turn == current:
                break
            dropped.add(turn)
            left -= sum(1 for w in steps if w.turn == turn)
        seqs = [w.pre_seq for w in steps if w.turn in dropped] + [
            w.post_seq for w in steps if w.turn in dropped and w.post_seq
        ]
        seqs += [a.seq for a in line.actions if a.turns and set(a.turns) <= dropped]
        if not seqs:
            return
        self.blobs.drop_records(self.session.id, COLLECTION, [s for s in seqs if s is not None])
        self.prunes += 1
        if self.prunes % GC_EVERY == 1:
            self.blobs.collect_garbage()

    def end(self) -> None:
        if self.prunes:
            with contextlib.suppress(Exception):  # the next session collects what is left
                self.blobs.collect_garbage()


def live(session: Session) -> Live | None:
    """The session's checkpointer; None when checkpoints are off (``off`` says why)."""
    if LIVE in session.stash:
        return session.stash[LIVE]
    settings = session.kernel.settings.of(CheckpointSettings)
    found: Live | None = None
    if settings.enabled:
        blobs, why = blob_store(session.kernel)
        if blobs is not None:
            found = Live(session, blobs, settings)
        else:
            session.stash[OFF] = why
    session.stash[LIVE] = found
    from ketch_checkpoints import PENDING_TURN

    turn = session.stash.pop(PENDING_TURN, None)
    if turn and found is not None:
        found.prompt(turn)
    return found


def say_off(session: Session) -> None:
    """A call that changes files is about to run without a checkpoint: say why, once."""
    why = session.stash.get(OFF)
    if not why:
        return
    session.stash[OFF] = ""
    from ketch.api import NoticeEvent

    message = f"checkpoints are off: {why}; /undo and /rewind cannot revert this session's changes"
    session.kernel.emit(session, NoticeEvent(level="warning", message=message))
