"""``ketch store key status|export|import|rotate|passphrase``: the session store's data key.

The key itself is the encryption plugin's (its ``manager``: where the key lives, how it
is staged and promoted, recovery codes); this module is the store's side: what the key
opens, the confirmation before a recovery code is shown, and the rotation of every
encrypted field. Never prints a key except as the recovery code the user asked for.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ketch.api import KetchError

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Kernel
    from ketch_store.store import SqliteStore

CONFIRM_WORD = "export"


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="store_area", metavar="AREA", required=True)
    key = sub.add_parser("key", help="the data key sessions are encrypted with")
    actions = key.add_subparsers(dest="key_action", metavar="ACTION", required=True)
    actions.add_parser(
        "status",
        help="where the key is, which provider keeps it, when it was made (never asks for it)",
    )
    export = actions.add_parser(
        "export", help="print a recovery code for the key (it decrypts every saved session)"
    )
    export.add_argument(
        "--yes",
        action="store_true",
        help="confirm without a terminal prompt (you understand what the code can do)",
    )
    export.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="write the code to FILE (owner-only) instead of stdout",
    )
    imp = actions.add_parser(
        "import", help="restore the key from a recovery code (FILE, or stdin, or typed)"
    )
    imp.add_argument(
        "file", metavar="FILE", nargs="?", help="a file holding the code; '-' reads stdin"
    )
    actions.add_parser(
        "rotate", help="re-encrypt every saved field under a new key, then retire the old one"
    )
    passphrase = actions.add_parser(
        "passphrase",
        help="change the passphrase, or move the key between the OS keyring and a passphrase",
    )
    passphrase.add_argument(
        "--to", choices=["keyring", "passphrase"], help="move the key to this provider"
    )
    actions.add_parser(
        "identity", help="this machine's team identity: the public key a team member adds"
    )
    members = actions.add_parser(
        "members", help="who holds the team key of a shared store ([storage] url)"
    )
    member_actions = members.add_subparsers(dest="members_action", metavar="ACTION")
    member_actions.add_parser("list", help="the members, their key fingerprints, which is you")
    add = member_actions.add_parser("add", help="wrap the team key to a new member's public key")
    add.add_argument("name", metavar="NAME")
    add.add_argument(
        "public_key", metavar="PUBLIC_KEY", help="ketch-x25519-1:... (`ketch store key identity`)"
    )
    remove = member_actions.add_parser(
        "remove", help="remove a member, then rotate the team key so they read nothing new"
    )
    remove.add_argument("who", metavar="NAME|FINGERPRINT")
    migrate = sub.add_parser(
        "migrate", help="copy every session to another store (--to URL) or from one (--from URL)"
    )
    migrate.add_argument("--to", metavar="URL", help="postgresql://..., sqlite:///PATH, or 'local'")
    migrate.add_argument("--from", dest="source", metavar="URL", help="the store to copy from")


def run(kernel: Kernel, args: argparse.Namespace) -> int:
    if args.store_area == "migrate":
        from ketch_store.migratecmd import run as migrate

        return migrate(kernel, args)
    action = args.key_action
    cipher = _cipher(kernel)
    manager = cipher.manager
    manager.stay_in_session_keyring()
    if action == "identity":
        team = cipher.team
        public = team.public_key(create=True)
        print(public)
        print(
            f"fingerprint {team.fingerprint(public)}: give the line above to a member of the team store",
            file=sys.stderr,
        )
        return 0
    if _shared(kernel):
        from ketch_store.teamcmd import run as team_run

        return team_run(kernel, args)
    if action == "members":
        raise KetchError(
            "team members belong to a shared store: set [storage] url (or KETCH_STORE_URL) to its postgresql:// URL",
            exit_code=2,
        )
    if action == "status":
        return _status(kernel, manager)
    if action == "import":
        return _import(kernel, cipher, args)
    store = _open(cipher)
    try:
        return int(
            _rotate(store, manager, args, kernel)
            if action == "rotate"
            else {"export": _export, "passphrase": _passphrase}[action](store, manager, args)
        )
    finally:
        store.close()


def _shared(kernel: Kernel) -> bool:
    from ketch_store_kit.journal import store_url

    url = store_url(kernel.settings)
    return url is not None and not url.startswith("sqlite:")


def _database() -> Path:
    from ketch.api import state_dir

    return state_dir() / "sessions.db"


def _cipher(kernel: Kernel) -> Any:
    if kernel.settings.section("storage").get("encryption", "on") == "off":
        raise KetchError(
            'storage.encryption is "off": sessions are not encrypted, so there is no key to manage',
            exit_code=2,
        )
    cipher = kernel.hooks.first("ketch_field_cipher", settings=kernel.settings)
    if cipher is None or getattr(cipher, "manager", None) is None:
        raise KetchError(
            "no encryption plugin with key management is loaded (is the 'crypto' plugin disabled?)",
            exit_code=2,
        )
    return cipher


def _open(cipher: Any) -> SqliteStore:
    from ketch_store.store import SqliteStore

    if not _database().exists():
        raise KetchError(
            f"there is no session store yet ({_database()}); it is made by the first saved session",
            exit_code=1,
        )
    return SqliteStore.open(_database(), cipher)


def _meta(path: Path) -> dict[str, str]:
    """The store's plain meta values, read-only, without any key."""
    import sqlite3

    if not path.exists():
        return {}
    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
            rows = conn.execute(
                "SELECT key, value FROM meta WHERE key IN ('created', 'rotated', 'rotating', 'key_provider', 'encryption')"
            ).fetchall()
    except sqlite3.Error:
        return {}
    return {
        key: (bytes(value).decode("utf-8", "replace") if not isinstance(value, str) else value)
        for key, value in rows
    }


