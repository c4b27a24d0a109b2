"""``ketch store key ...`` against a shared store (``[storage] url``): members and rotation.

The shared store's plugin does the work (its store offers ``members``, ``add_member``,
``remove_member``, ``rotate_key``); this is the command-line side.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from ketch.api import KetchError

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Kernel


def _store(kernel: Kernel) -> Any:
    store = kernel.store
    if store is None or not callable(getattr(store, "members", None)):
        raise KetchError("the configured shared store has no team key to manage", exit_code=2)
    return store


def run(kernel: Kernel, args: argparse.Namespace) -> int:
    action = args.key_action
    store = _store(kernel)
    try:
        if action == "members":
            return _members(store, args)
        if action == "rotate":
            done = store.rotate_key()
            print(
                f"rotated: {done['sessions']:,} sessions and {done['entries']:,} journal entries re-encrypted "
                f"under a new team key, wrapped to {done['members']} member(s), in {done['seconds']:.1f}s"
            )
            return 0
        if action == "status":
            members = store.members()
            print(f"store     {store.path} (team key)")
            print(f"members   {len(members)}")
            you = [m for m in members if m["you"]]
            print(f"you       {you[0]['name'] if you else '(not a member)'}")
            return 0
        raise KetchError(
            f"`ketch store key {action}` is for the local store; a shared store's key is the team's "
            "(`ketch store key members ...`, `ketch store key rotate`)",
            exit_code=2,
        )
    finally:
        store.close()


def _members(store: Any, args: argparse.Namespace) -> int:
    action = getattr(args, "members_action", None) or "list"
    if action == "add":
        fingerprint = store.add_member(args.name, args.public_key)
        print(f"added {args.name} ({fingerprint}): the team key is now wrapped to their public key")
        return 0
    if action == "remove":
        done = store.remove_member(args.who)
        print(
            f"removed {done['removed']}; rotated the team key ({done['sessions']:,} sessions, "
            f"{done['entries']:,} entries re-encrypted, wrapped to {done['members']} member(s))"
        )
        return 0
    members = store.members()
    if getattr(args, "json", False):
        print(json.dumps(members, indent=2))
        return 0
    for m in members:
        print(f"{m['fingerprint']}  {m['name']}{'  (you)' if m['you'] else ''}")
    print(f"{len(members)} member(s)", file=sys.stderr)
    return 0
