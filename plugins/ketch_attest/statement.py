"""The in-toto Statement of a receipt: its subjects and ketch's predicate (docs/provenance.md).

Privacy by default: no prompt, no file content, no tool output, no model text. A tool
input keeps its flags and numbers and the short one-line strings that say *what* a
call touched (a path, a command line, a URL, a pattern); every other string, list or
object is replaced by its SHA-256 and length. ``--include-prompts`` puts the prompts
and the full inputs in. ``--hash-paths`` replaces every path (subject names, changed
files, path inputs) by HMAC-SHA-256 under a random per-receipt salt that the
predicate discloses (so anyone holding the repository can check the subjects), drops
command lines and decision reasons (they name paths), and keeps rule texts (they are
your policy, not the workspace's content).
"""

from __future__ import annotations

import datetime
import hashlib
import hmac
import json
import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ketch_attest import gitrepo
from ketch_attest.journal import DIGEST_ALGORITHM, Call, Facts

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://ketch.dev/provenance/agent-session/v1"
JOURNAL_SUBJECT = "ketch:journal/"
TREE_SUBJECT = "git:tree"
HASHED = "hmac-sha256:"
# Input keys whose short, one-line string values say what a call touched.
NAMING_KEYS = frozenset(
    {"path", "file_path", "cwd", "command", "url", "pattern", "glob", "query", "name", "reason"}
)
PATH_KEYS = frozenset({"path", "file_path", "cwd"})
MAX_KEPT = 500  # longer strings are digested


@dataclass(frozen=True)
class Options:
    first: int = 1
    last: int | None = None
    include_prompts: bool = False
    hash_paths: bool = False
    salt: bytes = b""

    @classmethod
    def make(cls, first: int, last: int | None, include_prompts: bool, hash_paths: bool) -> Options:
        return cls(
            first, last, include_prompts, hash_paths, secrets.token_bytes(16) if hash_paths else b""
        )

    def selects(self, turn: int) -> bool:
        return turn >= self.first and (self.last is None or turn <= self.last)


def digest_of(value: Any) -> str:
    data = (
        value.encode("utf-8", "surrogatepass")
        if isinstance(value, str)
        else json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    )
    return "sha256:" + hashlib.sha256(data).hexdigest()


def hash_path(salt: bytes, path: str) -> str:
    return (
        HASHED + hmac.new(salt, path.encode("utf-8", "surrogateescape"), hashlib.sha256).hexdigest()
    )


