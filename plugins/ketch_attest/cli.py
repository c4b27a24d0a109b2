"""``ketch attest`` and ``ketch verify``: their command lines (docs/provenance.md).

Only argparse here: ``ketch --help`` builds the parsers from ``configure``; what the
commands do (:mod:`ketch_attest.commands`: the crypto, the store, git) loads in ``run``.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Kernel


def configure_attest(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "session",
        metavar="SESSION",
        nargs="?",
        help="session id or unique prefix (default: this workspace's latest session)",
    )
    parser.add_argument(
        "--turns",
        metavar="A..B",
        help="only these turns (A, A..B, A.. or ..B; numbered as `ketch sessions show` lists them)",
    )
    parser.add_argument(
        "--out", "-o", metavar="FILE", help="write the receipt here (default: standard output)"
    )
    parser.add_argument(
        "--key",
        metavar="KEY",
        default="ketch",
        help="sign with: ketch (default: ketch's own key, kept with the store's key), ssh:PATH (an SSH key), "
        "or git (git's user.signingkey, gpg.format = ssh)",
    )
    parser.add_argument(
        "--include-prompts",
        action="store_true",
        help="put the prompts and every tool input in full in the receipt (left out by default)",
    )
    parser.add_argument(
        "--hash-paths",
        action="store_true",
        help="name files by HMAC-SHA-256 under a per-receipt salt (disclosed in the receipt) instead of their paths",
    )
    parser.add_argument(
        "--trailer",
        action="store_true",
        help="print the commit trailer naming the receipt (Ketch-Receipt: sha256:...); needs --out",
    )
    parser.add_argument(
        "--amend",
        action="store_true",
        help="with --trailer: add it to the last commit (whose tree must be the receipt's); no hook runs",
    )
    parser.add_argument(
        "--public-key",
        nargs="?",
        const="pem",
        choices=["pem", "ssh"],
        metavar="FORMAT",
        help="print the public key of --key ketch (pem, or ssh for an allowed_signers line) and exit",
    )


def run_attest(kernel: Kernel, args: argparse.Namespace) -> int:
    from ketch_attest import commands

    return commands.run_attest(kernel, args)


def configure_verify(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("receipt", metavar="RECEIPT", help="the receipt (a DSSE envelope) to check")
    parser.add_argument(
        "--repo",
        metavar="PATH",
        default=".",
        help="the checkout the session worked in, whose files the subjects name (default: the current directory)",
    )
    parser.add_argument(
        "--commit",
        metavar="REV",
        default="HEAD",
        help="the commit whose tree the receipt must name (default: HEAD)",
    )
    parser.add_argument(
        "--key",
        metavar="KEY",
        action="append",
        help="a key the signature may verify under: ketch (this machine's ketch key; the default), a PEM "
        "public key file, an SSH public key (file or line), or an allowed_signers file; repeatable",
    )
    parser.add_argument(
        "--policy",
        metavar="FILE",
        help="a policy the receipt must satisfy (TOML, docs/provenance.md)",
    )
    parser.add_argument(
        "--no-store",
        action="store_true",
        help="do not open this machine's session store (the journal is then not checked)",
    )
    parser.add_argument("--json", action="store_true", help="print the results as JSON")


def run_verify(kernel: Kernel, args: argparse.Namespace) -> int:
    from ketch_attest import commands

    return commands.run_verify(kernel, args)
