"""``ketch sessions undo|redo|rewind|turns`` and the shell's ``/undo``, ``/redo``, ``/rewind``.

Import-light at module level (``ketch --help`` builds the parser from ``configure``);
the store and the restore machinery load inside the commands.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Kernel, SlashContext
    from ketch_checkpoints.operations import Target

RESTORE_FLAGS = (
    "--force overwrites them too; --keep-changed restores the rest and leaves these as they are"
)


# --- the command line ---------------------------------------------------------------------


def _restore_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--force",
        action="store_true",
        help="also overwrite files changed since ketch's turn (by you or another program)",
    )
    parser.add_argument(
        "--keep-changed",
        action="store_true",
        help="restore the rest and leave files changed since ketch's turn as they are",
    )
    parser.add_argument("--json", action="store_true", help="print what changed as JSON")


def configure_undo(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "id",
        metavar="ID",
        nargs="?",
        help="session id or unique prefix (default: this workspace's latest session with changes to undo)",
    )
    _restore_options(parser)


def configure_rewind(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("id", metavar="ID", help="session id or unique prefix")
    parser.add_argument(
        "turn",
        metavar="TURN",
        type=int,
        help="restore to before this turn (numbered from 1, as `ketch sessions show` lists them)",
    )
    which = parser.add_mutually_exclusive_group()
    which.add_argument(
        "--code", action="store_true", help="only the files (the conversation keeps every turn)"
    )
    which.add_argument(
        "--conversation",
        action="store_true",
        help="only the conversation (the files keep their changes)",
    )
    _restore_options(parser)


def configure_turns(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "id",
        metavar="ID",
        nargs="?",
        help="session id or unique prefix (default: this workspace's latest session)",
    )
    parser.add_argument("--json", action="store_true", help="print a JSON list")


def _store(kernel: Kernel) -> Any:
    from ketch.api import KetchError

    store = kernel.store
    if store is None:
        raise KetchError("no session store is loaded (is the 'store' plugin disabled?)")
    if getattr(store, "blobs", None) is None:
        raise KetchError("the loaded session store keeps no checkpoints")
    return store


def stored_target(kernel: Kernel, store: Any, session_id: str) -> Target:
    from ketch.api import KetchError
    from ketch_checkpoints.operations import Target
    from ketch_checkpoints.settings import CheckpointSettings
    from ketch_context_kit.marks import rewound

    resolve = getattr(store, "resolve_id", None)
    if resolve is not None:
        session_id = resolve(session_id)
    read = getattr(store, "read_session", None) or store.load_session
    record = read(session_id)
    workspace = Path(record.workspace or kernel.workspace)
    if not workspace.is_dir():
        raise KetchError(
            f"session {record.id} belongs to {workspace}, which is not there any more; nothing was changed"
        )
    settings = kernel.settings.of(CheckpointSettings)
    return Target(
        blobs=store.blobs,
        session_id=record.id,
        workspace=workspace,
        transcript=record.transcript,
        rewound=rewound(record.state),
        max_file_size=int(settings.max_file_size),
        store=store,
        record=record,
    )


def _pick(kernel: Kernel, store: Any, wanted: str) -> str:
    """This workspace's latest session that has something to undo (or redo)."""
    from ketch.api import KetchError
    from ketch_checkpoints.timeline import COLLECTION, Timeline

    sessions = store.list_sessions(str(kernel.workspace))
    for summary in sessions:
        line = Timeline.read(store.blobs.records(summary.id, COLLECTION))
        if (wanted == "undo" and line.applied()) or (
            wanted == "redo" and line.redoable() is not None
        ):
            return str(summary.id)
    if not sessions:
        raise KetchError(f"no saved sessions in {kernel.workspace}")
    raise KetchError(
        f"nothing to {wanted} in {kernel.workspace}'s sessions (`ketch sessions turns ID` shows what each turn changed)"
    )


def run_undo(kernel: Kernel, args: argparse.Namespace) -> int:
    return _run(kernel, args, "undo")


def run_redo(kernel: Kernel, args: argparse.Namespace) -> int:
    return _run(kernel, args, "redo")


def run_rewind(kernel: Kernel, args: argparse.Namespace) -> int:
    return _run(kernel, args, "rewind")


def _run(kernel: Kernel, args: argparse.Namespace, action: str) -> int:
    import asyncio

    from ketch_checkpoints import operations

    store = _store(kernel)
    try:
        session_id = args.id or _pick(kernel, store, action)
        target = stored_target(kernel, store, session_id)
        options = {"force": args.force, "keep_changed": args.keep_changed}
        if action == "rewind":
            code, conversation = not args.conversation, not args.code
            result = asyncio.run(
                operations.rewind(
                    target, args.turn, code=code, conversation=conversation, **options
                )
            )
        else:
            result = asyncio.run(getattr(operations, action)(target, **options))
        result = {"session_id": target.session_id, "workspace": str(target.workspace), **result}
        if args.json:
            print(json.dumps(result, indent=2, ensure_ascii=False))
        else:
            for line in describe(result):
                print(line)
        if result.get("nothing") and not args.json:
            print(f"ketch: {result['message']}", file=sys.stderr)
        return 0 if result.get("ok") else 1
    finally:
        store.close()


