"""The ``router`` provider kind: picks one of several configured providers per request.

Configuration (``config.toml``)::

    default_provider = "router"

    [providers.router]
    kind = "router"

    [[providers.router.routes]]          # tried first ...
    provider = "local"                   # a [providers.NAME] table, or a kind
    model = "qwen2.5-coder:14b"          # optional: else that provider's own model
    max_input_tokens = 24000             # ... but only for requests up to this size

    [[providers.router.routes]]          # everything else, and the fallback
    provider = "openai"
    model = "gpt-4.1"
    name = "smart"                       # optional alias: `--model smart` starts here

Per request the router estimates the request's size, takes the routes whose
``max_input_tokens`` admits it (in order; a route named by the request's model goes
first) and streams from the first. A route that fails *before* producing any output
(server down, rate limited, no key, context too long for it, ...) hands over to the
next; once output has streamed a failure is final, as it would be without the router.
When every route fails, the last error is raised with every route's reason, keeping
its kind, so the loop's retry and compaction rules still apply.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

from ketch.api import (
    ConfigError,
    ErrorKind,
    KetchError,
    ModelInfo,
    Provider,
    ProviderConfig,
    ProviderError,
    ProviderEvent,
    ProviderRequest,
)
from ketch_context_kit.budget import estimate_messages, estimate_schemas, estimate_text
from pydantic import BaseModel, ConfigDict, Field, ValidationError

KIND = "router"
DEFAULT_MODEL = "auto"
# A request the provider rejected as malformed would be rejected by every route.
NEVER_FALL_BACK = frozenset({ErrorKind.BAD_REQUEST})


class Route(BaseModel):
    """One ``[[providers.NAME.routes]]`` entry."""

    model_config = ConfigDict(extra="forbid")

    provider: str = Field(min_length=1)
    model: str | None = None
    name: str | None = None
    max_input_tokens: int | None = Field(None, ge=1)
    context_window: int | None = Field(None, ge=1)
    fallback_on: list[ErrorKind] | None = None  # default: every kind but bad_request

    @property
    def label(self) -> str:
        return self.name or f"{self.provider}:{self.model or '(its default model)'}"

    def falls_back_on(self, kind: ErrorKind) -> bool:
        if self.fallback_on is not None:
            return kind in self.fallback_on
        return kind not in NEVER_FALL_BACK


def parse_routes(config: ProviderConfig) -> list[Route]:
    """The routes of ``[providers.NAME]``; a mistake is a one-line config error."""
    raw = (config.model_extra or {}).get("routes")
    where = f"[providers.{config.name}]"
    if not isinstance(raw, list) or not raw:
        raise ConfigError(
            f'{where}: a router needs routes: add [[providers.{config.name}.routes]] tables with provider = "NAME"'
        )
    routes: list[Route] = []
    for index, item in enumerate(raw, 1):
        try:
            route = Route.model_validate(item)
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(p) for p in first["loc"]) or "route"
            raise ConfigError(f"{where} route {index}: {field}: {first['msg']}") from None
        if route.provider == config.name:
            raise ConfigError(f"{where} route {index}: a router cannot route to itself")
        routes.append(route)
    return routes


def request_tokens(request: ProviderRequest) -> int:
    """The request's size estimate: system prompt, messages and tool schemas."""
    return (
        estimate_text(request.system)
        + estimate_messages(request.messages)
        + estimate_schemas(t.input_schema for t in request.tools)
    )


