"""The guard checks themselves (pure functions of a call and a snapshot).

For file tools: the path facts of :mod:`ketch_policy_kit.paths`. For shell commands:
one analysis from :mod:`ketch_shell_kit`, whose effects (what each simple command
reads, writes and runs) are checked against the same facts. The guards ask; they
never allow (another voter, or the profile, does that).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ketch.api import Access, Effect, PermissionSnapshot, ProposedCall, Vote
from ketch_policy_kit.paths import resolve, write_guard
from ketch_policy_kit.rules import Rule, compile_scopes, rules_of
from ketch_policy_kit.scopes import join, read_scope
from ketch_secret_kit import secret_reason

if TYPE_CHECKING:  # pragma: no cover
    from ketch_policy_kit.protected import Protected

CONTENT_READS = ("read", "tree", "vtree", "link")


@dataclass(frozen=True)
class Finding:
    reason: str
    scope: str | None = None  # only secret reads can be remembered; writes always ask


def secret_allowed(path: Path, tool: str, snapshot: PermissionSnapshot) -> bool:
    """The one exception the guards make: an allow rule or an approval for this read."""
    rules: tuple[Rule, ...] = rules_of(snapshot.rules).allow + compile_scopes(
        tuple(snapshot.approvals)
    )
    return any(
        rule.matches_path(tool, Effect.READ, str(path), snapshot.workspace) for rule in rules
    )


ProtectedFor = Callable[[Path], "list[Protected]"]


def no_extra(_path: Path) -> list[Protected]:
    return []


def check_path(
    tool: str,
    effect: Effect,
    target: str,
    snapshot: PermissionSnapshot,
    protected: ProtectedFor = no_extra,
) -> Finding | None:
    if effect not in (Effect.READ, Effect.WRITE):
        return None
    path = resolve(target)
    if effect == Effect.WRITE:
        reason = write_guard(path, snapshot.workspace, protected(path))
        return Finding(reason) if reason else None
    why = secret_reason(path, within=snapshot.workspace)
    if why and not secret_allowed(path, tool, snapshot):
        return Finding(
            f"reads a file that looks like a secret ({path.name}: {why})",
            read_scope(path, snapshot.workspace),
        )
    return None


def secrets_masked(call: ProposedCall, access: Access, snapshot: PermissionSnapshot) -> bool:
    """The command runs in a working sandbox, where workspace secrets are masked and
    home secrets hidden (so a recursive read cannot reach them)."""
    from ketch_tool_kit.sandbox import SANDBOXED, runs_sandboxed

    return snapshot.facts.get(SANDBOXED) is True and runs_sandboxed(call, access)


def check_command(
    call: ProposedCall,
    access: Access,
    snapshot: PermissionSnapshot,
    protected: ProtectedFor = no_extra,
) -> list[Finding]:
    """The hard guards for a command line: what it writes (redirects, writers' operands),
    the secret-looking files it reads, privilege escalation, and anything the analysis
    cannot see through (which could hide any of these)."""
    from ketch_shell_kit import analyse_for, harmless_path
    from ketch_shell_kit.paths import resolve_word

    tool = call.tool
    cwd = access.detail.get("cwd") or snapshot.workspace
    analysis = analyse_for(access, access.target, cwd, snapshot.workspace)
    findings: list[Finding] = []
    if not analysis.understood:
        findings.append(Finding(f"the hard guards cannot be checked: {analysis.problems[0]}"))
    if analysis.too_complex:
        findings.append(
            Finding(f"the command has {len(analysis.parts)} parts, more than can be checked")
        )
    masked = secrets_masked(call, access, snapshot)

    def write(word_paths: list[str] | None, source: str, what: str) -> None:
        if word_paths is None:
            findings.append(Finding(f"{what} a target only known at run time ({source})"))
            return
        for path in word_paths:
            reason = write_guard(Path(path), snapshot.workspace, protected(Path(path)))
            if reason:
                findings.append(Finding(reason))

    def read(paths: list[str] | None, source: str, kind: str, walk: object = None) -> None:
        if paths is None:
            if not masked:  # in the sandbox, secrets are masked whatever the name
                findings.append(
                    Finding(
                        f"reads a file only known at run time ({source}), which could be a secret"
                    )
                )
            return
        for path in paths:
            if kind in ("tree", "vtree") and os.path.isdir(path):
                found = _tree_secret(path, walk, snapshot, masked=masked)
                if found is not None:
                    findings.append(Finding(found))
                continue
            finding = check_path(tool, Effect.READ, path, snapshot)
            if finding:
                findings.append(finding)

    rewritten = analysis.selection_rewritten
    if rewritten is not None:
        findings.append(
            Finding(
                f"it writes {rewritten} and reads a tree recursively in the same line (which files it reads is decided after the check)"
            )
        )
    links = any(part.links for part in analysis.parts)
    for redirect in analysis.redirects:
        if redirect.writes and not redirect.harmless and redirect.target is not None:
            write(
                resolve_word(redirect.target, redirect.cwds),
                redirect.target.source,
                "redirects output to",
            )
        elif redirect.reads and redirect.target is not None:
            read(resolve_word(redirect.target, redirect.cwds), redirect.target.source, "read")
    for part in analysis.parts:
        if part.privileged:
            head = (
                part.wrappers[0][0].source
                if part.wrappers and part.wrappers[0]
                else (part.name or "sudo")
            )
            findings.append(Finding(f"runs with another user's privileges ({head})"))
        if (
            not masked
        ):  # in the sandbox, the sandbox is the boundary for what the analysis cannot read
            for why in part.hidden:
                findings.append(Finding(f"'{part.text[:60]}': {why}"))
        for use in part.uses:
            if use.kind == "write" and harmless_path(use.word.value):
                continue  # /dev/null, /dev/stdout: not a file anyone keeps
            if use.kind == "write":
                write(resolve_word(use.word, use.cwds), use.word.source, "writes to")
            elif use.kind in CONTENT_READS:
                read(resolve_word(use.word, use.cwds), use.word.source, use.kind, use.walk)
        if not part.known:
            # A program the table does not know: its arguments are read as paths on the
            # chance they are files it reads (best effort: it may read anything).
            for word in part.args:
                paths = resolve_word(word, part.cwds) or []
                read([p for p in paths if os.path.isfile(p)], word.source, "read")
    if links and any(u.kind in CONTENT_READS for p in analysis.parts for u in p.uses):
        findings.append(
            Finding("a link is made in the same command line, and a later read may go through it")
        )
    return findings


def _tree_secret(
    path: str, walk: object, snapshot: PermissionSnapshot, *, masked: bool
) -> str | None:
    """A secret a recursive read of ``path`` would reach, by that program's own walk
    (inside the workspace or, through symlinks it follows, outside it); None when there
    is none or the sandbox masks what it reaches."""
    from ketch_shell_kit.reach import EVERYTHING, Walk, reach

    chosen = walk if isinstance(walk, Walk) else EVERYTHING
    found = reach(
        path,
        chosen,
        workspace=Path("/"),
        cwd=path,
        masked=masked,
        content_within=snapshot.workspace,
    )
    if found is None:
        return None
    if found.kind == "secret":
        return f"reads everything under {path}, which holds a secret-looking file ({found.path}: {found.why})"
    return f"reads everything under {path}: {found.describe(path).split(', ', 1)[1]}"


def vote(
    call: ProposedCall, snapshot: PermissionSnapshot, protected: ProtectedFor = no_extra
) -> Vote | None:
    """``protected(path)``: the workspace's protected paths besides the protected names
    that a write to ``path`` is checked against (what configured hooks and MCP servers
    execute, a repository's hooks directory and config includes)."""
    findings: list[Finding] = []
    for access in call.accesses:
        if access.effect == Effect.EXECUTE:
            findings.extend(check_command(call, access, snapshot, protected))
        else:
            finding = check_path(call.tool, access.effect, access.target, snapshot, protected)
            if finding:
                findings.append(finding)
    if not findings:
        return None
    reasons = list(dict.fromkeys(f.reason for f in findings))
    return Vote(
        decision="ask",
        reason="; ".join(reasons),
        plugin="guards",
        scope=join([f.scope for f in findings]),
        origin="guard",
    )
