"""The policy vote: modes, profiles and rules applied to each thing a call touches.

Order, for every access of a call: a deny rule denies; an ask rule asks; an allow
rule or an approval allows; otherwise the profile decides (docs/permissions.md has
the table). The call's vote is the strictest of its accesses' verdicts. An ask
carries the narrow scope an "always allow" would grant, when there is one.

Shell commands are judged from one analysis (:mod:`ketch_shell_kit`): a simple command
runs without asking under ``assisted`` only when it is *proven* harmless -- a program
of the grammar table, read-only with the options given, every path it names inside the
workspace and not a secret -- or a rule or approval allows it. A working sandbox lets
``assisted`` also run the build and test tools of :data:`SANDBOX_CONFINED` (the sandbox,
not the analysis, bounds what they do).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from ketch.api import SCOPE_SEPARATOR, Access, Effect, PermissionSnapshot, ProposedCall, Vote
from ketch_policy_kit.paths import is_within, resolve
from ketch_policy_kit.rules import (
    Rule,
    RuleError,
    RuleSet,
    compile_scopes,
    parse_host,
    parse_rule,
    rules_of,
)
from ketch_policy_kit.scopes import dir_glob, scope, shell_scope, write_glob
from ketch_secret_kit import secret_reason
from ketch_shell_kit import MAX_COMMANDS, Analysis, Command, PathUse, analyse_for, harmless_path
from ketch_shell_kit.paths import resolve_word
from ketch_shell_kit.reach import EVERYTHING, RG_DEFAULT, Walk, reach

PLUGIN = "policy"
# Build, test and format tools the assisted profile runs without asking when a working
# sandbox confines them (workspace writable, .git read-only, secrets masked, network only
# through the egress proxy, no host sockets): what they run is the workspace's own code,
# which the sandbox bounds.
# Programs that destroy or move work (rm, mv, git writes), reach out (curl), or make
# links still ask: the sandbox does not protect the workspace's own files.
SANDBOX_CONFINED = frozenset(
    {"python", "python3", "pytest", "py.test", "tox", "nox", "coverage", "make", "ruff", "black", "isort", "mypy",
     "pyright", "flake8", "pylint", "pre-commit", "node", "npm", "npx", "yarn", "pnpm", "tsc", "eslint", "prettier",
     "jest", "vitest", "cargo", "rustc", "go", "gcc", "cc", "g++", "clang", "clang++", "javac", "java", "mvn", "gradle",
     "cmake", "ninja", "meson", "mkdir", "touch", "cp", "sed", "awk", "gawk", "mawk", "sort", "find", "xargs", "tee",
     "diff", "patch", "uv", "pip", "pip3"}
)  # fmt: skip


@dataclass(frozen=True)
class Verdict:
    decision: str  # allow | ask | deny
    reason: str = ""
    scope: str | None = None
    # What settled it (docs/provenance.md): "rule" (``rules`` names it), "approval" (a
    # scope the person granted), "proof" (shown harmless), "profile", "sandbox", "mode",
    # "analysis" (what the shell analysis could not see through).
    origin: str = "proof"
    rules: tuple[str, ...] = ()


ALLOW = Verdict("allow")  # proven: inside the workspace, not a secret, read-only
BY_PROFILE = Verdict("allow", origin="profile")
# When a call's accesses were allowed on different grounds, the call's origin is the
# one that leans most on configuration (an approval, a rule, the profile), not the proof.
_ALLOW_ORIGINS = ("approval", "rule", "profile", "sandbox", "proof")


def _allowed_by(ctx: Context, rules: tuple[Rule, ...]) -> Verdict:
    """An allow by the first of ``rules`` (from ``ctx.allowing``): a rule, or an approval."""
    rule = rules[0]
    granted = any(rule is g for g in ctx.granted)
    return Verdict("allow", origin="approval" if granted else "rule", rules=(rule.text,))


@dataclass(frozen=True)
class Context:
    call: ProposedCall
    snapshot: PermissionSnapshot
    rules: RuleSet
    granted: tuple[Rule, ...]

    @property
    def allowing(self) -> tuple[Rule, ...]:
        return self.rules.allow + self.granted

    @property
    def workspace(self) -> Path:
        return self.snapshot.workspace

    @property
    def profile(self) -> str:
        return self.snapshot.profile


def vote(call: ProposedCall, snapshot: PermissionSnapshot) -> Vote:
    rules = rules_of(snapshot.rules)
    ctx = Context(call, snapshot, rules, compile_scopes(tuple(snapshot.approvals)))
    if rules.broken_restrictions:
        return Vote(
            decision="ask",
            reason=f"{rules.broken_restrictions[0]} (an ask/deny rule that does not parse makes every call ask; fix it)",
            plugin=PLUGIN,
            origin="rule",
        )
    covering = [r.text for r in rules.deny if r.covers_tool(call.tool)]
    if covering:
        return Vote(
            decision="deny",
            reason=f"a deny rule covers every '{call.tool}' call",
            plugin=PLUGIN,
            origin="rule",
            rules=tuple(covering),
        )
    verdicts: list[Verdict] = []
    for access in call.accesses:
        verdicts.extend(_access(ctx, access))
    if not call.accesses:
        verdicts.append(_untargeted(ctx))
    denies = [v for v in verdicts if v.decision == "deny"]
    if denies:
        return _vote("deny", denies)
    covering = [r.text for r in rules.ask if r.covers_tool(call.tool)]
    if covering:
        return Vote(
            decision="ask",
            reason=f"an ask rule covers every '{call.tool}' call",
            plugin=PLUGIN,
            origin="rule",
            rules=tuple(covering),
        )
    asks = [v for v in verdicts if v.decision == "ask"]
    whole = [r for r in ctx.allowing if r.covers_tool(call.tool)]
    if asks and whole:
        by = _allowed_by(ctx, tuple(whole))
        return Vote(
            decision="allow",
            reason=f"an allow rule covers every '{call.tool}' call",
            plugin=PLUGIN,
            origin=by.origin,
            rules=by.rules,
        )
    if asks:
        scopes = [v.scope for v in asks]
        scope = SCOPE_SEPARATOR.join(dict.fromkeys(s for s in scopes if s)) if all(scopes) else None
        return _vote("ask", asks, scope=scope)
    return _vote("allow", verdicts)


def _vote(decision: str, verdicts: list[Verdict], scope: str | None = None) -> Vote:
    """The call's vote from the verdicts that decided it, with their origin and rules."""
    origins = [v.origin for v in verdicts if v.decision == decision]
    if decision == "allow":
        origin = next((o for o in _ALLOW_ORIGINS if o in origins), "proof")
    else:
        origin = origins[0] if origins else "proof"
    return Vote(
        decision=decision,  # type: ignore[arg-type]
        reason=_join(v.reason for v in verdicts if v.reason),
        plugin=PLUGIN,
        scope=scope,
        origin=origin,
        rules=tuple(dict.fromkeys(r for v in verdicts for r in v.rules)),
    )


