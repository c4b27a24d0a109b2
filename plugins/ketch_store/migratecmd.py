"""``ketch store migrate --to URL`` / ``--from URL``: every session from one store to another.

Either end defaults to the configured store; ``local`` names the SQLite file in the
state dir. The other end is opened through the ``store_open_url`` hook (``postgresql://``
by ketch_store_pg, ``sqlite:///PATH`` by this plugin), with its own cipher.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from ketch.api import KetchError

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Kernel


def _open(kernel: Kernel, url: str | None) -> Any:
    from ketch.api import StoreUnavailable, state_dir

    if url is None:
        store = kernel.store
        if store is None:
            raise KetchError("no session store is configured", exit_code=2)
        return store
    if url == "local":
        url = f"sqlite://{state_dir() / 'sessions.db'}"
    cipher = kernel.hooks.first(
        "ketch_field_cipher", settings=kernel.settings
    )  # one per store: each binds its own key
    try:
        store = kernel.hooks.first(
            "store_open_url", url=url, settings=kernel.settings, cipher=cipher
        )
    except StoreUnavailable as exc:
        raise KetchError(f"cannot open {url.split('@')[-1]}: {exc.message}") from None
    if store is None:
        raise KetchError(f"no loaded plugin opens {url.split(':', 1)[0]}:// stores", exit_code=2)
    return store


def run(kernel: Kernel, args: argparse.Namespace) -> int:
    from ketch_store_kit.migrate import migrate

    if not args.to and not args.source:
        raise KetchError("say where to: --to URL, or --from URL (or both)", exit_code=2)
    source = _open(kernel, args.source)
    target = _open(kernel, args.to)
    if source is target:
        raise KetchError("--to and --from name the same store", exit_code=2)

    def say(line: str) -> None:
        print(f"ketch: {line}", file=sys.stderr, flush=True)

    try:
        done = migrate(source, target, say)
    finally:
        target.close()
        source.close()
    for problem in done.failed:
        print(f"FAILED  {problem}")
    print(
        f"migrated {done.sessions:,} sessions ({done.entries:,} journal entries, {done.approvals} approvals), "
        f"{done.skipped:,} already there; every copy verified"
        + (f"; {len(done.failed)} not copied" if done.failed else "")
    )
    return 1 if done.failed else 0
