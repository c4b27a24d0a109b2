"""``ketch verify``: a receipt's signature, its subjects, its journal, and a policy.

Every check says what it found in one line: ``ok: ...`` when it holds, ``FAILED: ...``
naming what does not (the receipt exits 1 when any fails), ``note: ...`` for what could
not be checked here (the store is not on this machine, say) and why.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ketch.api import KetchError
from ketch_attest import dsse, gitrepo, sshsig
from ketch_attest.keys import Trusted
from ketch_attest.statement import (
    HASHED,
    JOURNAL_SUBJECT,
    PREDICATE_TYPE,
    STATEMENT_TYPE,
    TREE_SUBJECT,
    hash_path,
    read_subject,
)


@dataclass
class Report:
    ok: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    journal_checked: bool = False

    def lines(self) -> list[str]:
        return (
            [f"ok: {x}" for x in self.ok]
            + [f"note: {x}" for x in self.notes]
            + [f"FAILED: {x}" for x in self.failed]
        )


def signature(envelope: dsse.Envelope, trusted: list[Trusted], report: Report) -> None:
    if not envelope.signatures:
        report.failed.append("signature: the receipt is not signed")
        return
    message = envelope.pae()
    problems: list[str] = []
    for sig in envelope.signatures:
        for key in trusted:
            try:
                status, problem = key.verifies(sig.keyid, sig.sig, message)
            except KetchError as exc:
                status, problem = "bad", exc.message
            if status == "ok":
                report.ok.append(f"signature: verified by {key.name}")
                return
            if status == "bad":
                problems.append(f"{key.name}: {problem}")
    if problems:
        report.failed.append("signature: " + "; ".join(dict.fromkeys(problems)))
        return
    signers = ", ".join(_signer(sig) for sig in envelope.signatures)
    report.failed.append(
        f"signature: the receipt is signed by {signers}, which is none of the given keys"
    )


def _signer(sig: dsse.Signature) -> str:
    if sshsig.looks_like(sig.sig):
        try:
            return f"SSH key {sshsig.parse(sig.sig).fingerprint}"
        except KetchError:
            return "an unreadable SSH signature"
    return f"key {sig.keyid[:16] or '(no keyid)'}"


def statement_shape(statement: dict[str, Any], report: Report) -> dict[str, Any] | None:
    """The predicate, when the statement is an in-toto v1 Statement of ketch's type."""
    if statement.get("_type") != STATEMENT_TYPE:
        report.failed.append(
            f"statement: _type is {statement.get('_type')!r}, not {STATEMENT_TYPE}"
        )
        return None
    if statement.get("predicateType") != PREDICATE_TYPE:
        report.failed.append(
            f"statement: predicateType is {statement.get('predicateType')!r}, not {PREDICATE_TYPE}"
        )
        return None
    subjects, predicate = statement.get("subject"), statement.get("predicate")
    if not isinstance(subjects, list) or not subjects or not isinstance(predicate, dict):
        report.failed.append("statement: it needs a non-empty subject list and a predicate object")
        return None
    for subject in subjects:
        if (
            not isinstance(subject, dict)
            or not isinstance(subject.get("name"), str)
            or not isinstance(subject.get("digest"), dict)
            or not subject["digest"]
        ):
            report.failed.append(f"statement: a subject without a name and a digest: {subject!r}")
            return None
    return predicate


def subjects(
    statement: dict[str, Any], predicate: dict[str, Any], root: Path, report: Report
) -> list[str]:
    """Check each file subject; returns the subjects' paths (hashed names resolved)."""
    files = [
        s
        for s in statement["subject"]
        if not s["name"].startswith(JOURNAL_SUBJECT) and s["name"] != TREE_SUBJECT
    ]
    salt_hex = (predicate.get("privacy") or {}).get("salt")
    by_hash = (
        _hashed_names(root, bytes.fromhex(salt_hex))
        if salt_hex and any(s["name"].startswith(HASHED) for s in files)
        else {}
    )
    good = 0
    resolved: list[str] = []
    for subject in files:
        name = subject["name"]
        rel = by_hash.get(name) if name.startswith(HASHED) else name
        shown = name if rel is None or rel == name else f"{rel} ({name[:24]}…)"
        if rel is None:
            report.failed.append(f"subject {name}: no file under {root} has this hashed name")
            continue
        if os.path.isabs(rel) or ".." in Path(rel).parts or not _inside(root, rel):
            report.failed.append(f"subject {name}: the name leaves the repository; not checked")
            continue
        resolved.append(rel)
        data = read_subject(root / rel)
        if data is None:
            report.failed.append(f"subject {shown}: missing from {root}")
            continue
        want = subject["digest"].get("sha256")
        if want is None:
            report.failed.append(f"subject {shown}: no sha256 digest to check")
        elif hashlib.sha256(data).hexdigest() != want:
            report.failed.append(
                f"subject {shown}: its SHA-256 differs from the receipt's (the file changed since)"
            )
        else:
            good += 1
    if files and good == len(files):
        report.ok.append(f"subjects: {good} file(s) match their SHA-256 in {root}")
    elif not files:
        report.ok.append("subjects: the receipt names no changed file")
    return resolved