_MANUAL = re.compile(
    r"^(?P<what>.+?) \(the manual profile asks before every (?P<kind>command|edit)\)$"
)


def _join(reasons: Iterable[str]) -> str:
    """The reasons of one vote, each said once. "The manual profile asks" is said once
    too, not once per sub-command (``echo`` is no reason to ask): what the call would
    write is named, what it only runs is not."""
    unique = list(dict.fromkeys(r for r in reasons if r))
    kinds: list[str] = []
    writes: list[str] = []
    others: list[str] = []
    for reason in unique:
        match = _MANUAL.match(reason)
        if match is None:
            others.append(reason)
            continue
        kinds.append(match["kind"])
        if match["kind"] == "edit":
            writes.append(match["what"])
    if not kinds:
        return "; ".join(unique)
    every = " and ".join(k for k in ("command", "edit") if k in kinds)
    head = f"the manual profile asks before every {every}"
    if writes:
        head += f" (this one {', '.join(writes)})"
    return "; ".join([head, *others])


def _access(ctx: Context, access: Access) -> list[Verdict]:
    if access.effect in (Effect.READ, Effect.WRITE):
        return [_path(ctx, access.effect, str(resolve(access.target)))]
    if access.effect == Effect.EXECUTE:
        return _command(ctx, access)
    if access.effect == Effect.NETWORK:
        return [_network(ctx, access)]
    return [Verdict("ask", f"an access of an unknown kind ({access.effect})", origin="analysis")]


# --- files -------------------------------------------------------------------------------


