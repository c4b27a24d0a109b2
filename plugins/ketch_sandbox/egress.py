"""One session's egress proxy: a thread with its own event loop, one socket per command.

Started lazily, by the first sandboxed command of a session that has the network, and
stopped when the session ends. Each such command gets a :class:`Channel`: a listening
socket of its own, made inside that command's network namespace before it starts
(:mod:`ketch_sandbox.netns`; where the kernel does not allow that, a unix socket that a
forwarder in the sandbox relays to, see :mod:`ketch_sandbox.network`), so every
connection is known to come from that command -- it is asked about through
that command's call (``ToolContext.authorize``: the policy's rules and approvals, then
the person), journaled as an ``egress`` event of that call, and counted in its result.

For each connection (:meth:`Channel.admit`): the host is already canonical (the
protocol layer refuses what is not); the ``[sandbox.network]`` rules decide
(:class:`ketch_net_kit.rules.NetworkRules`): deny refuses, allow admits, anything else
is asked through the call (an answer holds for that command; "for this session" and
"always" are the policy's). Only then is the name resolved -- a name the rules refuse
is never looked up, so DNS carries nothing out -- and every address is judged: a local
one (loopback, private, link-local, metadata) needs a ``local`` rule or is asked
about in every profile. The proxy connects to the judged addresses only.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import itertools
import os
import shutil
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ketch_net_kit.addresses import KIND_TEXT
from ketch_net_kit.hosts import Host
from ketch_net_kit.resolve import Unresolved, resolve
from ketch_net_kit.rules import NetworkRules, would_allow
from ketch_sandbox.network import RESOLV_CONF, bwrap_args, forwarded, resolv_args
from ketch_sandbox.proxy import Admitted, Headers, Outcome, Refused, Target, handle

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import ToolContext
    from ketch_net_kit.config import InjectSettings
    from ketch_sandbox.netns import Helper, Hookup, Route

ASK_TIMEOUT = 600.0  # a question nobody answers is a no


class EgressEvent(BaseModel):
    """One connection a sandboxed command made (or tried), as the journal keeps it."""

    model_config = ConfigDict(frozen=True)

    type: Literal["egress"] = "egress"
    ts: float = Field(default_factory=time.time)
    agent_id: str | None = None
    tool_call_id: str = ""
    host: str
    port: int
    protocol: str  # connect | http | socks5
    method: str | None = None
    allowed: bool
    rule: str = ""  # what decided: "allow 'pypi.org'", "approved", "deny '...'"
    reason: str = ""
    address: str = ""
    bytes_up: int = 0
    bytes_down: int = 0
    summary: str = ""  # one line, for `ketch sessions show`


def _size(n: int) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000  # type: ignore[assignment]
    return f"{n} B"


def event_of(outcome: Outcome, call_id: str) -> EgressEvent:
    target = outcome.target
    host = target.host.authority if target else "?"
    port = target.port if target else 0
    if outcome.allowed:
        summary = f"{host}:{port} allowed ({outcome.rule or 'allowed'})"
        summary += f", {_size(outcome.bytes_up)} out, {_size(outcome.bytes_down)} in"
        if outcome.reason:
            summary += f"; {outcome.reason}"
    else:
        summary = f"{host}:{port} refused: {outcome.reason or 'not allowed'}"
    if target and target.method:
        summary = f"{target.method} {summary}"
    return EgressEvent(
        tool_call_id=call_id,
        host=target.host.name if target else "?",
        port=port,
        protocol=target.protocol if target else "?",
        method=target.method if target else None,
        allowed=outcome.allowed,
        rule=outcome.rule,
        reason=outcome.reason,
        address=outcome.address,
        bytes_up=outcome.bytes_up,
        bytes_down=outcome.bytes_down,
        summary=summary,
    )


@dataclass(eq=False)
class Channel:
    """One command's way out: its socket, its rules, what it did."""

    egress: Egress
    path: Path | None  # the forwarder's unix socket; None when ketch listens inside
    rules: NetworkRules
    context: ToolContext | None
    owner: asyncio.AbstractEventLoop | None  # the loop the command's call runs on
    inject: dict[str, InjectSettings] = field(default_factory=dict)
    outcomes: list[Outcome] = field(default_factory=list)
    approved: set[tuple[str, int]] = field(default_factory=set)
    local_approved: set[tuple[str, str]] = field(default_factory=set)
    asking: dict[tuple[str, int, str], asyncio.Lock] = field(default_factory=dict)
    server: asyncio.AbstractServer | None = None
    hookup: Hookup | None = None  # the listener inside the command's namespace, coming
    failure: str = ""  # why it did not come (the command then had no network)
    closed: bool = False

    # --- starting the command -----------------------------------------------------------------

    def launcher(self) -> list[str]:
        """What goes before bwrap's argv (the hookup's shell; nothing for the forwarder)."""
        return self.hookup.launcher() if self.hookup is not None else []

    def prefix(self) -> list[str]:
        """What goes before the command, inside the sandbox (the forwarder, if any)."""
        return forwarded([]) if self.path is not None else []

    def bwrap_args(self) -> list[str]:
        """bwrap's options for this command's network (after the view's mounts)."""
        assert self.egress.resolv is not None
        if self.hookup is not None:
            from ketch_sandbox.netns import bwrap_args as hookup_args

            return hookup_args(self.hookup.port) + resolv_args(self.egress.resolv)
        assert self.path is not None
        return bwrap_args(self.path, self.egress.resolv)

    # --- deciding (on the proxy's loop) -----------------------------------------------------

    async def admit(self, target: Target) -> Admitted:
        host, port = target.host, target.port
        decision = self.rules.decide(host, port, method=target.method, tunnel=target.tunnel)
        if decision.verdict == "deny":
            raise Refused(decision.reason, decision.rule)
        rule = decision.rule
        if decision.verdict == "ask":
            if not await self._approved(target):
                raise Refused(
                    f"{target.where} is not allowed: no [sandbox.network] rule allows it and it was not approved; "
                    f"allow it with {would_allow(host)}"
                )
            rule = "approved"
        try:
            addresses = await resolve(host, port)
        except Unresolved as exc:
            raise Refused(str(exc), rule, status=502) from None
        usable = []
        for address in addresses:
            if address.local is None or await self._local_ok(target, address.ip, address.local):
                usable.append(address.ip)
        if not usable:
            first = addresses[0]
            raise Refused(
                f"{host} is {first.ip}, {KIND_TEXT.get(first.local or '', 'a local address')}: a sandboxed command "
                f"reaches it only when you approve it or name it in [sandbox.network] local",
                rule,
            )
        return Admitted(usable, rule, self._rewrite(target))

    async def _approved(self, target: Target) -> bool:
        key = (target.host.name, target.port)
        if key in self.approved:
            return True
        lock = self.asking.setdefault((*key, ""), asyncio.Lock())
        async with lock:  # parallel connections to one host ask once
            if key in self.approved:
                return True
            scheme = "http" if target.protocol == "http" else "tcp"
            allowed = await self._ask(
                f"{scheme}://{target.where}",
                {"host": target.host.name, "port": target.port},
            )
            if allowed:
                self.approved.add(key)
            return allowed

    async def _local_ok(self, target: Target, ip: Any, kind: str) -> bool:
        if self.rules.local_allowed(target.host, ip, target.port):
            return True
        key = (target.host.name, str(ip))
        if key in self.local_approved:
            return True
        lock = self.asking.setdefault((target.host.name, target.port, str(ip)), asyncio.Lock())
        async with lock:
            if key in self.local_approved:
                return True
            allowed = await self._ask(
                f"tcp://{target.where}",
                {"host": target.host.name, "port": target.port, "address": str(ip), "local": kind},
            )
            if allowed:
                self.local_approved.add(key)
            return allowed

    async def _ask(self, url: str, detail: dict[str, Any]) -> bool:
        """Through the command's call: the policy's rules and approvals, then the person."""
        context, owner = self.context, self.owner
        if context is None or owner is None or owner.is_closed() or self.closed:
            return False
        from ketch.api import Access, Effect

        access = Access(effect=Effect.NETWORK, target=url, detail={**detail, "via": "sandbox"})
        try:

            async def ask() -> bool:
                return bool(await context.authorize(access))

            future: concurrent.futures.Future[Any] = asyncio.run_coroutine_threadsafe(ask(), owner)
            return bool(await asyncio.wait_for(asyncio.wrap_future(future), ASK_TIMEOUT))
        except (RuntimeError, TimeoutError, asyncio.CancelledError, Exception):  # noqa: BLE001
            return False

    def _rewrite(self, target: Target) -> Callable[[Headers], Headers] | None:
        """``[sandbox.network.inject]``: the real secret in place of the placeholder, in
        one header, for one host, over plain HTTP only (a tunnel is never opened)."""
        if target.tunnel or not self.inject:
            return None
        rules = [
            value for pattern, value in self.inject.items() if _host_matches(pattern, target.host)
        ]
        if not rules:
            return None

        def rewrite(headers: Headers) -> Headers:
            out = []
            for name, value in headers:
                for rule in rules:
                    secret = os.environ.get(rule.env, "")
                    if (
                        secret
                        and name.lower() == rule.header.lower().encode()
                        and rule.placeholder.encode() in value
                    ):
                        value = value.replace(rule.placeholder.encode(), secret.encode())
                out.append((name, value))
            return out

        return rewrite

    # --- recording --------------------------------------------------------------------------

    def finish(self, outcome: Outcome) -> None:
        self.outcomes.append(outcome)
        context, owner = self.context, self.owner
        if context is None or owner is None:
            return
        event = event_of(outcome, context.tool_call_id)
        with contextlib.suppress(RuntimeError):  # the call's loop is gone: counted, not journaled
            owner.call_soon_threadsafe(context.emit, event)

    def report(self, ended: bool) -> str | None:
        """The line for the command's result: what it reached, what was refused."""
        if ended and not self.closed:
            self.closed = True
            self.egress.drop(self)
        done = [o for o in self.outcomes if o.target is not None]
        failed = (
            f"[sandbox] network: ketch could not listen inside this command's sandbox ({self.failure}), "
            "so it ran without the network; the next commands reach the proxy through a forwarder"
            if self.failure
            else ""
        )
        if not done:
            return failed or None
        allowed = Counter(o.target.where for o in done if o.allowed and o.target)
        refused = [o for o in done if not o.allowed]
        moved_in = sum(o.bytes_down for o in done)
        moved_out = sum(o.bytes_up for o in done)
        parts = [
            f"[sandbox] network: {len(done)} connection{'s' if len(done) != 1 else ''}"
            + (
                f" ({', '.join(f'{w}' + (f' x{n}' if n > 1 else '') for w, n in allowed.most_common(6))}"
                + (", ..." if len(allowed) > 6 else "")
                + f"; {_size(moved_out)} out, {_size(moved_in)} in)"
                if allowed
                else ""
            )
        ]
        for reason in dict.fromkeys(o.reason for o in refused):
            parts.append(f"[sandbox] network refused: {reason}")
        if failed:
            parts.append(failed)
        if ended:
            self.outcomes = []
        return "\n".join(parts)


