"""What a receipt must show to pass ``ketch verify --policy FILE`` (a small TOML file).

```toml
version = 1                                # this format
sandboxed = true                           # no call ran a program outside the sandbox
write_origins = ["person", "proof"]        # every call that may have written was decided by one of these
network = ["pypi.org", "*.pythonhosted.org"]  # every connection allowed went to one of these hosts
models = ["gpt-4.1*", "claude-sonnet-*"]   # every model that answered matches one (globs)
deny_origins = ["hook"]                    # no call was allowed by one of these
max_cost_usd = 2.0                         # the receipt's responses cost at most this (unpriced fails)
journal = true                             # the journal must be checked against this machine's store
```

Every key is optional. A call "may have written" when it had a write effect, changed
files (as the checkpoints measured), or ran a program that was not proven read-only.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from ketch.api import KetchError
from ketch_policy_kit.globs import match_any_name

ALLOWED = ("allow",)


class Policy(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    version: int = 1
    sandboxed: bool = False
    write_origins: list[str] | None = None
    network: list[str] | None = None
    models: list[str] | None = None
    deny_origins: list[str] | None = None
    max_cost_usd: float | None = None
    journal: bool = False


def load(path: Path) -> Policy:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise KetchError(
            f"--policy {path}: cannot read it ({exc.strerror or exc})", exit_code=2
        ) from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise KetchError(f"--policy {path}: not TOML ({exc})", exit_code=2) from None
    try:
        policy = Policy.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "policy"
        what = "unknown key" if first["type"] == "extra_forbidden" else first["msg"]
        raise KetchError(f"--policy {path}: {where}: {what}", exit_code=2) from None
    if policy.version != 1:
        raise KetchError(
            f"--policy {path}: version {policy.version} is not known (this ketch reads version 1)",
            exit_code=2,
        )
    return policy


def allowed(call: dict[str, Any]) -> bool:
    return call.get("ran") is not None


def may_have_written(call: dict[str, Any]) -> bool:
    effects = {e for d in call.get("decisions") or () for e in d.get("effects") or ()}
    if "write" in effects or call.get("changed"):
        return True
    return "execute" in effects and call.get("decidedBy") != "proof"


def _name(call: dict[str, Any]) -> str:
    agent = f" (subagent {call['agent']})" if call.get("agent") else ""
    return f"call {call.get('id')} ({call.get('tool')}, turn {call.get('turn')}){agent}"


def check(policy: Policy, predicate: dict[str, Any], journal_checked: bool) -> list[str]:
    """One line per way the receipt breaks ``policy`` (empty: it complies)."""
    failures: list[str] = []
    calls = [c for c in predicate.get("calls") or () if isinstance(c, dict)]
    for call in calls:
        if not allowed(call):
            continue
        if policy.sandboxed and call.get("sandboxed") is False:
            why = "; ".join(
                str(s.get("reason")) for s in call.get("sandbox") or () if s.get("reason")
            )
            failures.append(
                f"policy sandboxed: {_name(call)} ran a program outside the sandbox"
                + (f" ({why})" if why else "")
                + f", allowed by {call.get('decidedBy') or 'unknown'}"
            )
        origin = call.get("decidedBy") or "unknown"
        if (
            policy.write_origins is not None
            and may_have_written(call)
            and origin not in policy.write_origins
        ):
            failures.append(
                f"policy write_origins: {_name(call)} may have written and was decided by {origin}, "
                f"not {' or '.join(policy.write_origins)}"
            )
        if policy.deny_origins is not None and origin in policy.deny_origins:
            failures.append(f"policy deny_origins: {_name(call)} was allowed by {origin}")
        if policy.network is not None:
            failures += _network(policy.network, call)
    if policy.models is not None:
        for model in predicate.get("models") or ():
            name = str(model.get("model") or "")
            if not match_any_name(name, policy.models):
                failures.append(
                    f"policy models: {model.get('provider')}/{name} answered, not in the list"
                )
    if policy.max_cost_usd is not None:
        usage = predicate.get("usage") or {}
        cost = usage.get("costUsd")
        if cost is None and usage.get("responses"):
            failures.append("policy max_cost_usd: the cost is not known (a model had no price)")
        elif cost is not None and float(cost) > policy.max_cost_usd:
            failures.append(
                f"policy max_cost_usd: the session cost ${cost}, more than ${policy.max_cost_usd}"
            )
    if policy.journal and not journal_checked:
        failures.append("policy journal: the journal was not checked against the store")
    return failures


def _network(patterns: list[str], call: dict[str, Any]) -> list[str]:
    """The hosts a call reached that no pattern names: its sandboxed commands'
    connections, and the URL of a tool that fetches one itself (web_fetch)."""
    hosts = [
        (str(c.get("host") or ""), c.get("port"))
        for c in call.get("network") or ()
        if c.get("allowed")
    ]
    effects = {e for d in call.get("decisions") or () for e in d.get("effects") or ()}
    if "network" in effects and not call.get("network"):
        url = ((call.get("ran") or {}).get("input") or {}).get("url")
        if not isinstance(url, str):
            return [
                f"policy network: {_name(call)} used the network, and the receipt does not say where"
            ]
        from urllib.parse import urlsplit

        parts = urlsplit(url)
        hosts.append((parts.hostname or "", parts.port))
    return [
        f"policy network: {_name(call)} connected to {host}{f':{port}' if port else ''}, not in the list"
        for host, port in hosts
        if not match_any_name(host, patterns)
    ]