def _path(ctx: Context, effect: Effect, path: str, *, default: bool = True) -> Verdict:
    """Rules then the profile for one file access. ``default=False``: only rules count
    (for paths a shell command names, whose command the profile judges as a whole)."""
    tool, workspace = ctx.call.tool, ctx.workspace
    verb = "read" if effect == Effect.READ else "write"
    if effect == Effect.WRITE and ctx.snapshot.mode == "plan":
        return Verdict("deny", f"plan mode does not write files ({path})", origin="mode")
    for rule in ctx.rules.deny:
        if rule.matches_path(tool, effect, path, workspace):
            return Verdict(
                "deny", f"deny rule '{rule.text}' covers {verb} {path}", None, "rule", (rule.text,)
            )
    for rule in ctx.rules.ask:
        if rule.matches_path(tool, effect, path, workspace):
            return Verdict(
                "ask", f"ask rule '{rule.text}' covers {verb} {path}", None, "rule", (rule.text,)
            )
    allowing = tuple(r for r in ctx.allowing if r.matches_path(tool, effect, path, workspace))
    if allowing:
        return _allowed_by(ctx, allowing)
    if not default:
        return ALLOW
    inside = is_within(Path(path), resolve(workspace))
    if effect == Effect.READ:
        if inside:
            return ALLOW
        if ctx.profile == "full-access":
            return BY_PROFILE
        return Verdict(
            "ask",
            f"reads outside the workspace ({path})",
            scope("read", dir_glob(path)),
            "profile",
        )
    if inside and ctx.profile in ("assisted", "full-access"):
        return BY_PROFILE
    if inside:
        return Verdict(
            "ask",
            f"writes {path} (the manual profile asks before every edit)",
            scope("write", write_glob(path, workspace)),
            "profile",
        )
    return Verdict("ask", f"writes outside the workspace ({path})", origin="profile")


# --- commands ----------------------------------------------------------------------------


def _sandboxed(ctx: Context, access: Access) -> bool:
    """The command will run in this session's working sandbox. With the network too: a
    sandboxed command reaches it only through the egress proxy, which holds every
    connection to the domain rules and asks about the rest (ketch_sandbox)."""
    from ketch_tool_kit.sandbox import SANDBOXED, runs_sandboxed

    return ctx.snapshot.facts.get(SANDBOXED) is True and runs_sandboxed(ctx.call, access)


def _argvs(part: Command) -> list[tuple[tuple[str | None, ...], bool]]:
    """The command as run, plus each wrapper that ran it (deny/ask rules see them all)."""
    found = [(tuple(w.value for w in part.argv), part.extra_args)]
    found += [(tuple(w.value for w in wrapper), True) for wrapper in part.wrappers]
    return found


def _command(ctx: Context, access: Access) -> list[Verdict]:
    tool = ctx.call.tool
    cwd = Path(access.detail.get("cwd") or ctx.workspace)
    analysis = analyse_for(access, access.target, cwd, ctx.workspace)
    if analysis.too_complex:
        return [
            Verdict(
                "deny",
                f"the command has {len(analysis.parts)} simple commands, more than the {MAX_COMMANDS} ketch checks one by one; split it into smaller commands",
                origin="analysis",
            )
        ]
    verdicts: list[Verdict] = []
    # Deny and ask rules see every part, every wrapper and every file named.
    for part in analysis.parts:
        if part.kind == "assignment":
            continue
        for argv, extra in _argvs(part):
            for decision, rules in (("deny", ctx.rules.deny), ("ask", ctx.rules.ask)):
                rule = next(
                    (r for r in rules if r.matches_command(tool, argv, extra, strict=False)), None
                )
                if rule is not None:
                    verdicts.append(
                        Verdict(
                            decision,
                            f"{decision} rule '{rule.text}' matches '{part.text}'",
                            origin="rule",
                            rules=(rule.text,),
                        )
                    )
    verdicts.extend(_named_files(ctx, analysis))
    if any(v.decision == "deny" for v in verdicts):
        return verdicts
    plan = ctx.snapshot.mode == "plan"
    if not analysis.understood:
        reason = f"the command is not fully understood: {'; '.join(analysis.problems[:2])}"
        return [*verdicts, Verdict("deny" if plan else "ask", reason, origin="analysis")]
    rewritten = analysis.selection_rewritten
    if rewritten is not None:
        verdicts.append(
            Verdict(
                "deny" if plan else "ask",
                f"it writes {rewritten} and reads a tree recursively in the same line (which files it reads is decided after the check)",
                origin="analysis",
            )
        )
    full = ctx.profile == "full-access"
    if not full and not is_within(resolve(cwd), resolve(ctx.workspace)):
        verdicts.append(Verdict("ask", f"runs in {cwd}, outside the workspace", origin="profile"))
    sandboxed = _sandboxed(ctx, access)
    for part in analysis.parts:
        verdicts.append(_part(ctx, part, full=full, plan=plan, sandboxed=sandboxed))
    for redirect in analysis.redirects:
        if redirect.target is None or redirect.harmless:
            continue
        effect = Effect.WRITE if redirect.writes else Effect.READ if redirect.reads else None
        if effect is None:
            continue
        paths = resolve_word(redirect.target, redirect.cwds)
        if paths is None:
            verdicts.append(
                Verdict(
                    "deny" if plan else "ask",
                    f"redirects to a file only known at run time ({redirect.target.source})",
                    origin="analysis",
                )
            )
            continue
        for path in paths:
            verdicts.append(_path(ctx, effect, path))
    return verdicts


