"""The ``ketch`` command: parse arguments, build the kernel, hand over.

``ketch --version`` answers before anything is imported (not even pluggy). Everything
else loads plugins (their modules only: they are light), then builds the parser from
the kernel's options plus the commands and options plugins register.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import argparse

    from ketch.commands import Command
    from ketch.kernel import Kernel

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] in (["--version"], ["-V"]):
        from ketch import __version__

        print(f"ketch {__version__}")
        return EXIT_OK
    from ketch.errors import KetchError

    try:
        return _main(argv)
    except _NoWorkingDirectory:
        _print_error(
            "the current directory no longer exists (was it deleted?); cd into an existing directory and run ketch again"
        )
        return EXIT_FAILED
    except KetchError as exc:
        _print_error(exc.message)
        return exc.exit_code
    except KeyboardInterrupt:
        print("ketch: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_FAILED


class _NoWorkingDirectory(Exception):
    pass


def _print_error(message: str) -> None:
    lines = message.splitlines() or [""]
    print(f"ketch: {lines[0]}", file=sys.stderr)
    for line in lines[1:]:
        print(line, file=sys.stderr)


def _preparse(argv: list[str]) -> list[str]:
    """Read --no-plugin before anything loads, so a blocked plugin is never imported."""
    disabled: list[str] = []
    for index, arg in enumerate(argv):
        if arg == "--":
            break
        if arg == "--no-plugin" and index + 1 < len(argv):
            disabled.append(argv[index + 1])
        elif arg.startswith("--no-plugin="):
            disabled.append(arg.split("=", 1)[1])
    return [name for item in disabled for name in item.split(",") if name.strip()]


def _parser_class(kernel: Kernel) -> type[argparse.ArgumentParser]:
    """argparse, but a usage error is one line (not the whole usage), which a plugin may
    make more precise (``ketch_usage_error``: a "did you mean")."""
    import argparse

    class Parser(argparse.ArgumentParser):
        seen: list[str] = []

        def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
            if args is not None:
                self.seen = list(args)
            return super().parse_known_args(args, namespace)

        def error(self, message: str) -> Any:  # type: ignore[override]
            better = kernel.hooks.first(
                "ketch_usage_error", parser=self, args=self.seen, message=message
            )
            message = better or message
            self.exit(2, f"{self.prog}: {message}\n(`{self.prog} --help` lists every option)\n")

    return Parser


def build_parser(kernel: Kernel) -> argparse.ArgumentParser:
    import argparse

    from ketch import __version__

    parser = _parser_class(kernel)(
        prog="ketch",
        # No abbreviations: a subcommand's own option (``sessions verify --all``) must not
        # be read as a prefix of a main option (``--allow``), and a permission flag is
        # spelled out in full.
        allow_abbrev=False,
        description="A terminal coding agent: the model proposes, ketch decides what runs.",
        epilog="Run `ketch` for an interactive session, `ketch -p PROMPT` for one headless turn.",
    )
    parser.add_argument("-V", "--version", action="version", version=f"ketch {__version__}")
    # -p alone (Claude Code's `claude -p`): the prompt comes from stdin.
    parser.add_argument(
        "-p",
        "--print",
        dest="prompt",
        metavar="PROMPT",
        nargs="?",
        const="",
        help="run one headless turn with PROMPT and exit (stdin is read when piped)",
    )
    parser.add_argument(
        "--output-format",
        choices=["text", "json", "stream-json"],
        default="text",
        help="headless output (default: text)",
    )
    parser.add_argument("--model", help="model to use")
    parser.add_argument(
        "--provider", help="a provider name from config, or a provider kind (see `ketch models`)"
    )
    parser.add_argument(
        "--max-iterations", type=_positive_int, metavar="N", help="stop a turn after N model calls"
    )
    parser.add_argument(
        "--continue",
        dest="continue_session",
        action="store_true",
        help="continue the latest session of this workspace",
    )
    parser.add_argument("--resume", metavar="ID", help="resume session ID")
    parser.add_argument(
        "--no-save", action="store_true", help="open no session store and save nothing of this run"
    )
    parser.add_argument(
        "--no-plugin",
        action="append",
        default=[],
        metavar="NAME",
        help="do not load plugin NAME (repeatable)",
    )
    parser.add_argument("--frontend", help=argparse.SUPPRESS)
    kernel.hooks.call("ketch_add_cli_options", parser=parser, kernel=kernel)
    # Options that also work after a subcommand (`ketch plugins --no-plugin web`).
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--no-plugin",
        action="append",
        default=argparse.SUPPRESS,
        metavar="NAME",
        help=argparse.SUPPRESS,
    )
    common.add_argument("--provider", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    common.add_argument("--model", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    commands = [c for c in kernel.commands.values() if c.cli and not c.parent]
    if commands:
        sub = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
        for command in sorted(commands, key=lambda c: c.name):
            child = _add_command(sub, command, common)
            _add_subcommands(kernel, command, child, common)
    return parser


def _add_subcommands(
    kernel: Kernel, parent: Any, parser: argparse.ArgumentParser, common: argparse.ArgumentParser
) -> None:
    """Commands other plugins register under ``parent`` (``Command.parent``) join its actions."""
    import argparse

    children = [c for c in kernel.commands.values() if c.cli and c.parent == parent.name]
    if not children:
        return
    # The parent's own subparsers, if its configure made some (argparse keeps no public handle).
    actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    sub = (
        actions[0]
        if actions
        else parser.add_subparsers(dest=f"{parent.name}_action", metavar="ACTION")
    )
    for command in sorted(children, key=lambda c: c.name):
        _add_command(sub, command, common)


def _add_command(
    sub: Any, command: Command, common: argparse.ArgumentParser
) -> argparse.ArgumentParser:
    """The command's own parser, under ``sub`` (a subparsers action)."""
    child: argparse.ArgumentParser = sub.add_parser(
        command.name,
        help=command.help,
        description=command.help,
        aliases=list(command.aliases),
        parents=[common],
    )
    if command.configure is not None:
        command.configure(child)
    child.set_defaults(_command=command.key)
    return child