class RouterProvider:
    """A Provider that delegates each request to one of its routes."""

    kind = KIND

    def __init__(
        self, config: ProviderConfig, routes: list[Route], build: Callable[[Route], Provider]
    ) -> None:
        self.config = config
        self.name = config.name
        self.model = config.model or DEFAULT_MODEL
        self.routes = routes
        self._build = build
        self._clients: dict[int, Provider] = {}
        self.last_route: Route | None = None  # which route answered the last request
        if self.config.context_window is None:
            windows = [r.context_window for r in routes]
            if windows and all(windows):
                self.config.context_window = max(w for w in windows if w)

    # --- choosing -------------------------------------------------------------------

    def candidates(self, request: ProviderRequest) -> list[Route]:
        """The routes to try for ``request``, in order."""
        size = request_tokens(request)
        fitting = [
            r for r in self.routes if r.max_input_tokens is None or size <= r.max_input_tokens
        ]
        named = [r for r in self.routes if r.name and r.name == request.model]
        ordered = named + [r for r in fitting if r not in named]
        if not ordered:
            largest = max(r.max_input_tokens or 0 for r in self.routes)
            raise ProviderError(
                ErrorKind.CONTEXT_LENGTH,
                f"router '{self.name}': no route takes a request of about {size} tokens (the largest max_input_tokens is {largest})",
                context_limit=largest,
                context_used=size,
            )
        return ordered

    def client(self, route: Route) -> Provider:
        key = self.routes.index(route)
        if key not in self._clients:
            self._clients[key] = self._build(route)
        return self._clients[key]

    # --- the Provider protocol ----------------------------------------------------------

    async def stream(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        failures: list[str] = []
        last: ProviderError | None = None
        for route in self.candidates(request):
            started = False
            try:
                client = self.client(route)
                async for event in client.stream(
                    request.model_copy(update={"model": client.model})
                ):
                    started = True
                    yield event
            except Exception as caught:  # noqa: BLE001 - a route's plugin bug is that route's failure
                exc = (
                    caught
                    if isinstance(caught, ProviderError)
                    else ProviderError(ErrorKind.SERVER, f"{type(caught).__name__}: {caught}")
                )
                if started or not route.falls_back_on(exc.kind):
                    if exc is caught:
                        raise
                    raise exc from caught
                failures.append(f"{route.label}: {exc.kind.value}: {exc.message}")
                last = exc
                continue
            self.last_route = route
            return
        assert last is not None  # candidates() is never empty
        raise ProviderError(
            last.kind,
            f"router '{self.name}': every route failed ({'; '.join(failures)})",
            retryable=last.retryable,
            status=last.status,
            retry_after=last.retry_after,
            context_limit=last.context_limit,
            context_used=last.context_used,
        )

    async def list_models(self) -> list[ModelInfo]:
        return [
            ModelInfo(
                id=r.name or f"{r.provider}:{r.model or ''}".rstrip(":"),
                context_window=r.context_window,
            )
            for r in self.routes
        ]

    async def context_window(self) -> int | None:
        return self.config.context_window

    async def aclose(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            await client.aclose()


def route_builder(kernel: Any) -> Callable[[Route], Provider]:
    """Build a route's client through the kernel: its config layering, keys and kinds."""

    def build(route: Route) -> Provider:
        if kernel is None:
            raise ProviderError(
                ErrorKind.CONFIG,
                "the router was used before ketch configured its plugins (no kernel)",
            )
        try:
            table = kernel.settings.providers.get(route.provider, {})
            kind_name = str(table.get("kind") or route.provider)
            if kind_name == KIND:
                raise ProviderError(
                    ErrorKind.CONFIG, f"route {route.label}: a route cannot point at another router"
                )
            kind = kernel.provider_kinds.get(kind_name)
            # The route's model, else the target's own; never the router's --model alias.
            model = route.model or table.get("model") or (kind.default_model if kind else None)
            if not model:
                raise ProviderError(
                    ErrorKind.CONFIG,
                    f"route {route.label}: no model: set model in the route or in [providers.{route.provider}]",
                )
            return kernel.build_provider(route.provider, model)  # type: ignore[no-any-return]
        except KetchError as exc:
            raise ProviderError(ErrorKind.CONFIG, f"route {route.label}: {exc.message}") from None

    return build


def create(config: ProviderConfig, kernel: Any) -> RouterProvider:
    return RouterProvider(config, parse_routes(config), route_builder(kernel))