class Builder:
    def __init__(self, facts: Facts, workspace: Path, options: Options) -> None:
        self.facts, self.workspace, self.options = facts, workspace, options

    # --- names -------------------------------------------------------------------------

    def path(self, rel: str) -> str:
        return hash_path(self.options.salt, rel) if self.options.hash_paths else rel

    def tool_input(self, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is None:
            return None
        if self.options.include_prompts:
            return value
        return {key: self._kept(key, item) for key, item in value.items()}

    def _kept(self, key: str, item: Any) -> Any:
        if item is None or isinstance(item, bool | int | float):
            return item
        if (
            isinstance(item, str)
            and key in NAMING_KEYS
            and len(item) <= MAX_KEPT
            and "\n" not in item
        ):
            if not self.options.hash_paths:
                return item
            if key in PATH_KEYS:
                return self.path(item)
        return {
            "digest": digest_of(item),
            "length": len(item) if isinstance(item, str | list | dict) else None,
        }

    # --- the statement ------------------------------------------------------------------

    def statement(self, created: float) -> dict[str, Any]:
        calls = [c for c in self.facts.calls if self.options.selects(c.turn)]
        turns = [t for t in self.facts.turns if self.options.selects(t.number)]
        changed = sorted(
            {p for t in turns for p in t.changed} | {p for c in calls for p in c.changed}
        )
        repo = gitrepo.find(self.workspace)
        subjects, present, removed = self._file_subjects(changed, repo)
        git = self._git(repo, changed) if repo is not None else None
        if git is not None:
            subjects.append({"name": TREE_SUBJECT, "digest": {"gitTree": git["tree"]}})
        subjects.append(
            {
                "name": JOURNAL_SUBJECT + self.facts.session_id,
                "digest": {"sha256": self.facts.digest},
            }
        )
        predicate: dict[str, Any] = {
            "version": 1,
            "generator": {"name": "ketch", "version": _version()},
            "createdAt": datetime.datetime.fromtimestamp(created, datetime.UTC)
            .isoformat(timespec="seconds")
            .replace("+00:00", "Z"),
            "session": {
                "id": self.facts.session_id,
                "turns": {
                    "first": turns[0].number if turns else None,
                    "last": turns[-1].number if turns else None,
                },
                "runs": self.facts.runs,
            },
            "journal": {
                "algorithm": DIGEST_ALGORITHM,
                "entries": self.facts.entries,
                "digest": "sha256:" + self.facts.digest,
            },
            **self._usage(),
            "turns": [self._turn(t) for t in turns],
            "calls": [self._call(c) for c in calls],
            "files": {
                "changed": [self.path(p) for p in present],
                "removed": [self.path(p) for p in removed],
            },
            "privacy": {
                "prompts": self.options.include_prompts,
                "inputs": "full" if self.options.include_prompts else "named",
                "paths": "hmac-sha256" if self.options.hash_paths else "plain",
                **({"salt": self.options.salt.hex()} if self.options.hash_paths else {}),
            },
        }
        if git is not None:
            predicate["git"] = git
        return {
            "_type": STATEMENT_TYPE,
            "subject": subjects,
            "predicateType": PREDICATE_TYPE,
            "predicate": predicate,
        }

    def _file_subjects(
        self, changed: list[str], repo: gitrepo.Repo | None
    ) -> tuple[list[dict[str, Any]], list[str], list[str]]:
        subjects: list[dict[str, Any]] = []
        present: list[str] = []
        removed: list[str] = []
        for rel in changed:
            data = read_subject(self.workspace / rel)
            if data is None:
                removed.append(rel)
                continue
            digest = {"sha256": hashlib.sha256(data).hexdigest()}
            if repo is not None:
                digest["gitBlob"] = gitrepo.blob_id(repo, data)
            subjects.append({"name": self.path(rel), "digest": digest})
            present.append(rel)
        return subjects, present, removed

    def _git(self, repo: gitrepo.Repo, changed: list[str]) -> dict[str, Any]:
        head = gitrepo.resolve(repo, "HEAD^{commit}")
        head_tree = gitrepo.tree_of(repo, head) if head else None
        tree = gitrepo.overlay_tree(repo, head, self.workspace, changed)
        return {
            "objectFormat": repo.algorithm,
            "head": head,
            "tree": tree,
            "committed": tree == head_tree,  # HEAD already holds exactly these changes
        }

    def _usage(self) -> dict[str, Any]:
        rows = [u for u in self.facts.usage if self.options.selects(u.turn)]
        groups: dict[tuple[str, str], list[Any]] = {}
        for u in rows:
            groups.setdefault((u.provider, u.model), []).append(u)
        models = [{"provider": p, "model": m, **_totals(us)} for (p, m), us in groups.items()]
        if not models:  # no response in the range: the models the runs named
            seen = dict.fromkeys((r["provider"], r["model"]) for r in self.facts.runs)
            models = [{"provider": p, "model": m, **_totals([])} for p, m in seen]
        return {
            "models": models,
            "usage": {
                **_totals(rows),
                "unpricedResponses": sum(1 for u in rows if u.cost_usd is None),
            },
        }

    def _turn(self, turn: Any) -> dict[str, Any]:
        data: dict[str, Any] = {
            "number": turn.number,
            "stopReason": turn.stop_reason,
            "changed": [self.path(p) for p in turn.changed],
        }
        if self.options.include_prompts:
            data["prompt"] = turn.prompt
        return data

    def _call(self, call: Call) -> dict[str, Any]:
        decisions = [self._decision(d) for d in call.decisions]
        first = decisions[0] if decisions else None
        data: dict[str, Any] = {
            "id": call.id,
            "turn": call.turn,
            "tool": call.tool,
            "proposed": {
                "input": self.tool_input(call.proposed),
                "inputDigest": digest_of(call.proposed or {}),
            },
            "ran": None
            if call.ran is None
            else {
                "input": self.tool_input(call.ran),
                "inputDigest": digest_of(call.ran),
                "rewritten": call.ran != (call.proposed or {}),
            },
            "outcome": call.outcome or ("not run" if call.ran is None else "unknown"),
            "decision": first["decision"] if first else None,
            "approved": first.get("approved") if first else None,
            "decidedBy": first["origin"] if first else None,
            "decisions": decisions,
            "mode": call.mode,
            "profile": call.profile,
            "sandboxed": call.sandboxed,
            "sandbox": call.sandbox,
            "network": call.network,
            "changed": [self.path(p) for p in call.changed],
            "journal": call.journal,
        }
        if call.agent is not None:
            data["agent"] = call.agent
        return data

    def _decision(self, d: dict[str, Any]) -> dict[str, Any]:
        out = {k: v for k, v in d.items() if v not in (None, "", [])}
        out.setdefault("decision", "")
        out.setdefault("origin", "")
        if self.options.hash_paths:
            out.pop("reason", None)
            out.pop("scope", None)
        elif isinstance(out.get("reason"), str):
            out["reason"] = self._relative(out["reason"])
        return out

    def _relative(self, text: str) -> str:
        """Workspace paths in a reason, relative (the receipt does not say where you work)."""
        for root in dict.fromkeys((str(self.workspace), os.path.realpath(self.workspace))):
            text = text.replace(root + os.sep, "").replace(root, ".")
        return text


def _totals(rows: list[Any]) -> dict[str, Any]:
    """Responses, tokens, and the cost (None unless every response had a known price)."""
    priced = all(u.cost_usd is not None for u in rows)
    return {
        "responses": len(rows),
        "inputTokens": sum(u.input_tokens for u in rows),
        "outputTokens": sum(u.output_tokens for u in rows),
        "cachedTokens": sum(u.cached_tokens for u in rows),
        "costUsd": round(sum(float(u.cost_usd) for u in rows), 6) if rows and priced else None,
    }


def read_subject(path: Path) -> bytes | None:
    """A subject's bytes: a regular file's content, a symbolic link's target (never
    followed); None for what is gone or is neither."""
    try:
        st = path.lstat()
    except OSError:
        return None
    if stat.S_ISLNK(st.st_mode):
        return os.fsencode(os.readlink(path))
    if stat.S_ISREG(st.st_mode):
        try:
            return path.read_bytes()
        except OSError:
            return None
    return None


def _version() -> str:
    try:
        from ketch.api import __version__

        return str(__version__)
    except ImportError:  # pragma: no cover
        return "unknown"