def _host_matches(pattern: str, host: Host) -> bool:
    from ketch_net_kit.rules import BadPattern, parse_pattern

    try:
        return parse_pattern(pattern).matches(host)
    except BadPattern:
        return False


class Egress:
    """The proxy of one session (see the module docstring)."""

    def __init__(self, name: str = "", bwrap: str = "bwrap") -> None:
        self.name = name
        self.bwrap = bwrap
        self.route: Route | None = None  # how listeners get into commands' namespaces
        self.fallback = ""  # why commands start under the forwarder instead, if they do
        self.fallback_said = False
        self.helper: Helper | None = None
        self.directory: Path | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.thread: threading.Thread | None = None
        self.channels: set[Channel] = set()
        self.lock = threading.Lock()
        self.numbers = itertools.count(1)
        self.resolv: Path | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    def start(self) -> None:
        with self.lock:
            if self.loop is not None:
                return
            self.directory = Path(tempfile.mkdtemp(prefix="ketch-egress-"))
            self.resolv = self.directory / "resolv.conf"
            self.resolv.write_text(RESOLV_CONF, encoding="utf-8")
            loop = asyncio.new_event_loop()
            ready = threading.Event()

            def run() -> None:
                asyncio.set_event_loop(loop)
                loop.call_soon(ready.set)
                loop.run_forever()

            self.thread = threading.Thread(
                target=run, name=f"ketch-egress-{self.name}", daemon=True
            )
            self.thread.start()
            ready.wait(10)
            self.loop = loop
            from ketch_sandbox.netns import Helper, route  # ctypes: when a command needs it

            self.route, self.fallback = route(self.bwrap)
            if self.route == "helper":
                try:
                    self.helper = Helper()
                except OSError as exc:
                    self.route, self.fallback = None, f"its helper did not start ({exc})"

    def channel(
        self,
        rules: NetworkRules,
        context: ToolContext | None,
        owner: asyncio.AbstractEventLoop | None,
        inject: dict[str, InjectSettings] | None = None,
    ) -> Channel:
        """A way out for one command: a listener made inside its namespace as it
        starts, or (the fallback) a unix socket listening already."""
        self.start()
        assert self.loop is not None and self.directory is not None
        name = f"c{next(self.numbers)}"
        if self.route is not None:
            channel = Channel(self, None, rules, context, owner, dict(inject or {}))
            from ketch_sandbox.netns import Hookup

            channel.hookup = Hookup.create(self.directory, name)
            try:
                channel.hookup.start(self.route, self.helper)
            except OSError as exc:
                channel.hookup.close()
                self.degrade(f"the helper is gone ({exc.strerror or exc})")
            else:
                with self.lock:
                    self.channels.add(channel)
                self.loop.call_soon_threadsafe(self._watch, channel)
                return channel
        path = self.directory / f"{name}.sock"
        channel = Channel(self, path, rules, context, owner, dict(inject or {}))

        async def listen() -> None:
            channel.server = await asyncio.start_unix_server(self._serving(channel), path=str(path))

        asyncio.run_coroutine_threadsafe(listen(), self.loop).result(10)
        os.chmod(path, 0o600)
        with self.lock:
            self.channels.add(channel)
        return channel

    def degrade(self, reason: str) -> None:
        """Listening inside did not work: later commands start under the forwarder."""
        self.route, self.fallback = None, reason

    def _watch(self, channel: Channel) -> None:
        """(On the proxy's loop.) Wait for the joiner's socket, or its reason."""
        hookup = channel.hookup
        if channel.closed or hookup is None or hookup.link is None or self.loop is None:
            return
        self.loop.add_reader(hookup.link, self._received, channel)

    def _received(self, channel: Channel) -> None:
        hookup, loop = channel.hookup, self.loop
        assert hookup is not None and hookup.link is not None and loop is not None
        got = hookup.receive()
        if got is None:
            return
        loop.remove_reader(hookup.link)
        if isinstance(got, str):
            hookup.release()  # if it starts, it has no network: nothing listens there
            if got:  # the route failed, not just this command: the next use the forwarder
                channel.failure = got
                self.degrade(got)
            return
        task = asyncio.ensure_future(self._serve(channel, got))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _serving(
        self, channel: Channel
    ) -> Callable[[asyncio.StreamReader, asyncio.StreamWriter], None]:
        """The callback that serves each connection of ``channel``'s command."""

        def connected(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            task = asyncio.ensure_future(handle(reader, writer, channel.admit, channel.finish))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

        return connected

    async def _serve(self, channel: Channel, listener: Any) -> None:
        server = await asyncio.start_server(self._serving(channel), sock=listener)
        if channel.closed:
            server.close()
        else:
            channel.server = server

    def _let_go(self, channel: Channel) -> None:
        """(On the proxy's loop.) A command's listener and hookup go."""
        if channel.server is not None:
            channel.server.close()
        hookup = channel.hookup
        if hookup is not None:
            if hookup.link is not None and self.loop is not None:
                self.loop.remove_reader(hookup.link)
            hookup.close()

    def drop(self, channel: Channel) -> None:
        """A command ended: its socket goes (its open connections are left to end)."""
        with self.lock:
            self.channels.discard(channel)
        loop = self.loop
        if loop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(self._let_go, channel)
        elif channel.hookup is not None:
            channel.hookup.close()
        if channel.path is not None:
            with contextlib.suppress(OSError):
                channel.path.unlink()

    def close(self) -> None:
        """The session ended: every socket and connection goes, and the thread with them."""
        loop, thread = self.loop, self.thread
        if loop is None:
            return

        async def stop() -> None:
            for channel in list(self.channels):
                self._let_go(channel)
            for task in list(self._tasks):
                task.cancel()
            await asyncio.sleep(0)

        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(stop(), loop).result(5)
        loop.call_soon_threadsafe(loop.stop)
        if thread is not None:
            thread.join(5)
        if not loop.is_running():
            loop.close()
        self.loop = None
        for channel in list(self.channels):  # the loop did not answer: by hand
            if channel.hookup is not None:
                channel.hookup.close()
        self.channels.clear()
        if self.helper is not None:
            self.helper.close()
            self.helper = None
        if self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)
