"""``ketch sessions list|show|export|verify|delete|rename``.

Kept import-light at module level (``ketch --help`` imports it to build the parser);
the store and the renderers load inside :func:`run`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Kernel
    from ketch_store_kit.journal import SqlJournal as SqliteStore


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="sessions_action", metavar="ACTION")
    listing = sub.add_parser(
        "list", help="sessions of this workspace, newest first (--all: every workspace)"
    )
    listing.add_argument("--all", action="store_true", help="every workspace")
    listing.add_argument("--json", action="store_true", help="print a JSON list")
    show = sub.add_parser("show", help="a session's transcript and operation history")
    show.add_argument("id", metavar="ID", help="session id (or a unique prefix)")
    show.add_argument("--json", action="store_true", help="print JSON")
    export = sub.add_parser("export", help="write a session as Markdown or JSON")
    export.add_argument("id", metavar="ID")
    export.add_argument("--format", choices=["md", "json"], default="md")
    export.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")
    verify = sub.add_parser(
        "verify", help="check every encrypted field and the journal chain of sessions"
    )
    verify.add_argument(
        "id", metavar="ID", nargs="?", help="one session (default: this workspace's)"
    )
    verify.add_argument("--all", action="store_true", help="every session in the store")
    verify.add_argument("--json", action="store_true", help="print a JSON report")
    delete = sub.add_parser("delete", help="delete a session and its journal")
    delete.add_argument("id", metavar="ID")
    rename = sub.add_parser("rename", help="give a session a name")
    rename.add_argument("id", metavar="ID")
    rename.add_argument("name", metavar="NAME", nargs="+")


def _store(kernel: Kernel) -> SqliteStore:
    from ketch.api import KetchError

    store = kernel.store
    if store is None:
        raise KetchError("no session store is loaded (is the 'store' plugin disabled?)")
    from ketch_store_kit.journal import SqlJournal

    if not isinstance(store, SqlJournal):
        raise KetchError("the loaded session store is not ketch's own; use its plugin's commands")
    return store  # type: ignore[return-value]


def run(kernel: Kernel, args: argparse.Namespace) -> int:
    from ketch.api import StoreUnavailable

    action = getattr(args, "sessions_action", None) or "list"
    try:
        store = _store(kernel)
    except StoreUnavailable as exc:
        if exc.exists or action != "list":
            raise
        # No store yet, and none could be made here: there is nothing to list.
        print("[]" if getattr(args, "json", False) else "no saved sessions")
        print(f"ketch: {exc.message}", file=sys.stderr)
        return 0
    if not store.encrypted:
        print(
            f'ketch: note: storage.encryption = "off": sessions in {store.path} are not encrypted',
            file=sys.stderr,
        )
    try:
        return int(_ACTIONS[action](kernel, store, args))
    finally:
        store.close()


def _list(kernel: Kernel, store: SqliteStore, args: argparse.Namespace) -> int:
    from ketch_store_kit.render import summaries_table

    show_all = getattr(args, "all", False)
    errors: list[str] = []
    rows = store.list_sessions(None if show_all else str(kernel.workspace), errors=errors)
    for error in errors:
        print(f"ketch: {error}", file=sys.stderr)
    if getattr(args, "json", False):
        print(json.dumps([row.model_dump() for row in rows], indent=2, ensure_ascii=False))
    elif not rows:
        where = "" if show_all else f" for {kernel.workspace} (--all shows every workspace)"
        print(f"no saved sessions{where}")
    else:
        print(_shown(summaries_table(rows, show_workspace=show_all)))
    return 1 if errors else 0


def _shown(text: str) -> str:
    """Transcripts hold what the model and tools wrote: on a terminal, escapes are shown."""
    from ketch_text_kit.terminal import for_terminal

    return for_terminal(text) if sys.stdout.isatty() else text


def _show(kernel: Kernel, store: SqliteStore, args: argparse.Namespace) -> int:
    from ketch_store_kit.render import text_view, to_json

    loaded = store.history(args.id)
    if args.json:
        print(json.dumps(to_json(loaded), indent=2, ensure_ascii=False))
    else:
        print(_shown(text_view(loaded)))
    return 0


def _export(kernel: Kernel, store: SqliteStore, args: argparse.Namespace) -> int:
    from ketch_store_kit.render import markdown, to_json

    loaded = store.history(args.id)
    text = (
        markdown(loaded)
        if args.format == "md"
        else json.dumps(to_json(loaded), indent=2, ensure_ascii=False) + "\n"
    )
    if args.output:
        _write_private(args.output, text)
        print(f"exported {loaded.record.id} to {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(_shown(text))
    return 0


def _write_private(path: str, text: str) -> None:
    """The export is plaintext by the user's choice; at least keep it owner-only."""
    from ketch.api import KetchError

    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as exc:
        raise KetchError(f"cannot write {path}: {exc.strerror}") from None


def _delete(kernel: Kernel, store: SqliteStore, args: argparse.Namespace) -> int:
    session_id = store.resolve_id(args.id)
    store.delete_session(session_id)
    print(f"deleted {session_id}")
    return 0


def _rename(kernel: Kernel, store: SqliteStore, args: argparse.Namespace) -> int:
    session_id = store.resolve_id(args.id)
    name = " ".join(args.name)
    store.rename_session(session_id, name)
    print(f"renamed {session_id} to {' '.join(name.split())!r}")
    return 0


def _verify(kernel: Kernel, store: SqliteStore, args: argparse.Namespace) -> int:
    from ketch_store_kit.chain import Report

    errors: list[str] = []
    if args.id:
        ids = [store.resolve_id(args.id)]
    elif args.all:
        ids = store.session_ids()
    else:
        ids = [s.id for s in store.list_sessions(str(kernel.workspace), errors=errors)]
    reports: list[Report] = [store.verify_session(sid) for sid in ids]
    store_problems = store.verify_store() if (args.all or not args.id) else []
    failed = [r for r in reports if not r.ok]
    if args.json:
        data = {
            "sessions": [
                {
                    "id": r.session_id,
                    "ok": r.ok,
                    "entries": r.entries,
                    "fields": r.fields,
                    "problems": r.problems,
                }
                for r in reports
            ],
            "store": store_problems + errors,
            "ok": not failed and not store_problems and not errors,
        }
        print(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        for r in reports:
            if r.ok:
                print(f"ok      {r.session_id}  {r.entries} entries, {r.fields} encrypted fields")
            else:
                print(f"FAILED  {r.session_id}  " + "; ".join(r.problems))
        for problem in store_problems + errors:
            print(f"FAILED  store  {problem}")
        if not reports and not args.id:
            where = (
                "the store" if args.all else f"{kernel.workspace} (--all checks every workspace)"
            )
            print(f"no saved sessions in {where}")
        total = len(failed) + len(store_problems) + len(errors)
        print(
            f"{len(reports) - len(failed)} of {len(reports)} sessions intact"
            + (f"; {total} problem(s)" if total else ""),
            file=sys.stderr,
        )
    return 1 if failed or store_problems or errors else 0


_ACTIONS: dict[str, Any] = {
    "list": _list,
    "show": _show,
    "export": _export,
    "verify": _verify,
    "delete": _delete,
    "rename": _rename,
}