def run_turns(kernel: Kernel, args: argparse.Namespace) -> int:
    from ketch.api import KetchError
    from ketch_checkpoints.operations import turn_rows

    store = _store(kernel)
    try:
        session_id = args.id or store.latest_session_id(str(kernel.workspace))
        if session_id is None:
            raise KetchError(f"no saved sessions in {kernel.workspace}")
        target = stored_target(kernel, store, session_id)
        rows = turn_rows(target)
        if args.json:
            print(
                json.dumps(
                    {"session_id": target.session_id, "turns": rows}, indent=2, ensure_ascii=False
                )
            )
        else:
            for row in rows:
                print(turn_label(row))
        return 0
    finally:
        store.close()


# --- words ----------------------------------------------------------------------------------


def _first_line(text: str, width: int = 60) -> str:
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"


def turn_label(row: dict[str, Any]) -> str:
    when = time.strftime("%H:%M", time.localtime(row["ts"])) if row.get("ts") else "--:--"
    files = len(row["files_changed"])
    changed = f"{files} file{'s' if files != 1 else ''} changed" if files else "no file changes"
    marks = [
        m
        for m, on in (("undone", row.get("undone") and files), ("rewound", row.get("rewound")))
        if on
    ]
    extra = f" [{', '.join(marks)}]" if marks else ""
    return f"turn {row['n']:<3} {when}  {_first_line(row['prompt'])}  ({changed}){extra}"


def describe(result: dict[str, Any]) -> list[str]:
    """What an undo, redo or rewind did, for a person."""
    if result.get("nothing"):
        return []
    lines: list[str] = []
    action = result["action"]
    if action == "rewind":
        code, conversation = result.get("code"), result.get("conversation")
        lines.append(
            f"rewind of session {result['session_id']} to before turn {result['turn']} ({_first_line(result.get('prompt', ''))!r}):"
        )
        if code is not None:
            lines += ["  files:"] + [
                "    " + line for line in _restore_lines(code, "the turns' changes")
            ]
        if conversation is not None:
            turns = conversation["rewound_turns"]
            lines.append(
                f"  conversation: continues from before turn {result['turn']}; turn{'s' if len(turns) != 1 else ''} {', '.join(map(str, turns))} kept in the transcript, marked rewound"
            )
            if conversation.get("files_kept"):
                lines.append(
                    f"  (the files keep those turns' changes: {', '.join(conversation['files_kept'])})"
                )
        elif code is not None and result.get("ok"):
            lines.append("  conversation: unchanged")
        return lines
    what = "undid" if action == "undo" else "redid"
    turns = [t for t in result.get("turns") or [] if t]
    head = f"{what} turn {', '.join(map(str, turns))}" if turns else what
    if result.get("prompt"):
        head += f" ({_first_line(result['prompt'])!r})"
    lines.append(
        f"{head} in {result['workspace']}:"
        if not result.get("stopped")
        else f"{action} of {head.split(' ', 1)[1] if ' ' in head else 'the turn'} stopped:"
    )
    lines += ["  " + line for line in _restore_lines(result, "the turn's changes")]
    return lines


def _restore_lines(result: dict[str, Any], what: str) -> list[str]:
    lines: list[str] = []
    if result.get("message"):
        return [result["message"]]
    if result.get("stopped"):
        conflicts = result["conflicts"]
        lines.append(
            f"nothing was changed: {len(conflicts)} file{'s' if len(conflicts) != 1 else ''} changed since ketch's turn:"
        )
        lines += [f"  {c['path']}  ({c['reason']})" for c in conflicts]
        lines.append(RESTORE_FLAGS)
        return lines
    for item in result.get("restored") or []:
        lines.append(f"{item.get('change', 'restored'):<20} {item['path']}")
    if not result.get("restored"):
        lines.append(f"no file needed restoring ({what} were undone already)")
    for item in result.get("unchanged") or []:
        lines.append(f"{'already as before':<20} {item['path']}")
    for key, label in (("kept", "left alone"), ("skipped", "not restored"), ("failed", "FAILED")):
        for item in result.get(key) or []:
            lines.append(f"{label:<20} {item['path']}  ({item.get('reason', '')})")
    lines += [f"note: {w}" for w in result.get("warnings") or []]
    return lines


# --- the shell -------------------------------------------------------------------------------


