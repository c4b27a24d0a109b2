"""``ketch trust`` and ``/trust``: show every item of a workspace, then pin what the
person trusts. Only the person types these: no tool reaches them, and the pins live
where no tool call can write."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ketch_trust_kit import PinStore, TrustItem, TrustStoreError

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Kernel, ProposedCall, SlashContext

REMOVED = (
    "--trust-workspace was removed: ketch now trusts what a workspace holds, item by item, "
    "not the folder. Run `ketch trust` to see each hook, MCP server, rule and command it would "
    "run, and trust them (in a script: `ketch trust --yes`, after reading its list)"
)


class RemovedOption(argparse.Action):
    def __call__(self, parser, namespace, values, option_string=None):  # type: ignore[no-untyped-def]
        from ketch.api import UsageError

        raise UsageError(REMOVED)


def runs_ketch_trust(call: ProposedCall) -> bool:
    """Whether a tool call's command line runs ``ketch ... trust``."""
    from ketch_policy_kit.commands import runs_ketch

    return runs_ketch(call, "trust")


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--trust-workspace",
        nargs=0,
        action=RemovedOption,
        default=argparse.SUPPRESS,
        help=argparse.SUPPRESS,
    )


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", nargs="?", help="the workspace (default: the current directory)")
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--yes", "-y", action="store_true", help="trust every item listed, without asking"
    )
    group.add_argument("--revoke", action="store_true", help="withdraw every pin of the workspace")
    group.add_argument(
        "--list", action="store_true", help="list the workspaces you trusted items of"
    )


def _kernel_for(kernel: Kernel, path: str | None) -> Kernel:
    if not path:
        return kernel
    workspace = Path(path).resolve()
    if workspace == kernel.workspace:
        return kernel
    from ketch.api import Kernel

    if not workspace.is_dir():
        from ketch.api import UsageError

        raise UsageError(f"{workspace} is not a directory")
    return Kernel.boot(
        workspace=workspace,
        environ=kernel.environ,
        cli_disabled=list(getattr(kernel.args, "no_plugin", None) or []),
        args=kernel.args,
    )


def run(kernel: Kernel, args: argparse.Namespace) -> int:
    from ketch_trust.review import lines, summary, workspace_items

    store = PinStore()
    try:
        if args.list:
            found = store.workspaces()
            for path, count in sorted(found.items()):
                print(f"{path}  ({count} pinned item{'s' if count != 1 else ''})")
            if not found:
                print(f"no workspace has trusted items ({store.path})", file=sys.stderr)
            return 0
        target = _kernel_for(kernel, args.path)
        workspace = target.workspace
        if args.revoke:
            count = store.unpin(workspace)
            print(f"{workspace}: {count} pin(s) withdrawn; its items stay off until trusted again")
            return 0
        for notice in target.notices:
            if "until you trust them" not in notice:
                print(f"ketch: {notice}", file=sys.stderr)
        items = workspace_items(target, store)
        pins = store.pins(workspace)
        pending = [i for i in items if i.digest not in pins]
        print(summary(workspace, items, pending))
        for line in lines(items, pins, pending):
            print(line)
        if not pending:
            return 0
        chosen = _chosen(pending, args.yes)
        if chosen is None:
            print(
                f"nothing trusted: run `ketch trust --yes` to trust the {len(pending)} item(s) above "
                "(only after reading them), or run ketch trust in a terminal to choose",
                file=sys.stderr,
            )
            return 1
        added = store.pin(workspace, chosen)
        left = len(pending) - len(chosen)
        print(
            f"trusted {len(chosen)} item(s) ({added} new pin(s), kept in {store.path})"
            + (f"; {left} still off" if left else "")
        )
        return 0
    except (TrustStoreError, OSError) as exc:
        print(f"ketch: {exc}", file=sys.stderr)
        return 1


def _chosen(pending: list[TrustItem], yes: bool) -> list[TrustItem] | None:
    """What to pin: all with --yes; asked at a terminal; None without either."""
    if yes:
        return pending
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        return None
    try:
        answer = input(f"Trust these {len(pending)} item(s)? [y]es / [c]hoose / [N]o: ")
    except EOFError:
        return []
    answer = answer.strip().lower()
    if answer in ("y", "yes"):
        return pending
    if answer not in ("c", "choose"):
        return []
    chosen = []
    for index, item in enumerate(pending, 1):
        try:
            one = input(f"  [{index}] trust {item.label}? [y/N]: ").strip().lower()
        except EOFError:
            break
        if one in ("y", "yes"):
            chosen.append(item)
    return chosen


# --- /trust ---------------------------------------------------------------------------


async def slash(ctx: SlashContext) -> None:
    from ketch_trust.review import lines, summary, workspace_items

    argument = ctx.argument.strip().lower()
    offering = argument == "--offer"  # the shell's first-run offer: quiet when all is trusted
    store = PinStore()
    workspace = ctx.session.workspace
    try:
        if argument in ("revoke", "off", "--revoke"):
            count = store.unpin(workspace)
            ctx.print(
                f"{workspace}: {count} pin(s) withdrawn; its items stay off from the next start"
            )
            return
        items = workspace_items(ctx.kernel, store)
        pins = store.pins(workspace)
    except (TrustStoreError, OSError) as exc:
        ctx.print(f"cannot read the trusted items: {exc}")
        return
    pending = [i for i in items if i.digest not in pins]
    if offering and not pending:
        return
    ctx.print(summary(workspace, items, pending))
    if not pending:
        return
    ctx.print("\n".join(lines(items, pins, pending)))
    chosen = await _slash_choice(ctx, pending, argument in ("yes", "--yes", "all"))
    if not chosen:
        ctx.print(
            "nothing trusted; these stay off (/trust shows them again)"
            if ctx.choose is not None
            else f"nothing trusted: type /trust yes to trust the {len(pending)} item(s) above"
        )
        return
    try:
        store.pin(workspace, chosen)
    except (TrustStoreError, OSError) as exc:
        ctx.print(f"cannot record trust: {exc}")
        return
    _apply_now(ctx, len(chosen), len(pending) - len(chosen))


async def _slash_choice(ctx: SlashContext, pending: list[TrustItem], yes: bool) -> list[TrustItem]:
    if yes:
        return pending
    if ctx.choose is None:
        return []
    pick = await ctx.choose(
        f"Trust these {len(pending)} item(s)?",
        ["Trust all of them", "Choose one by one", "Not now (they stay off)"],
    )
    if pick == 0:
        return pending
    if pick != 1:
        return []
    chosen = []
    for item in pending:
        one = await ctx.choose(f"{item.label}\n  {item.shows}", ["Trust it", "Leave it off"])
        if one is None:
            break
        if one == 0:
            chosen.append(item)
    return chosen


def _apply_now(ctx: SlashContext, count: int, left: int) -> None:
    """The pinned config values apply from now on in this session too."""
    settings = ctx.kernel.reload_settings()
    applied = []
    if settings.profile and settings.profile != ctx.session.profile:
        ctx.session.set_profile(settings.profile)
        applied.append(f"profile {settings.profile}")
    if settings.mode and settings.mode != ctx.session.mode:
        ctx.session.set_mode(settings.mode)
        applied.append(f"mode {settings.mode}")
    now = f" (now: {', '.join(applied)})" if applied else ""
    rest = f"; {left} still off" if left else ""
    ctx.print(
        f"trusted {count} item(s){now}{rest}; MCP servers among them start with the next session"
    )