def _part(ctx: Context, part: Command, *, full: bool, plan: bool, sandboxed: bool) -> Verdict:
    tool = ctx.call.tool
    argv = tuple(w.value for w in part.argv)
    allowing = (
        tuple(
            r for r in ctx.allowing if r.matches_command(tool, argv, part.extra_args, strict=True)
        )
        if not plan and part.argv and part.kind != "wrapper"
        else ()
    )
    if allowing:
        return _allowed_by(ctx, allowing)
    if full and not plan:
        return BY_PROFILE
    if not part.read_only:
        reason = part.reasons[0]
        if plan:
            return Verdict(
                "deny", f"plan mode runs only read-only commands: {reason}", origin="mode"
            )
        if ctx.profile == "assisted" and sandboxed and _confined(part):
            return Verdict("allow", f"'{part.text}' runs inside the sandbox", origin="sandbox")
        return Verdict(
            "ask",
            f"runs '{part.text}': {reason}",
            shell_scope(argv, extra_args=part.extra_args)
            if part.kind == "command" and not part.privileged
            else None,
            "profile",
        )
    if part.index_refresh and not sandboxed and not _locks_off(ctx):
        if plan:
            return Verdict(
                "deny",
                f"plan mode runs only read-only commands: '{part.text}' refreshes .git/index (run git --no-optional-locks)",
                origin="mode",
            )
        return Verdict(
            "ask",
            f"'{part.text}' refreshes .git/index (git's stat cache) outside a sandbox; "
            "with the sandbox .git is read-only, or run git --no-optional-locks",
            shell_scope(argv, extra_args=part.extra_args),
            "analysis",
        )
    problem, read_scopes = _paths(ctx, part, sandboxed=sandboxed)
    manual = ctx.profile == "manual"
    if problem is not None:
        scopes = ([shell_scope(argv, extra_args=part.extra_args)] if manual else []) + read_scopes
        joined = SCOPE_SEPARATOR.join(s for s in scopes if s) if scopes and all(scopes) else None
        return Verdict(
            "deny" if plan else "ask",
            f"'{part.text}' {problem}",
            joined,
            "mode" if plan else "analysis",
        )
    if part.kind in ("wrapper", "assignment", "declaration"):
        return ALLOW  # proven harmless on its own; the command it runs is judged itself
    if manual:
        return Verdict(
            "ask",
            f"runs '{part.text}' (the manual profile asks before every command)",
            shell_scope(argv, extra_args=part.extra_args),
            "profile",
        )
    return ALLOW


def _locks_off(ctx: Context) -> bool:
    """The shell tool runs git with GIT_OPTIONAL_LOCKS=0 (it says so in the access)."""
    return any(
        str((a.detail.get("env") or {}).get("GIT_OPTIONAL_LOCKS")) == "0"
        for a in ctx.call.accesses
        if isinstance(a.detail.get("env"), dict)
    )


def _confined(part: Command) -> bool:
    """A program the sandbox bounds well enough for assisted (see SANDBOX_CONFINED)."""
    program = part.program or ""
    if part.kind != "command" or part.privileged or part.network or part.links:
        return False
    system = "/" not in program or os.path.dirname(os.path.normpath(program)) in (
        "/usr/bin",
        "/bin",
        "/usr/local/bin",
    )
    return system and (part.name or "") in SANDBOX_CONFINED


def _paths(ctx: Context, part: Command, *, sandboxed: bool) -> tuple[str | None, list[str | None]]:
    """What a read-only command names that is outside the workspace, a secret, or only
    known at run time (with the read scopes that would allow it); (None, []) when every
    path is inside and harmless."""
    root = resolve(ctx.workspace)
    found: str | None = None
    scopes: list[str | None] = []
    tool = ctx.call.tool

    def allowed(path: str) -> bool:
        return any(r.matches_path(tool, Effect.READ, path, ctx.workspace) for r in ctx.allowing)

    for use in part.uses:
        if harmless_path(use.word.value):
            continue
        paths = resolve_word(use.word, use.cwds)
        if paths is None:
            return f"names {use.word.source}, a place only known at run time", [None]
        for path in paths:
            if not is_within(Path(path), root) and not allowed(path):
                found = found or f"reads {path}, outside the workspace"
                scopes.append(scope("read", dir_glob(path)))
                continue
            if use.kind in ("read", "link") and not allowed(path):
                why = secret_reason(path, within=ctx.workspace)
                if why:
                    return f"reads {path}, which looks like a secret ({why})", [None]
            if use.kind in ("tree", "vtree"):
                problem = _tree(ctx, use, path, sandboxed=sandboxed, allowed=allowed)
                if problem is not None:
                    return problem, [None]
    return found, list(dict.fromkeys(scopes))


