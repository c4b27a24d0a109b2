"""Which hooks an event runs: Claude Code's matcher rules, shared with the Agent SDK's
hook callbacks (:mod:`ketch_claude_kit.hook_matcher`)."""

from ketch_claude_kit.hook_matcher import matches

__all__ = ["matches"]
