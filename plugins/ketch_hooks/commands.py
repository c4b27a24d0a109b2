"""``ketch hooks import [--user | --project] [--dry-run]`` (import-light: the parser
is built for ``ketch --help``)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Kernel


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="hooks_action", metavar="ACTION")
    imp = sub.add_parser(
        "import", help="bring Claude Code hooks (.claude/settings.json) over to ketch's config"
    )
    which = imp.add_mutually_exclusive_group()
    which.add_argument(
        "--project",
        action="store_true",
        help="only this project's .claude/settings.json (and settings.local.json)",
    )
    which.add_argument("--user", action="store_true", help="only your ~/.claude/settings.json")
    imp.add_argument(
        "--dry-run", action="store_true", help="print what would be added; write nothing"
    )


def claude_home(environ: dict[str, str]) -> Path:
    return Path(environ.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude")


def run(kernel: Kernel, args: argparse.Namespace) -> int:
    from ketch.api import UsageError

    if getattr(args, "hooks_action", None) != "import":
        raise UsageError("usage: ketch hooks import [--user | --project] [--dry-run]")
    from ketch.api import user_config_file, workspace_config_file
    from ketch_hooks.importer import convert, merge, read_settings

    workspace = kernel.workspace
    plans: list[tuple[Path, Path, str]] = []  # (source, target, scope)
    if not args.user:
        for name in ("settings.json", "settings.local.json"):
            plans.append(
                (workspace / ".claude" / name, workspace_config_file(workspace), "project")
            )
    if not args.project:
        plans.append((claude_home(kernel.environ) / "settings.json", user_config_file(), "user"))
    found = [(s, t, scope) for s, t, scope in plans if s.is_file()]
    if not found:
        looked = ", ".join(str(s) for s, _, _ in plans)
        print(f"ketch: no Claude Code settings found (looked for {looked})", file=sys.stderr)
        return 1
    conversions = [
        (convert(source, read_settings(source)), target, scope) for source, target, scope in found
    ]  # all read before any write
    total = 0
    for conversion, target, scope in conversions:
        added, text = merge(target, conversion, dry_run=args.dry_run)
        total += len(added)
        verb = "would import" if args.dry_run else "imported"
        already = len(conversion.entries) - len(added)
        print(
            f"{verb} {len(added)} hook(s) from {_short(conversion.source)} into {_short(target)}"
            + (f" ({already} already there)" if already else "")
        )
        if args.dry_run and text:
            print(text.rstrip("\n"))
        for line in conversion.skipped:
            print(f"  not imported: {line}")
        if scope == "project" and added and not args.dry_run:
            print("  a workspace's hooks run once you trust them: `ketch trust` shows each one")
    return 0


def _short(path: Path) -> str:
    home = str(Path.home())
    text = str(path)
    return "~" + text[len(home) :] if home != os.sep and text.startswith(home + os.sep) else text