def _tree(
    ctx: Context, use: PathUse, path: str, *, sandboxed: bool, allowed: Callable[[str], bool]
) -> str | None:
    """Why a recursive read of ``path`` is not proven: what *that* program would read
    there (its own walk: hidden and ignored files, overrides, symlinks followed) holds a
    secret (masked in the sandbox, so it counts only without one) or leaves the
    workspace (with or without the sandbox)."""
    if not os.path.isdir(path):
        why = None if sandboxed or allowed(path) else secret_reason(path, within=ctx.workspace)
        return f"reads {path}, which looks like a secret ({why})" if why else None
    walk = (
        use.walk
        if isinstance(use.walk, Walk)
        else (EVERYTHING if use.kind == "tree" else RG_DEFAULT)
    )
    cwd = str(use.cwds[0]) if use.cwds else str(ctx.workspace)
    found = reach(path, walk, workspace=ctx.workspace, cwd=cwd, masked=sandboxed)
    if found is None or (
        found.kind == "secret" and allowed(os.path.join(resolve(ctx.workspace), found.path))
    ):
        return None
    return found.describe(path) + (" (a sandbox would mask it)" if found.kind == "secret" else "")


def _named_files(ctx: Context, analysis: Analysis) -> list[Verdict]:
    """Deny/ask path rules applied to the files a command names: what it writes and
    reads by the grammar, and for unknown programs every argument that is an existing
    file (a possible read)."""
    if not (ctx.rules.deny or ctx.rules.ask):
        return []
    verdicts: list[Verdict] = []
    for part in analysis.parts:
        for use in part.uses:
            effect = Effect.WRITE if use.kind == "write" else Effect.READ
            for path in resolve_word(use.word, use.cwds) or []:
                verdict = _path(ctx, effect, path, default=False)
                if verdict.decision != "allow":
                    verdicts.append(verdict)
        for word in part.args:
            for path in resolve_word(word, part.cwds) or []:
                if os.path.exists(path):
                    verdict = _path(ctx, Effect.READ, path, default=False)
                    if verdict.decision != "allow":
                        verdicts.append(verdict)
    return verdicts


# --- network and the rest ----------------------------------------------------------------


def _network(ctx: Context, access: Access) -> Verdict:
    tool, url = ctx.call.tool, access.target
    host = access.detail.get("host")
    for rule in ctx.rules.deny:
        if rule.matches_url(tool, url, None) or (
            host and rule.matches_url(tool, f"//{host}", None)
        ):
            return Verdict(
                "deny", f"deny rule '{rule.text}' covers {url}", None, "rule", (rule.text,)
            )
    for rule in ctx.rules.ask:
        if rule.matches_url(tool, url, None) or (
            host and rule.matches_url(tool, f"//{host}", None)
        ):
            return Verdict(
                "ask", f"ask rule '{rule.text}' covers {url}", None, "rule", (rule.text,)
            )
    parsed = parse_host(url)
    if parsed is None:
        return Verdict(
            "ask", f"the host of {url!r} cannot be read unambiguously", origin="analysis"
        )
    allowing = tuple(rule for rule in ctx.allowing if rule.matches_url(tool, url, host))
    if allowing:
        return _allowed_by(ctx, allowing)
    if ctx.profile == "full-access":
        return BY_PROFILE
    name, port = parsed
    return Verdict(
        "ask", f"connects to {name}", f"web({name}{':' + str(port) if port else ''})", "profile"
    )


def _untargeted(ctx: Context) -> Verdict:
    """A call that names nothing it touches: judged by its declared effects."""
    call = ctx.call
    if not call.effects and not call.mutating:
        return Verdict("allow", f"'{call.tool}' touches nothing")
    if ctx.profile == "full-access":
        return BY_PROFILE
    if ctx.snapshot.mode == "plan" and call.mutating:
        return Verdict(
            "deny", f"plan mode does not run '{call.tool}', which changes things", origin="mode"
        )
    effects = ", ".join(sorted(e.value for e in call.effects)) or "unknown effects"
    try:
        scope: str | None = parse_rule(call.tool).text
    except RuleError:
        scope = None
    return Verdict(
        "ask", f"'{call.tool}' ({effects}) does not say what it touches", scope, "profile"
    )