def _when(value: Any) -> str:
    from ketch_store_kit.render import when

    try:
        return when(float(value))
    except (TypeError, ValueError):
        return "-"


def _status(kernel: Kernel, manager: Any) -> int:
    meta = _meta(_database())
    manager.bind(_database(), meta.get("key_provider"))
    info = manager.status()
    rows = [
        ("provider", f'{info["provider"]} (storage.key = "{info["setting"]}")'),
        ("where", str(info["where"])),
        ("database", f"{_database()}" + ("" if meta else " (not made yet)")),
    ]
    if meta:
        rows.append(("made", _when(meta.get("created"))))
        rows.append(("rotated", _when(meta.get("rotated")) if meta.get("rotated") else "never"))
    if "created" in info:
        rows.append(("key file made", _when(info["created"])))
    if "kdf" in info:
        rows.append(("derivation", str(info["kdf"])))
    if "cache" in info:
        rows.append(("cache", str(info["cache"])))
    if meta.get("rotating") == "1":
        rows.append(
            (
                "note",
                "a key rotation was interrupted; the next start (or `ketch store key rotate`) finishes it",
            )
        )
    width = max(len(name) for name, _ in rows) + 2
    for name, value in rows:
        print(f"{name:<{width}}{value}")
    if "problem" in info:
        print(f"ketch: {info['problem']}", file=sys.stderr)
        return 1
    return 0


