"""The guard checks themselves (pure functions of a call and a snapshot).

Paths are compared by component after resolving symlinks, so ``/w/proj-evil`` is not
inside ``/w/proj`` and a link to ``.git/config`` is a write to ``.git/config``.
"""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass
from pathlib import Path, PurePath

from ketch.policy import PermissionSnapshot, ProposedCall, Vote
from ketch.tools import Access, Effect
from ketch_guards.rules import Rule, compile_scopes, rules_of
from ketch_guards.shell import Word

SECRET_PATTERNS = (
    ".env", ".env.*", "*.env", ".envrc", "*.pem", "*.key", "*.p12", "*.pfx", "id_rsa*", "id_ed25519*",
    "id_ecdsa*", "id_dsa*", ".netrc", ".pgpass", "*.keystore", "*.jks", "credentials", "credentials.json",
    ".npmrc", ".pypirc", "secrets.*", "*.secret", "*.secrets", ".git-credentials", "*.kdbx", "*.gpg",
    "service-account*.json", "*.tfvars",
)
# Templates that only name the variables: not secrets.
NOT_SECRET = (".env.example", ".env.sample", ".env.template", ".env.dist", "*.pub")
# Directories whose every file is a secret.
SECRET_DIRS = frozenset({".ssh", ".gnupg", ".aws", ".azure", ".kube", ".docker", ".password-store", "keyrings"})
PROCESS_SECRETS = frozenset({"environ", "mem", "auxv"})
# Files under the home directory that run code or grant access when changed
# (they matter when the workspace is, or contains, the home directory).
HOME_SENSITIVE = frozenset(
    {".ssh", ".gnupg", ".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile", ".zshrc", ".zshenv", ".zprofile", ".zlogin", ".pam_environment"}
)


def resolve(path: str | os.PathLike[str]) -> Path:
    """Absolute and symlink-resolved (as far as the path exists)."""
    return Path(os.path.realpath(os.path.abspath(os.fspath(path))))


def is_within(path: Path, root: Path) -> bool:
    """Component-wise containment: /w/proj-evil is not within /w/proj."""
    return path.is_relative_to(root)


def looks_secret(path: PurePath) -> bool:
    name = path.name.lower()
    if any(fnmatch.fnmatchcase(name, pattern) for pattern in NOT_SECRET):
        return False
    # A process's environment or memory: ketch's own holds the API keys
    # (/proc/self/... resolves to /proc/<pid>/...).
    if len(path.parts) >= 3 and path.parts[1] == "proc" and name in PROCESS_SECRETS:
        return True
    if any(part.lower() in SECRET_DIRS for part in path.parts[:-1]):
        return True
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in SECRET_PATTERNS)


def ketch_config_dirs(workspace: Path) -> list[Path]:
    from ketch.paths import config_dir

    return [resolve(config_dir()), resolve(workspace / ".ketch")]


def write_guard(path: Path, workspace: Path) -> str | None:
    """Why a write to ``path`` (already resolved) must always ask, or None."""
    root = resolve(workspace)
    lowered = [part.lower() for part in path.parts]
    if ".git" in lowered:
        return f"writes to git internals ({path})"
    if ".ketch" in lowered or any(is_within(path, d) for d in ketch_config_dirs(workspace)):
        return f"writes to ketch's own config, hooks or MCP settings ({path})"
    if not is_within(path, root):
        return f"writes outside the workspace ({path})"
    home = resolve(Path.home())
    if is_within(path, home) and path != home and path.relative_to(home).parts[0] in HOME_SENSITIVE:
        return f"writes to a shell startup file or key directory ({path})"
    return None


def secret_allowed(path: Path, tool: str, snapshot: PermissionSnapshot) -> bool:
    """The one exception the guards make: an allow rule or an approval for this read."""
    rules: tuple[Rule, ...] = rules_of(snapshot.rules).allow + compile_scopes(tuple(snapshot.approvals))
    return any(rule.matches_path(tool, Effect.READ, str(path), snapshot.workspace) for rule in rules)