def _inside(root: Path, rel: str) -> bool:
    """``rel``'s directory, links resolved, is inside ``root`` (a subject is never read
    through a linked directory that leads out of the checkout)."""
    top = os.path.realpath(root)
    parent = os.path.realpath(os.path.dirname(os.path.join(top, rel)))
    return parent == top or parent.startswith(top + os.sep)


def _hashed_names(root: Path, salt: bytes) -> dict[str, str]:
    """Every file under ``root`` (not .git) by its salted name."""
    found: dict[str, str] = {}
    for directory, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in names:
            rel = Path(directory, name).relative_to(root).as_posix()
            found[hash_path(salt, rel)] = rel
    return found


def git_tree(
    statement: dict[str, Any],
    root: Path,
    commit: str,
    trailer_value: str,
    changed: list[str],
    report: Report,
) -> None:
    """The receipt's tree is ``commit``'s, or ``commit``'s plus the subject files as they
    are now (``changed``: the subjects' paths) and without the removed ones."""
    subject = next((s for s in statement["subject"] if s["name"] == TREE_SUBJECT), None)
    if subject is None:
        return
    want = subject["digest"].get("gitTree")
    repo = gitrepo.find(root)
    if repo is None:
        report.failed.append(
            f"subject {TREE_SUBJECT}: {root} is not a git repository; the tree cannot be checked"
        )
        return
    tree = gitrepo.tree_of(repo, commit)
    if tree is not None and tree == want:
        report.ok.append(
            f"git: the tree of {commit} ({gitrepo.resolve(repo, commit) or '?'}) is the receipt's {want[:12]}"
        )
        values = gitrepo.trailers(repo, commit)
        if trailer_value in values:
            report.ok.append(f"git: {commit} carries this receipt's trailer ({trailer_value})")
        elif values:
            report.notes.append(
                f"git: {commit}'s Ketch-Receipt trailer names another receipt ({values[-1]})"
            )
        return
    predicate = statement.get("predicate") or {}
    removed = [str(p) for p in (predicate.get("files") or {}).get("removed") or []]
    base = gitrepo.resolve(repo, f"{commit}^{{commit}}")
    if any(p.startswith(HASHED) for p in removed):
        removed = _unhash_removed(repo, base, removed, (predicate.get("privacy") or {}).get("salt"))
    if gitrepo.overlay_tree(repo, base, root, changed + removed) == want:
        report.ok.append(
            f"git: {commit} plus the subject files as they are in the working tree make the receipt's tree {want[:12]}"
        )
        return
    report.failed.append(
        f"subject {TREE_SUBJECT}: the tree of {commit} is {str(tree)[:12]}, not the receipt's {str(want)[:12]} "
        "(and the working tree's changes do not make it either)"
    )


def _unhash_removed(
    repo: gitrepo.Repo, base: str | None, removed: list[str], salt: Any
) -> list[str]:
    """Removed files named by hash: found among ``base``'s files (they were there)."""
    if not isinstance(salt, str):
        return []
    prefix = repo.prefix + "/" if repo.prefix else ""
    known = {
        hash_path(bytes.fromhex(salt), rel): rel
        for path in gitrepo.entries_of(repo, base)
        if (rel := os.fsdecode(path)).startswith(prefix) and (rel := rel[len(prefix) :])
    }
    return [known[name] for name in removed if name in known]


def journal(
    statement: dict[str, Any], predicate: dict[str, Any], store: Any, report: Report
) -> None:
    from ketch.api import IntegrityError
    from ketch_attest.journal import journal_digest

    subject = next((s for s in statement["subject"] if s["name"].startswith(JOURNAL_SUBJECT)), None)
    if subject is None:
        report.failed.append("journal: the receipt names no session journal")
        return
    session_id = subject["name"][len(JOURNAL_SUBJECT) :]
    entries_count = int((predicate.get("journal") or {}).get("entries") or 0)
    if store is None:
        return
    if hasattr(store, "has_session") and not store.has_session(session_id):
        report.notes.append(
            f"journal: not checked: this machine's store has no session {session_id}"
        )
        return
    try:
        entries = store.entries(session_id)
    except IntegrityError as exc:
        report.failed.append(f"journal: {exc.message}")
        return
    except KetchError as exc:
        report.notes.append(f"journal: not checked: {exc.message}")
        return
    if len(entries) < entries_count:
        report.failed.append(
            f"journal: session {session_id} has {len(entries)} entries, fewer than the {entries_count} the receipt was made from"
        )
        return
    got = journal_digest(entries[:entries_count])
    if got != subject["digest"].get("sha256"):
        report.failed.append(
            f"journal: entries 1-{entries_count} of session {session_id} are not the ones the receipt was made from "
            "(the stored session was changed since)"
        )
        return
    report.journal_checked = True
    later = len(entries) - entries_count
    report.ok.append(
        f"journal: entries 1-{entries_count} of session {session_id} in this machine's store match"
        + (f" ({later} later entries: the session went on)" if later else "")
    )
