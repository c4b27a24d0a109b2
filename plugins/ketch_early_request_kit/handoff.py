"""Where the early request meets the one ketch built: the same bytes, or no deal.

Every HTTP provider streams through :func:`ketch_provider_kit.open_stream`, which asks
:func:`answer_for` before it sends. The first request of the process stops the
tracker, writes the record (on a thread, when the ``early_request`` plugin armed it for
this prompt) and, when the launch sent an early request with exactly these bytes --
URL, every header in order, body -- hands back the answer to that one, read off its
socket. Any difference closes the early request unread (the server sees a request it
answers to nobody) and ketch sends its own.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ketch_early_request_kit import record
from ketch_early_request_kit.tracker import TRACKER
from ketch_process_kit.variables import secret_variable

if TYPE_CHECKING:  # pragma: no cover
    import httpx

    from ketch_early_request_kit.early import Early


@dataclass(frozen=True)
class Armed:
    """What the plugin saw of this process's first prompt."""

    prompt: str
    patterns: tuple[str, ...]


# Process-wide by nature (allowed module state): one launch, one first request, per process.
LAUNCHED: Early | None = None
_ARMED: list[Armed] = []
_FIRST = [True]


def launched_here() -> bool:
    """Whether this process started through the console script with ``-p`` and with
    no record that holds (the tracker runs): only such a start may write a record."""
    return TRACKER.on


def arm(prompt: str, patterns: tuple[str, ...]) -> None:
    """Record this process's first request, whose user prompt is ``prompt``."""
    _ARMED[:] = [Armed(prompt, patterns)]


def forget() -> None:
    """This configuration cannot send early (the plugin said why): no record at all."""
    record.forget(record.cache_file(os.environ))


async def answer_for(request: httpx.Request, secrets: tuple[str | None, ...]) -> Any:
    """The early request's response when ``request`` is the same request, else None."""
    if not _FIRST[0]:
        return None
    _FIRST[0] = False
    global LAUNCHED
    early, LAUNCHED = LAUNCHED, None
    armed = _ARMED.pop() if _ARMED else None
    tracked = TRACKER.on
    TRACKER.stop()
    url = str(request.url)
    headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in request.headers.raw]
    body = request.content
    if armed is not None and tracked:
        timeouts = request.extensions.get("timeout") or {}
        times = [timeouts.get("connect") or 10.0, timeouts.get("read") or 600.0]
        threading.Thread(
            target=_write,
            args=(url, headers, body, secrets, armed, times),
            name="ketch-early-record",
            daemon=True,
        ).start()
    if early is None:
        return None
    import asyncio

    seen = await asyncio.to_thread(early.compare, url, headers, body)
    if seen == "differs":
        # Its key held, its bytes did not: the next start records anew (and sends
        # nothing early until the new record is confirmed).
        record.forget(record.cache_file(os.environ))
    if seen != "same":
        return None
    from ketch_early_request_kit.adopt import adopt

    return await adopt(early, request)


def _typed_text(argument: str) -> bool:
    """Free text, not a setting: an argument with a space in it."""
    return any(c.isspace() for c in argument)


def _write(
    url: str,
    headers: list[tuple[str, str]],
    body: bytes,
    secrets: tuple[str | None, ...],
    armed: Armed,
    timeouts: list[float],
) -> None:
    with contextlib.suppress(Exception):  # a cache: a failure is no record
        _record(url, headers, body, [s for s in secrets if s], armed, timeouts)


def _record(
    url: str,
    headers: list[tuple[str, str]],
    body: bytes,
    secrets: list[str],
    armed: Armed,
    timeouts: list[float],
) -> None:
    path = record.cache_file(os.environ)
    argv = sys.argv[1:]
    if argv.count(armed.prompt) != 1:
        return  # the prompt is not one argument of its own: not a start the launch sees
    text = body.decode("utf-8")
    quoted = json.dumps(armed.prompt, ensure_ascii=False)
    if text.count(quoted) != 1 or any(s in text for s in secrets):
        return  # not verbatim for this prompt; the last record stays
    if any(
        _typed_text(a) and json.dumps(a, ensure_ascii=False)[1:-1] in text
        for a in argv
        if a != armed.prompt
    ):
        record.forget(path)  # free text typed on the command line (--append-system-prompt)
        return  # reached the request: what a person typed is never written down
    if any(s in url for s in secrets):
        return  # a key in the URL (a query parameter) is never written anywhere
    prefix, suffix = text.split(quoted)
    key_env = None
    shaped: list[list[Any]] = []
    for name, value in headers:
        if name.lower() == "content-length":
            shaped.append([name, None])
            continue
        for secret in secrets:
            if secret in value:
                names = sorted(n for n, v in os.environ.items() if v.strip() == secret)
                if not names:
                    record.forget(path)  # a key from the keyring is never written anywhere
                    return
                key_env = names[0]
                value = value.replace(secret, record.KEY_MARK)
        if secret_variable(name) and record.KEY_MARK not in value:
            return  # a credential header not from the environment: never written anywhere
        shaped.append([name, value])
    runs = TRACKER.git_status_runs()
    if runs is None:
        record.forget(path)
        return
    from ketch.api import plugin_cache

    skip = (*record.code_paths(), os.path.join(os.path.dirname(path), ""))
    new: dict[str, Any] = {
        "argv": record.command_line(argv, argv.index(armed.prompt)),
        "cwd": os.getcwd(),
        "env": record.environment_digest(os.environ),
        "date": record.today(),
        "stdin": record.stdin_kind(),
        "fingerprint": plugin_cache.fingerprint(),
        "paths": record.signatures(*TRACKER.paths(skip)),
        "probes": [
            {"args": args, "cwd": cwd, "digest": record.probe_digest(args, cwd)}
            for args, cwd in runs
        ],
        "patterns": list(armed.patterns),
        "url": url,
        "headers": shaped,
        "key_env": key_env,
        "body": [prefix, suffix],
        "timeouts": timeouts,
    }
    old = record.read(path)
    if (
        old is not None
        and old.get("confirmed")
        and {**old, "confirmed": None, "format": None} == {**new, "confirmed": None, "format": None}
    ):
        return  # the same record, confirmed already
    new["confirmed"] = old is not None and record.template_digest(old) == record.template_digest(
        new
    )
    record.write(path, new)