def read_scope(path: Path, workspace: Path) -> str | None:
    """The narrow rule an "always allow" for reading exactly this file grants."""
    root = resolve(workspace)
    text = str(path.relative_to(root)) if is_within(path, root) else str(path)
    if "; " in text or "\n" in text or "\x00" in text:
        return None
    for char in "*?[":
        text = text.replace(char, f"[{char}]")
    return f"read({text})"


@dataclass(frozen=True)
class Finding:
    reason: str
    scope: str | None = None  # only secret reads can be remembered; writes always ask


def check_path(tool: str, effect: Effect, target: str, snapshot: PermissionSnapshot) -> Finding | None:
    if effect not in (Effect.READ, Effect.WRITE):
        return None
    path = resolve(target)
    if effect == Effect.WRITE:
        reason = write_guard(path, snapshot.workspace)
        return Finding(reason) if reason else None
    if looks_secret(path) and not secret_allowed(path, tool, snapshot):
        return Finding(f"reads a file that looks like a secret ({path.name})", read_scope(path, snapshot.workspace))
    return None


def check_command(tool: str, access: Access, snapshot: PermissionSnapshot) -> list[Finding]:
    """The hard guards for a command line: redirect targets, the operands of programs
    that write files, secret-looking files named as arguments, privilege escalation,
    and anything the analysis cannot follow (which could hide any of these)."""
    from ketch_guards.operands import git_config_write, resolve_word, writes_files, written_files
    from ketch_guards.shell import analyse

    cwd = access.detail.get("cwd") or snapshot.workspace
    analysis = analyse(access.target, cwd)
    findings: list[Finding] = []
    if not analysis.understood:
        findings.append(Finding(f"the hard guards cannot be checked: {analysis.problems[0]}"))
    if analysis.too_complex:
        findings.append(Finding(f"the command has {len(analysis.parts)} parts, more than can be checked"))

    def write(word: Word, cwds: tuple[Path, ...], what: str) -> None:
        paths = resolve_word(word, cwds)
        if paths is None:
            findings.append(Finding(f"{what} a target only known at run time ({word.source})"))
            return
        for path in paths:
            reason = write_guard(Path(path), snapshot.workspace)
            if reason:
                findings.append(Finding(reason))

    def read(word: Word, cwds: tuple[Path, ...]) -> None:
        for path in resolve_word(word, cwds) or []:
            finding = check_path(tool, Effect.READ, path, snapshot) if os.path.isfile(path) else None
            if finding:
                findings.append(finding)

    for redirect in analysis.redirects:
        if redirect.writes and not redirect.harmless and redirect.target is not None:
            write(redirect.target, redirect.cwds, "redirects output to")
        elif redirect.reads and redirect.target is not None:
            read(redirect.target, redirect.cwds)
    for part in analysis.parts:
        if part.privileged:
            findings.append(Finding(f"runs with another user's privileges ({part.wrappers[0][0].source if part.wrappers else 'sudo'})"))
        for word in written_files(part):
            write(word, part.cwds, "writes to")
        if part.extra_args and writes_files(part):
            findings.append(Finding(f"'{part.name}' writes to files only known at run time (xargs, find -exec)"))
        config = git_config_write(part)
        if config == "global":
            findings.append(Finding("writes git configuration outside the workspace (git config --global/--system/--file)"))
        elif config == "local":
            findings.append(Finding("writes git internals (git config)"))
        for word in part.args:
            read(word, part.cwds)
    return findings


def vote(call: ProposedCall, snapshot: PermissionSnapshot) -> Vote | None:
    findings: list[Finding] = []
    for access in call.accesses:
        if access.effect == Effect.EXECUTE:
            findings.extend(check_command(call.tool, access, snapshot))
        else:
            finding = check_path(call.tool, access.effect, access.target, snapshot)
            if finding:
                findings.append(finding)
    if not findings:
        return None
    reasons = list(dict.fromkeys(f.reason for f in findings))
    scopes = [f.scope for f in findings]
    scope = "; ".join(dict.fromkeys(s for s in scopes if s)) if all(scopes) else None
    return Vote(decision="ask", reason="; ".join(reasons), plugin="guards", scope=scope or None)
