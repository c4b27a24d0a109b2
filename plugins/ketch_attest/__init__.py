"""ketch_attest: signed, independently verifiable receipts of what an agent session did.

``ketch attest`` reads a session's journal through the store's public API and writes an
in-toto Statement (predicate ``https://ketch.dev/provenance/agent-session/v1``) in a
DSSE envelope, signed with ketch's own Ed25519 key (kept with the store's key) or the
person's SSH key. ``ketch verify`` checks a receipt's signature, its subjects against a
checkout, its journal against this machine's store, and an optional policy, with exit
codes for CI. See docs/provenance.md. Registers commands only; everything heavy (the
crypto, git, the store) is imported inside them.
"""

from __future__ import annotations

from collections.abc import Callable

from ketch.api import Command, hookimpl


@hookimpl
def ketch_register_commands(register: Callable[[Command], None]) -> None:
    from ketch_attest import cli

    register(
        Command(
            name="attest",
            help="write a signed receipt (in-toto/DSSE) of what a session did and under which authority",
            cli=True,
            configure=cli.configure_attest,
            run=cli.run_attest,
        )
    )
    register(
        Command(
            name="verify",
            help="check a receipt: signature, files, journal, and an optional policy (exit 0/1/2 for CI)",
            cli=True,
            configure=cli.configure_verify,
            run=cli.run_verify,
        )
    )
