"""What ``ketch attest`` and ``ketch verify`` do (their parsers are in :mod:`ketch_attest.cli`)."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Kernel

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


# --- ketch attest ---------------------------------------------------------------------------


def run_attest(kernel: Kernel, args: argparse.Namespace) -> int:
    from ketch.api import KetchError

    if args.amend and not args.trailer:
        raise KetchError("--amend adds the trailer: give --trailer too", exit_code=EXIT_USAGE)
    if args.trailer and not args.out:
        raise KetchError(
            "--trailer names the receipt file: give --out FILE too", exit_code=EXIT_USAGE
        )
    if args.public_key:
        return _print_public_key(kernel, args)
    first, last = parse_turns(args.turns)
    from ketch_attest import dsse, journal, statement
    from ketch_attest.keys import signer_for

    store = _store(kernel)
    session_id = args.session or store.latest_session_id(str(kernel.workspace))
    if not session_id:
        raise KetchError(
            f"no saved sessions in {kernel.workspace}; name one (`ketch sessions list --all`)"
        )
    session_id, entries = journal.load(store, session_id)
    record = (getattr(store, "read_session", None) or store.load_session)(session_id)
    workspace = Path(record.workspace or kernel.workspace)
    if not workspace.is_dir():
        raise KetchError(f"session {session_id} worked in {workspace}, which is not there any more")
    facts = journal.read(session_id, entries)
    if not facts.turns:
        raise KetchError(f"session {session_id} has no turns to attest")
    if first > len(facts.turns) or (last is not None and last < first):
        raise KetchError(
            f"--turns {args.turns}: session {session_id} has turns 1-{len(facts.turns)}",
            exit_code=EXIT_USAGE,
        )
    signer = signer_for(args.key, lambda: store, workspace)
    options = statement.Options.make(first, last, args.include_prompts, args.hash_paths)
    body = statement.Builder(facts, workspace, options).statement(time.time())
    envelope = dsse.Envelope(
        json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    )
    sig = signer.sign(envelope.pae())
    envelope.signatures.append(dsse.Signature(signer.keyid, sig))
    text = envelope.to_json()
    if not args.out:
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        _write(Path(args.out), text.encode("utf-8"), private=args.include_prompts)
        calls = len(body["predicate"]["calls"])
        files = len(body["predicate"]["files"]["changed"])
        print(
            f"ketch: receipt for session {session_id} ({calls} calls, {files} changed files) signed by "
            f"{signer.description}: {args.out}",
            file=sys.stderr,
        )
    if args.trailer:
        trailer = f"Ketch-Receipt: sha256:{hashlib.sha256(text.encode('utf-8')).hexdigest()}"
        if args.amend:
            _amend(workspace, body, trailer)
        print(trailer)
    return EXIT_OK


def _amend(workspace: Path, body: dict[str, Any], trailer: str) -> None:
    from ketch.api import KetchError
    from ketch_attest import gitrepo

    repo = gitrepo.find(workspace)
    git = body["predicate"].get("git")
    if repo is None or git is None:
        raise KetchError(
            f"{workspace} is not a git repository: there is no commit to amend; the receipt was written"
        )
    if not git.get("committed"):
        raise KetchError(
            "the last commit does not hold the session's changes (commit them first, then attest); "
            "the receipt was written, the commit left as it was"
        )
    new = gitrepo.amend_with_trailer(repo, trailer.split(": ", 1)[1])
    print(f"ketch: amended the last commit with the trailer: {new}", file=sys.stderr)


def _print_public_key(kernel: Kernel, args: argparse.Namespace) -> int:
    from ketch.api import KetchError
    from ketch_attest.keys import KetchKey

    if args.key != "ketch":
        raise KetchError(
            "--public-key prints ketch's own key; an SSH key's public half is its .pub file",
            exit_code=EXIT_USAGE,
        )
    key = KetchKey.from_store(_store(kernel))
    print(key.public_pem().rstrip("\n") if args.public_key == "pem" else key.public_ssh())
    return EXIT_OK


def parse_turns(text: str | None) -> tuple[int, int | None]:
    from ketch.api import KetchError

    if not text:
        return 1, None
    first, sep, last = text.partition("..")
    try:
        a = int(first) if first else 1
        b = int(last) if last else None
        if not sep:
            b = a
    except ValueError:
        raise KetchError(
            f"--turns {text}: expected A, A..B, A.. or ..B (turn numbers)", exit_code=EXIT_USAGE
        ) from None
    if a < 1 or (b is not None and b < a):
        raise KetchError(
            f"--turns {text}: turns are numbered from 1, first to last", exit_code=EXIT_USAGE
        )
    return a, b


def _store(kernel: Kernel) -> Any:
    from ketch.api import KetchError

    store = kernel.store
    if store is None:
        raise KetchError("no session store is loaded (is the 'store' plugin disabled?)")
    return store


def _write(path: Path, data: bytes, *, private: bool) -> None:
    """Whole or not at all: a temporary file beside it, renamed over it."""
    import tempfile

    from ketch.api import KetchError

    directory = path.parent if str(path.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(prefix=".ketch-receipt-", dir=directory)
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
            os.chmod(tmp, 0o600 if private else 0o644)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise KetchError(f"cannot write {path}: {exc.strerror or exc}") from None


# --- ketch verify -----------------------------------------------------------------------------


def run_verify(kernel: Kernel, args: argparse.Namespace) -> int:
    from ketch.api import KetchError
    from ketch_attest import dsse, keys, verify
    from ketch_attest import policy as policies

    path = Path(args.receipt)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise KetchError(
            f"cannot read {path}: {exc.strerror or exc}", exit_code=EXIT_USAGE
        ) from None
    policy = policies.load(Path(args.policy)) if args.policy else None
    root = Path(args.repo)
    if not root.is_dir():
        raise KetchError(f"--repo {root}: not a directory", exit_code=EXIT_USAGE)
    opened: dict[str, Any] = {}

    def store() -> Any:
        if "store" not in opened:
            opened["store"], opened["problem"] = None, None
            if args.no_store:
                opened["problem"] = "--no-store was given"
            else:
                try:
                    opened["store"] = kernel.store
                    if opened["store"] is None:
                        opened["problem"] = "no session store plugin is loaded"
                except KetchError as exc:
                    opened["problem"] = exc.message
        return opened["store"]

    specs = args.key or ["ketch"]
    trusted: list[keys.Trusted] = []
    for spec in specs:
        if spec == "ketch" and store() is None:
            raise KetchError(
                f"no key to verify with: this machine's ketch key needs its session store ({opened['problem']}); "
                "give --key FILE (`ketch attest --public-key` prints ketch's key where the store is)",
                exit_code=EXIT_USAGE,
            )
        trusted += keys.load_trusted(spec, store)
    report = verify.Report()
    try:
        envelope = dsse.parse(raw, str(path))
    except KetchError as exc:
        report.failed.append(exc.message)
        return _finish(report, args)
    if envelope.payload_type != dsse.PAYLOAD_TYPE:
        report.failed.append(
            f"envelope: payloadType is {envelope.payload_type!r}, not {dsse.PAYLOAD_TYPE}"
        )
    verify.signature(envelope, trusted, report)
    try:
        statement = envelope.statement()
    except KetchError as exc:
        report.failed.append(f"statement: {exc.message}")
        return _finish(report, args)
    predicate = verify.statement_shape(statement, report)
    if predicate is None:
        return _finish(report, args)
    changed = verify.subjects(statement, predicate, root, report)
    trailer = f"sha256:{hashlib.sha256(raw).hexdigest()}"
    verify.git_tree(statement, root, args.commit, trailer, changed, report)
    found = store()
    if found is None:
        report.notes.append(
            f"journal: not checked: the session store is not available ({opened['problem']})"
        )
    verify.journal(statement, predicate, found, report)
    if policy is not None:
        failures = policies.check(policy, predicate, report.journal_checked)
        report.failed += failures
        if not failures:
            report.ok.append(f"policy: {args.policy} holds")
    return _finish(report, args)


def _finish(report: Any, args: argparse.Namespace) -> int:
    code = EXIT_FAILED if report.failed else EXIT_OK
    if args.json:
        print(
            json.dumps(
                {
                    "verified": not report.failed,
                    "ok": report.ok,
                    "notes": report.notes,
                    "failed": report.failed,
                },
                indent=2,
            )
        )
    else:
        for line in report.lines():
            print(line)
        print("verified" if code == EXIT_OK else f"NOT verified: {len(report.failed)} failure(s)")
    return code
