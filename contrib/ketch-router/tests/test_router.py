"""ketch-router's tests, written with ketch's plugin author's kit.

Two scripted backends (provider kinds ``small`` and ``big``) stand in for real
services; the router is configured in the user config.toml exactly as a user would,
and every test runs real turns through the kernel with ``provider_name="router"``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from ketch import hookimpl
from ketch.errors import KetchError
from ketch.providers import ProviderConfig, ProviderKind
from ketch.testing import Harness, ScriptedProvider, error, text

import ketch_router

CONFIG = """
[providers.router]
kind = "router"

[[providers.router.routes]]
provider = "small"
model = "small-1"
max_input_tokens = 400

[[providers.router.routes]]
provider = "big"
name = "smart"
"""


class Backend:
    """A provider kind whose clients play a script and are kept for inspection."""

    def __init__(self, kind: str, script: list[dict[str, Any]]) -> None:
        self.kind = kind
        self.script = script
        self.clients: list[ScriptedProvider] = []

    def create(self, config: ProviderConfig, key: Any) -> ScriptedProvider:
        client = ScriptedProvider(
            self.script, name=config.name, model=config.model or "", config=config
        )
        self.clients.append(client)
        return client

    @property
    def requests(self) -> list[Any]:
        return [r for c in self.clients for r in c.requests]


class Backends:
    def __init__(self, **scripts: list[dict[str, Any]]) -> None:
        self.by_kind = {kind: Backend(kind, script) for kind, script in scripts.items()}

    def __getitem__(self, kind: str) -> Backend:
        return self.by_kind[kind]

    @hookimpl
    def ketch_register_providers(self, register: Callable[[ProviderKind], None]) -> None:
        for backend in self.by_kind.values():
            register(
                ProviderKind(
                    kind=backend.kind,
                    create=backend.create,
                    needs_key=False,
                    default_model=f"{backend.kind}-default",
                )
            )


def routed(
    make: Callable[..., Harness], backends: Backends, config: str = CONFIG, **kw: Any
) -> Harness:
    return make(
        plugins=[("router", ketch_router), ("backends", backends)],
        bundled=["guards"],
        config=config,
        provider_name="router",
        **kw,
    )


def test_small_requests_take_the_first_route_large_ones_the_next(
    ketch_harness: Callable[..., Harness],
) -> None:
    backends = Backends(small=[text("from small")], big=[text("from big")])
    harness = routed(ketch_harness, backends)
    assert harness.run("hi").text == "from small"
    assert backends["small"].requests[0].model == "small-1"

    harness = routed(ketch_harness, backends)
    assert harness.run("x" * 4000).text == "from big"  # ~1000 tokens > max_input_tokens
    assert backends["big"].requests[0].model == "big-default"  # the kind's default model
    assert harness.session.provider.last_route.provider == "big"


def test_a_model_alias_picks_its_route_first(ketch_harness: Callable[..., Harness]) -> None:
    backends = Backends(small=[text("small")], big=[text("big")])
    harness = routed(ketch_harness, backends, settings={"model": "smart"})
    assert harness.run("hi").text == "big"
    assert backends["small"].requests == []
    assert harness.of_type("session")[0].model == "smart"


def test_failure_before_output_falls_back_to_the_next_route(
    ketch_harness: Callable[..., Harness],
) -> None:
    backends = Backends(small=[error("network", "connection refused")], big=[text("rescued")])
    harness = routed(ketch_harness, backends)
    end = harness.run("hi")
    assert (end.stop_reason, end.text) == ("end_turn", "rescued")
    assert len(backends["small"].requests) == 1 and len(backends["big"].requests) == 1
    assert harness.of_type("error") == []  # the fallback is invisible to the loop


def test_failure_after_output_is_final(ketch_harness: Callable[..., Harness]) -> None:
    backends = Backends(
        small=[{**error("server", "stream died"), "after_text": "partial "}], big=[text("never")]
    )
    harness = routed(ketch_harness, backends)
    end = harness.run("hi")
    assert end.stop_reason == "error"
    assert backends["big"].requests == []
    assert "stream died" in harness.of_type("error")[-1].message


def test_a_bad_request_does_not_fall_back(ketch_harness: Callable[..., Harness]) -> None:
    backends = Backends(small=[error("bad_request", "unknown field")], big=[text("never")])
    end = routed(ketch_harness, backends).run("hi")
    assert end.stop_reason == "error" and backends["big"].requests == []


def test_every_route_failing_names_each_reason_and_keeps_the_last_kind(
    ketch_harness: Callable[..., Harness],
) -> None:
    backends = Backends(
        small=[error("network", "connection refused")], big=[error("auth", "invalid key")]
    )
    harness = routed(ketch_harness, backends)
    end = harness.run("hi")
    assert end.stop_reason == "error"
    [event] = harness.of_type("error")
    assert event.kind == "auth"
    assert (
        "small:small-1: network: connection refused" in event.message
        and "smart: auth: invalid key" in event.message
    )


def test_a_route_to_an_unknown_provider_falls_back(ketch_harness: Callable[..., Harness]) -> None:
    config = CONFIG.replace('provider = "small"', 'provider = "nowhere"')
    backends = Backends(small=[], big=[text("rescued")])
    assert routed(ketch_harness, backends, config=config).run("hi").text == "rescued"


def test_a_request_no_route_takes_is_a_context_overflow(
    ketch_harness: Callable[..., Harness],
) -> None:
    config = CONFIG.replace('name = "smart"', 'name = "smart"\nmax_input_tokens = 500')
    backends = Backends(small=[text("never")], big=[text("never")])
    harness = routed(ketch_harness, backends, config=config)
    end = harness.run("x" * 8000)
    assert end.stop_reason == "context_overflow"
    assert backends["small"].requests == [] and backends["big"].requests == []


def test_routes_are_checked_when_the_provider_is_built(
    ketch_harness: Callable[..., Harness],
) -> None:
    backends = Backends(small=[], big=[])
    for config, message in [
        ('[providers.router]\nkind = "router"\n', "a router needs routes"),
        (
            '[providers.router]\nkind = "router"\n[[providers.router.routes]]\nmodel = "m"\n',
            "route 1: provider: Field required",
        ),
        (
            '[providers.router]\nkind = "router"\n[[providers.router.routes]]\nprovider = "router"\n',
            "cannot route to itself",
        ),
    ]:
        harness = routed(ketch_harness, backends, config=config)
        with pytest.raises(KetchError, match=message):
            harness.run("hi")


def test_models_lists_the_routes(ketch_harness: Callable[..., Harness]) -> None:
    import asyncio

    harness = routed(ketch_harness, Backends(small=[], big=[]))
    models = asyncio.run(harness.session.provider.list_models())
    assert [m.id for m in models] == ["small:small-1", "smart"]
