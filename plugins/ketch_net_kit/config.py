"""``[sandbox.network]``: the domain rules, composed from the config layers.

```toml
[sandbox.network]
allow = ["pypi.org", "files.pythonhosted.org", "*.github.com"]
deny = ["gist.github.com"]
read_only = ["example.org"]          # plain-HTTP GET/HEAD only
local = ["registry.corp.internal"]   # may be reached at private/loopback addresses

[sandbox.network.profiles.full-access]
allow = ["*"]                        # only under that profile

[sandbox.network.inject."api.test.local"]   # user config only (see docs/sandbox.md)
placeholder = "KETCH_PLACEHOLDER_TOKEN"
env = "REAL_TOKEN"                   # ketch's own environment variable with the secret
header = "Authorization"
```

The user's layers (user config, environment, command line) add up. A workspace's
``.ketch/config.toml`` only narrows: its ``deny`` and ``read_only`` entries add, its
``allow`` and ``local`` lists keep only the user's entries they name (an entry the
user's rules do not cover would widen, and is ignored with a notice), and it never sets
``inject``. Widening from a workspace waits for trust by content (issue 23): until then
it is ignored whatever the workspace's trust. An empty list allows nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field

from ketch_net_kit.rules import NetworkRules, Pattern, parse_patterns

KEYS = ("allow", "deny", "read_only", "local")


class NetworkLists(BaseModel):
    model_config = ConfigDict(extra="forbid")

    allow: list[str] = Field(default_factory=list)
    deny: list[str] = Field(default_factory=list)
    read_only: list[str] = Field(default_factory=list)
    local: list[str] = Field(default_factory=list)


class InjectSettings(BaseModel):
    """A placeholder the proxy swaps for a real secret, for one host, over plain HTTP."""

    model_config = ConfigDict(extra="forbid")

    placeholder: str = Field(min_length=12, max_length=200)
    env: str = Field(min_length=1, max_length=200)  # the variable in ketch's environment
    header: str = Field("Authorization", min_length=1, max_length=100)


class NetworkSettings(NetworkLists):
    profiles: dict[str, NetworkLists] = Field(default_factory=dict)
    inject: dict[str, InjectSettings] = Field(default_factory=dict)


class LayerLike(Protocol):
    name: str
    source: str
    data: dict[str, Any]
    error: str | None


def network_table(data: dict[str, Any]) -> dict[str, Any]:
    sandbox = data.get("sandbox")
    table = sandbox.get("network") if isinstance(sandbox, dict) else None
    return table if isinstance(table, dict) else {}


def compose(
    layers: Iterable[LayerLike], profile: str, *, workspace_widens: bool = False
) -> NetworkRules:
    """The rules in force under ``profile``. Never raises: a bad entry is an error line
    (a bad ``deny`` or ``read_only`` entry empties the allow list: it fails closed)."""
    user: dict[str, list[Pattern]] = {key: [] for key in KEYS}
    workspace: dict[str, tuple[Pattern, ...] | None] = {key: None for key in KEYS}
    managed: dict[str, tuple[Pattern, ...] | None] = {key: None for key in KEYS}
    errors: list[str] = []
    notices: list[str] = []
    for layer in layers:
        if layer.error:
            continue
        table = network_table(layer.data)
        if not table:
            continue
        tables = [(table, "[sandbox.network]")]
        profiles = table.get("profiles")
        if isinstance(profiles, dict) and isinstance(profiles.get(profile), dict):
            tables.append((profiles[profile], f"[sandbox.network.profiles.{profile}]"))
        for part, where in tables:
            for key in KEYS:
                if key not in part:
                    continue
                found = parse_patterns(part[key], f"{layer.source}: {where} {key}", errors)
                if layer.name == "managed":  # the system-wide policy: bounds, never widens
                    managed[key] = (managed[key] or ()) + found
                elif layer.name != "workspace" or workspace_widens:
                    user[key] += found
                else:
                    workspace[key] = (workspace[key] or ()) + found
        if layer.name == "workspace" and table.get("inject") and not workspace_widens:
            notices.append(
                f"{layer.source}: [sandbox.network.inject] is ignored: only your own config can hand a secret to the proxy"
            )
    allow = _narrowed(user["allow"], workspace["allow"], "allow", notices)
    local = _narrowed(user["local"], workspace["local"], "local", notices)
    # The managed policy's allow/local are an upper bound on everyone's (an entry stays
    # only inside one of them; the policy never allows by itself); its deny/read_only
    # add (docs/managed.md).
    allow = _bounded(allow, managed["allow"])
    local = _bounded(local, managed["local"])
    deny = user["deny"] + list(workspace["deny"] or ()) + list(managed["deny"] or ())
    read_only = (
        user["read_only"] + list(workspace["read_only"] or ()) + list(managed["read_only"] or ())
    )
    if any(" deny: " in e or " read_only: " in e for e in errors):
        allow = []  # a deny rule that did not parse: allow nothing by the list (every host asks)
        notices.append(
            "[sandbox.network]: a deny or read_only entry did not parse, so no host is allowed by the list until it is fixed"
        )
    return NetworkRules(
        allow=tuple(allow),
        deny=tuple(deny),
        read_only=tuple(read_only),
        local=tuple(local),
        errors=tuple(errors),
        notices=tuple(notices),
    )


def _bounded(entries: list[Pattern], bound: tuple[Pattern, ...] | None) -> list[Pattern]:
    if bound is None:
        return list(entries)
    return [e for e in entries if any(b.covers(e) for b in bound)]


def _narrowed(
    user: list[Pattern], workspace: tuple[Pattern, ...] | None, key: str, notices: list[str]
) -> list[Pattern]:
    if workspace is None:
        return list(user)
    kept = [w for w in workspace if any(u.covers(w) for u in user)]
    wider = [str(w) for w in workspace if w not in kept]
    if wider:
        notices.append(
            f"the workspace's [sandbox.network] {key} entries {', '.join(repr(w) for w in wider)} are ignored: "
            "a workspace can narrow your network rules, not widen them (add them to your own config)"
        )
    return kept


def inject_rules(layers: Iterable[LayerLike]) -> dict[str, InjectSettings]:
    """``[sandbox.network.inject]`` from the user's own layers (never the workspace's)."""
    found: dict[str, InjectSettings] = {}
    for layer in layers:
        if layer.error or layer.name in ("workspace", "managed"):
            continue
        table = network_table(layer.data).get("inject")
        if not isinstance(table, dict):
            continue
        for host, value in table.items():
            try:
                found[host] = InjectSettings.model_validate(value)
            except ValueError:
                continue  # reported by the settings section's validation
    return found
