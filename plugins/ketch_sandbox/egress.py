"""One session's egress proxy: a thread with its own event loop, one socket per command.

Started lazily, by the first sandboxed command of a session that has the network, and
stopped when the session ends. Each such command gets a :class:`Channel`: a unix
socket of its own (bind-mounted into its sandbox, see :mod:`ketch_sandbox.network`),
so every connection is known to come from that command -- it is asked about through
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
from ketch_sandbox.network import RESOLV_CONF
from ketch_sandbox.proxy import Admitted, Headers, Outcome, Refused, Target, handle

if TYPE_CHECKING:  # pragma: no cover
    from ketch.tools import ToolContext
    from ketch_net_kit.config import InjectSettings

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
    path: Path
    rules: NetworkRules
    context: ToolContext | None
    owner: asyncio.AbstractEventLoop | None  # the loop the command's call runs on
    inject: dict[str, InjectSettings] = field(default_factory=dict)
    outcomes: list[Outcome] = field(default_factory=list)
    approved: set[tuple[str, int]] = field(default_factory=set)
    local_approved: set[tuple[str, str]] = field(default_factory=set)
    asking: dict[tuple[str, int, str], asyncio.Lock] = field(default_factory=dict)
    server: asyncio.AbstractServer | None = None
    closed: bool = False

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
        from ketch.tools import Access, Effect

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
        if not done:
            return None
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

    def __init__(self, name: str = "") -> None:
        self.name = name
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

    def channel(
        self,
        rules: NetworkRules,
        context: ToolContext | None,
        owner: asyncio.AbstractEventLoop | None,
        inject: dict[str, InjectSettings] | None = None,
    ) -> Channel:
        """A socket for one command, listening already."""
        self.start()
        assert self.loop is not None and self.directory is not None
        path = self.directory / f"c{next(self.numbers)}.sock"
        channel = Channel(self, path, rules, context, owner, dict(inject or {}))

        async def listen() -> None:
            def connected(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
                task = asyncio.ensure_future(handle(reader, writer, channel.admit, channel.finish))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)

            channel.server = await asyncio.start_unix_server(connected, path=str(path))

        asyncio.run_coroutine_threadsafe(listen(), self.loop).result(10)
        os.chmod(path, 0o600)
        with self.lock:
            self.channels.add(channel)
        return channel

    def drop(self, channel: Channel) -> None:
        """A command ended: its socket goes (its open connections are left to end)."""
        with self.lock:
            self.channels.discard(channel)
        server, loop = channel.server, self.loop
        if server is not None and loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(server.close)
        with contextlib.suppress(OSError):
            channel.path.unlink()

    def close(self) -> None:
        """The session ended: every socket and connection goes, and the thread with them."""
        loop, thread = self.loop, self.thread
        if loop is None:
            return

        async def stop() -> None:
            for channel in list(self.channels):
                if channel.server is not None:
                    channel.server.close()
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
        self.channels.clear()
        if self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)