def live_target(ctx: SlashContext) -> Target:
    from ketch.api import KetchError
    from ketch_checkpoints.live import blob_store, live
    from ketch_checkpoints.operations import Target
    from ketch_checkpoints.settings import CheckpointSettings
    from ketch_context_kit.marks import rewound

    session = ctx.session
    blobs, why = blob_store(ctx.kernel)
    if blobs is None:
        raise KetchError(f"no checkpoints: {why}")
    found = live(session)
    return Target(
        blobs=blobs,
        session_id=session.id,
        workspace=session.workspace,
        transcript=session.transcript,
        rewound=rewound(session.state),
        max_file_size=int(ctx.kernel.settings.of(CheckpointSettings).max_file_size),
        trees=found.shared.trees if found is not None else None,
        live=session,
        store=ctx.kernel.store,
    )


def _confirmer(ctx: SlashContext) -> Any:
    if ctx.choose is None:
        return None
    choose = ctx.choose

    from ketch_text_kit.names import shown_name

    async def confirm(outcome: Any) -> str:
        options = [
            "Overwrite it with ketch's checkpoint",
            "Keep it as it is",
            "Cancel (change nothing)",
        ]
        picked = await choose(f"{shown_name(outcome.path)}: {outcome.reason}.", options)
        return {0: "overwrite", 1: "keep"}.get(picked if picked is not None else 2, "cancel")

    return confirm


def _slash_flags(argument: str) -> tuple[list[str], dict[str, bool]]:
    words = argument.split()
    flags = {"force": "--force" in words, "keep_changed": "--keep-changed" in words}
    return [w for w in words if not w.startswith("--")], flags


async def slash_undo(ctx: SlashContext) -> None:
    await _slash(ctx, "undo")


async def slash_redo(ctx: SlashContext) -> None:
    await _slash(ctx, "redo")


async def _slash(ctx: SlashContext, action: str) -> None:
    from ketch_checkpoints import operations

    _, flags = _slash_flags(ctx.argument)
    target = live_target(ctx)
    result = await getattr(operations, action)(target, confirm=_confirmer(ctx), **flags)
    _show(ctx, {"session_id": target.session_id, "workspace": str(target.workspace), **result})


def _show(ctx: SlashContext, result: dict[str, Any]) -> None:
    if result.get("nothing"):
        ctx.print(result["message"])
        return
    for line in describe(result):
        ctx.print(
            line.replace(
                RESTORE_FLAGS,
                "/undo --force overwrites them too; /undo --keep-changed restores the rest",
            )
        )
    if result["action"] == "undo" and result.get("ok"):
        ctx.print("(/redo puts them back)")


PICKER_ROWS = 15
WHAT = [
    ("both", "Restore code and conversation"),
    ("conversation", "Restore the conversation only (the files keep their changes)"),
    ("code", "Restore the code only (the conversation keeps every turn)"),
]


async def slash_rewind(ctx: SlashContext) -> None:
    from ketch_checkpoints import operations

    words, flags = _slash_flags(ctx.argument)
    target = live_target(ctx)
    rows = operations.turn_rows(target)
    if not rows:
        ctx.print("nothing to rewind: this session has no turns yet")
        return
    number = next((int(w) for w in words if w.isdigit()), None)
    what = next((w for w in words if w in ("code", "conversation", "both")), None)
    if number is None:
        if ctx.choose is None:
            for row in rows:
                ctx.print(turn_label(row))
            ctx.print("usage: /rewind N [code|conversation|both]")
            return
        shown = rows[-PICKER_ROWS:][::-1]  # newest first, as many as fit a small terminal
        older = (
            f"; /rewind N reaches the {len(rows) - len(shown)} older ones"
            if len(rows) > len(shown)
            else ""
        )
        picked = await ctx.choose(
            f"Rewind to before which turn? (Esc cancels{older})", [turn_label(r) for r in shown]
        )
        if picked is None:
            ctx.print("rewind cancelled")
            return
        number = shown[picked]["n"]
    if what is None:
        chosen: dict[str, Any] | None = next((r for r in rows if r["n"] == number), None)
        can_code = any(r["files_changed"] and not r["undone"] for r in rows if r["n"] >= number)
        options = [(k, label) for k, label in WHAT if can_code or k == "conversation"]
        if chosen is not None and chosen["rewound"]:
            options = [(k, label) for k, label in options if k == "code"]
        if not options:
            ctx.print(
                f"turn {number} is rewound already and no file changes from it on are left to revert"
            )
            return
        if ctx.choose is None or len(options) == 1:
            what = options[0][0]
        else:
            picked = await ctx.choose(
                f"Rewind to before turn {number}:", [label for _, label in options]
            )
            if picked is None:
                ctx.print("rewind cancelled")
                return
            what = options[picked][0]
    code, conversation = what in ("both", "code"), what in ("both", "conversation")
    result = await operations.rewind(
        target, number, code=code, conversation=conversation, confirm=_confirmer(ctx), **flags
    )
    _show(ctx, {"session_id": target.session_id, "workspace": str(target.workspace), **result})
    if conversation and result.get("conversation") is not None and ctx.prefill is not None:
        ctx.prefill(result.get("prompt", ""))
        ctx.print(
            "(the turn's prompt is back in the input box: edit it and press Enter, or clear it)"
        )