def _positive_int(text: str) -> int:
    import argparse

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def cli_settings(args: argparse.Namespace) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for key in ("model", "provider", "mode", "profile"):
        value = getattr(args, key, None)
        if value:
            data[key] = value
    if getattr(args, "max_iterations", None):
        data["loop"] = {"max_iterations": args.max_iterations}
    # Settings that options added by plugins carry into this layer: their argparse
    # actions fill ``args.layer_settings`` (the policy plugin's --allow/--deny rules).
    extra = getattr(args, "layer_settings", None)
    if isinstance(extra, dict):
        from ketch.config import deep_merge

        data = deep_merge(data, extra)
    return data


def _main(argv: list[str]) -> int:
    import os

    from ketch.kernel import Kernel

    try:
        os.getcwd()
    except FileNotFoundError:
        raise _NoWorkingDirectory from None
    kernel = Kernel.boot(cli_disabled=_preparse(argv))
    parser = build_parser(kernel)
    args = parser.parse_args(argv)
    kernel.args = args
    kernel.set_command_line_settings(cli_settings(args))
    name = getattr(args, "_command", None)
    if name:
        command = kernel.commands[name]
        assert command.run is not None
        return int(command.run(kernel, args) or 0)
    frontend = _frontend(kernel, args)
    return int(frontend.run(kernel) or 0)


def _frontend(kernel: Kernel, args: argparse.Namespace) -> Any:
    """``--frontend NAME``, else the frontend whose role fits: a prompt (``-p`` or piped
    stdin) or an interactive terminal."""
    from ketch.errors import KetchError

    if args.frontend:
        frontend = kernel.frontends.get(args.frontend)
        if frontend is None:
            available = ", ".join(sorted(kernel.frontends)) or "none"
            raise KetchError(
                f"no '{args.frontend}' frontend is loaded; loaded frontends: {available}. See `ketch plugins`.",
                exit_code=2,
            )
        return frontend
    role = "prompt" if args.prompt is not None or not sys.stdin.isatty() else "terminal"
    frontend = next((f for f in kernel.frontends.values() if f.role == role), None)
    if frontend is None:
        hint = " (use -p PROMPT for a headless turn)" if role == "terminal" else ""
        what = "headless (-p)" if role == "prompt" else "interactive"
        available = ", ".join(sorted(kernel.frontends)) or "none"
        raise KetchError(
            f"no {what} frontend is loaded{hint}; loaded frontends: {available}. See `ketch plugins`."
        )
    return frontend


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
