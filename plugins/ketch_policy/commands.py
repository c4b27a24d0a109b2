"""Slash commands (/mode, /profile, /permissions) and CLI commands (``ketch permissions
list|revoke``). Only the user types these: no tool can reach them, so none of them is
a way for the model to raise its authority."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Kernel, SlashContext

MODES = ("plan", "build")
PROFILES = ("manual", "assisted", "full-access")


def slash_mode(ctx: SlashContext) -> None:
    session, wanted = ctx.session, ctx.argument.strip()
    if not wanted:
        ctx.print(
            f"mode: {session.mode} (profile {session.profile}); switch with /mode plan or /mode build"
        )
        return
    if wanted not in MODES:
        ctx.print(f"unknown mode {wanted!r}: use /mode plan (read-only tools only) or /mode build")
        return
    session.set_mode(wanted)  # type: ignore[arg-type]
    note = " (only read-only tools are offered; changes are refused)" if wanted == "plan" else ""
    ctx.print(f"mode: {wanted}{note}")


def slash_profile(ctx: SlashContext) -> None:
    session, wanted = ctx.session, ctx.argument.strip()
    if not wanted:
        ctx.print(f"profile: {session.profile}; switch with /profile manual|assisted|full-access")
        return
    if wanted not in PROFILES:
        ctx.print(f"unknown profile {wanted!r}: use manual, assisted or full-access")
        return
    session.set_profile(wanted)  # type: ignore[arg-type]
    if wanted == "full-access":
        ctx.print(
            "profile: full-access (everything runs without asking except deny rules and the hard guards; not kept when the session is resumed)"
        )
    else:
        ctx.print(f"profile: {wanted}")


def _rules(kernel: Kernel) -> dict[str, list[str]]:
    perms = kernel.settings.permissions
    run = (perms.model_extra or {}).get("run") or {}
    extra = {
        k: [str(v) for v in run.get(k, [])]
        if isinstance(run, dict) and isinstance(run.get(k), list)
        else []
        for k in ("allow", "ask", "deny")
    }
    return {
        "allow": list(perms.allow) + extra["allow"],
        "ask": list(perms.ask) + extra["ask"],
        "deny": list(perms.deny) + extra["deny"],
    }


def slash_permissions(ctx: SlashContext) -> None:
    from ketch_policy.approvals import StoreUnavailable, describe, revoke

    words = ctx.argument.split(maxsplit=1)
    workspace = str(ctx.session.workspace)
    if not words or words[0] in ("list", "ls"):
        for line in describe(ctx.kernel, workspace, ctx.session, _rules(ctx.kernel)):
            ctx.print(line)
        return
    if words[0] in ("revoke", "rm", "remove") and len(words) == 2:
        try:
            _, message = revoke(ctx.kernel, workspace, words[1].strip(), ctx.session)
        except StoreUnavailable as exc:
            message = f"cannot revoke: {exc}"
        ctx.print(message)
        return
    ctx.print("usage: /permissions [list] | /permissions revoke N|SCOPE")


# --- CLI --------------------------------------------------------------------------------


def configure_permissions(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="permissions_command", metavar="ACTION", required=True)
    sub.add_parser(
        "list", help="config rules and the always-allow approvals saved for this workspace"
    )
    revoke = sub.add_parser(
        "revoke", help="revoke a saved approval (its number in `list`, or the scope)"
    )
    revoke.add_argument("selector", metavar="N|SCOPE")


def run_permissions(kernel: Kernel, args: argparse.Namespace) -> int:
    from ketch_policy.approvals import StoreUnavailable, describe, revoke

    workspace = str(kernel.workspace)
    if args.permissions_command == "list":
        for notice in kernel.loaded_settings.notices:
            print(f"ketch: {notice}", file=sys.stderr)
        for line in describe(kernel, workspace, None, _rules(kernel)):
            print(line)
        return 0
    try:
        revoked, message = revoke(kernel, workspace, args.selector)
    except StoreUnavailable as exc:
        print(f"ketch: cannot revoke: {exc}", file=sys.stderr)
        return 1
    print(message, file=sys.stdout if revoked else sys.stderr)
    return 0 if revoked else 1
