"""Per-run rules on the command line: ``--allow/--ask/--deny RULE`` (the config's rule
syntax) and Claude Code's ``--allowedTools/--disallowedTools`` spellings, mapped.

They form the command line's layer of ``[permissions]`` (``[permissions.run]``): added
to the rules of the config files, never replacing them, and like every rule, below the
hard guards. A spelling that cannot be mapped is refused (exit 2) with one line, never
dropped: a dropped deny rule would widen authority.
"""

from __future__ import annotations

import argparse
from typing import Any

from ketch.api import UsageError
from ketch_claude_kit.rules import MappingError, from_claude, split_rules


def checked(rule: str, source: str) -> str:
    from ketch_policy_kit.rules import RuleError, parse_rule

    try:
        parse_rule(rule)
    except RuleError as exc:
        raise UsageError(f"{source}: {exc}") from None
    return rule


class RuleAction(argparse.Action):
    """Collects rules into ``namespace.layer_settings`` (the command line's layer)."""

    def __init__(self, *args: Any, decision: str, claude: bool = False, **kwargs: Any) -> None:
        self.decision, self.claude = decision, claude
        super().__init__(*args, **kwargs)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        text = str(values)
        if self.claude:
            try:
                rules = [from_claude(item) for item in split_rules(text)]
            except MappingError as exc:
                raise UsageError(
                    f"{option_string}: {exc}; write a ketch rule with --allow/--ask/--deny instead (docs/permissions.md)"
                ) from None
            if not rules:
                raise UsageError(f"{option_string}: no rule given")
        else:
            rules = [text]
        layer = getattr(namespace, "layer_settings", None)
        if not isinstance(layer, dict):
            layer = {}
            namespace.layer_settings = layer
        run = layer.setdefault("permissions", {}).setdefault("run", {})
        for rule in rules:
            run.setdefault(self.decision, []).append(checked(rule, f"{option_string} {text!r}"))


OPTIONS = [
    (
        ("--allow",),
        "allow",
        False,
        "RULE",
        "allow calls matching RULE (repeatable), e.g. 'shell(git diff:*)', 'write(notes.md)'",
    ),
    (("--ask",), "ask", False, "RULE", "ask before calls matching RULE (repeatable)"),
    (("--deny",), "deny", False, "RULE", "deny calls matching RULE (repeatable)"),
    (
        ("--allowedTools", "--allowed-tools"),
        "allow",
        True,
        "RULES",
        "Claude Code spellings, mapped to allow rules: 'Bash(git status),Read(./src/**)'",
    ),
    (
        ("--disallowedTools", "--disallowed-tools"),
        "deny",
        True,
        "RULES",
        "Claude Code spellings, mapped to deny rules",
    ),
]


def add_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "permissions for this run (added to the config's [permissions])"
    )
    for names, decision, claude, metavar, text in OPTIONS:
        group.add_argument(
            *names,
            action=RuleAction,
            decision=decision,
            claude=claude,
            metavar=metavar,
            default=argparse.SUPPRESS,
            help=text,
        )
    # Other agents' spellings of "ask nothing": named, and pointed to ketch's.
    for spelling in FOREIGN_FULL_ACCESS:
        parser.add_argument(spelling, action=_Spelling, nargs=0, help=argparse.SUPPRESS)


# (Claude Code's --dangerously-skip-permissions is mapped by the headless plugin's
# Claude options, to the same full-access profile.)
FOREIGN_FULL_ACCESS = ("--yolo",)


class _Spelling(argparse.Action):
    def __call__(self, parser: Any, namespace: Any, values: Any, option: Any = None) -> None:
        parser.error(
            f"{option} is another agent's option: `--profile full-access` runs every call without asking "
            "(the hard guards and the sandbox still apply)"
        )
