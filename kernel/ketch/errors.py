"""Errors meant for the user: one line that says what happened and what to do."""

from __future__ import annotations


class KetchError(Exception):
    """A deliberate, user-facing failure. The CLI prints ``ketch: <message>`` and exits.

    ``exit_code`` follows the command-line contract: 1 the command failed, 2 usage.
    """

    exit_code = 1

    def __init__(self, message: str, *, exit_code: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        if exit_code is not None:
            self.exit_code = exit_code


class UsageError(KetchError):
    exit_code = 2


class ConfigError(KetchError):
    exit_code = 2


class NoProviderConfigured(KetchError):
    """No provider is configured, none is implied by the environment, and no local
    server answered. A frontend may offer a setup instead of printing the message."""


class ContextOverflow(KetchError):
    """The request cannot be made to fit the model's context: the turn ends with
    ``context_overflow`` and this message (what is too big, what the person can do)."""