def _export(store: SqliteStore, manager: Any, args: argparse.Namespace) -> int:
    warning = (
        "This recovery code decrypts every session ketch has saved: anyone who has it and a copy of "
        f"{store.path} can read them all. Keep it offline (paper, a password manager); ketch will not show it again unasked."
    )
    if not args.yes:
        if not (sys.stdin.isatty() and sys.stderr.isatty()):
            raise KetchError(
                "exporting the key needs a confirmation: run it on a terminal, or add --yes if you understand that the code decrypts every session",
                exit_code=2,
            )
        print(warning, file=sys.stderr)
        try:
            answer = input(f"Type '{CONFIRM_WORD}' to show the recovery code: ")
        except (EOFError, KeyboardInterrupt):
            answer = ""
        if answer.strip().lower() != CONFIRM_WORD:
            print("ketch: not exported", file=sys.stderr)
            return 1
    else:
        print(f"warning: {warning}", file=sys.stderr)
    code = manager.recovery_code(store.cipher.data_key())  # type: ignore[attr-defined]
    if args.output:
        fd = os.open(args.output, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as handle:
            handle.write(code + "\n")
        print(f"wrote the recovery code to {args.output} (owner-only)", file=sys.stderr)
    else:
        print(code)
    return 0


def _read_code(args: argparse.Namespace) -> str:
    if args.file and args.file != "-":
        try:
            return Path(args.file).read_text(encoding="utf-8")
        except OSError as exc:
            raise KetchError(
                f"cannot read {args.file}: {exc.strerror or exc}", exit_code=2
            ) from None
    if args.file is None and sys.stdin.isatty():
        import getpass

        try:
            return getpass.getpass("Recovery code (input hidden): ")
        except (EOFError, KeyboardInterrupt):
            raise KetchError("no recovery code given; nothing was imported") from None
    return sys.stdin.read()


def _import(kernel: Kernel, cipher: Any, args: argparse.Namespace) -> int:
    import sqlite3

    from ketch.api import StoreUnavailable
    from ketch_store.store import SqliteStore
    from ketch_store.store import _meta as meta_of
    from ketch_store_kit.codec import Fields
    from ketch_store_kit.journal import opens_keycheck

    manager = cipher.manager
    key = manager.key_from_code(_read_code(args))
    path = _database()
    if path.exists() and path.stat().st_size:
        try:
            store = SqliteStore.open(path, cipher)
        except StoreUnavailable:
            store = (
                None  # recovery-locked, a wrong or lost passphrase, another key: what import is for
            )
        if store is not None:
            try:
                same = store.cipher.data_key() == key  # type: ignore[attr-defined]
            finally:
                store.close()
            if same:
                print("the recovery code is the key the store already opens with; nothing to do")
                return 0
            raise KetchError(
                "the store already opens with its current key, and the recovery code is another key; nothing was imported"
            )
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
            opens = opens_keycheck(Fields(manager.cipher_for(key)), meta_of(conn))
        if not opens:
            raise KetchError(
                f"the recovery code does not open {path} (it is another store's key); nothing was imported"
            )
    provider = manager.provider or manager.choose(True)
    passphrase = None
    if provider.name == "passphrase":
        passphrase = manager.new_passphrase(
            "Choose the passphrase the imported key will be kept under.", env_fallback=True
        )
    where = manager.install(key, passphrase)
    print(f"imported the key; it is kept by the {where} provider")
    return 0


def _rotate(store: SqliteStore, manager: Any, args: argparse.Namespace, kernel: Kernel) -> int:
    from ketch_store.rotate import rotate

    def say(line: str) -> None:
        print(f"ketch: {line}", file=sys.stderr, flush=True)

    def phase(name: str) -> None:  # store_rotation_phase: tests stop the process at one
        kernel.hooks.call("store_rotation_phase", phase=name)

    done = rotate(store, say, phase)
    print(
        f"rotated: {done['sessions']:,} sessions, {done['entries']:,} journal entries and {done['approvals']:,} approvals "
        f"re-encrypted under key {done['key_id']} in {done['seconds']:.1f}s; the old key is retired"
    )
    return 0


def _passphrase(store: SqliteStore, manager: Any, args: argparse.Namespace) -> int:
    key = store.cipher.data_key()  # type: ignore[attr-defined]
    current = manager.current().name
    target = args.to
    if target and target != current:
        passphrase = None
        if target == "passphrase":
            passphrase = manager.new_passphrase(
                "Choose a passphrase to keep the session key under (instead of the OS keyring)."
            )
        manager.move(key, target, passphrase)
        _record_provider(store, target)
        print(
            f"moved the session key to the {target} provider"
            + (f" ({manager.passphrase.path})" if target == "passphrase" else "")
        )
        if store_setting_conflicts(manager, target):
            print(
                f'note: your config says storage.key = "{manager.settings.provider}"; set it to "{target}" or "auto"',
                file=sys.stderr,
            )
        return 0
    if current != "passphrase":
        raise KetchError(
            "the session key is in the OS keyring; `ketch store key passphrase --to passphrase` moves it under a passphrase",
            exit_code=2,
        )
    manager.change_passphrase(
        key, manager.new_passphrase("Choose the new passphrase for ketch's saved sessions.")
    )
    print(
        "changed the passphrase (the key itself is unchanged: `ketch store key rotate` replaces it)"
    )
    return 0


def store_setting_conflicts(manager: Any, target: str) -> bool:
    return manager.settings.provider not in ("auto", target)


def _record_provider(store: SqliteStore, name: str) -> None:
    with store.transaction() as conn:
        conn.execute(
            "INSERT OR REPLACE INTO meta (key, value) VALUES ('key_provider', ?)", (name.encode(),)
        )
