"""The request a ``ketch -p`` launch may send: the record checked, then sent, on a thread.

Loaded by :mod:`ketch_early_request_kit.launch` only for ``-p`` (``ketch --version``
does not pay for it). See that module, and docs/early-request.md.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import threading


class Early:
    """The request this launch may send, and the socket it went out on.

    Made empty at launch; its thread checks the record and, when it holds, fills it in
    and sends. ``state`` goes ``pending`` → ``sending`` → ``sent`` (or ``failed``) on
    that thread, or ``pending`` → ``dropped`` (the record did not hold, or ketch
    reached its own request first): what is dropped before it was sent is never sent,
    so a request goes out once at most."""

    def __init__(self) -> None:
        self.url = ""
        self.headers: list[tuple[str, str]] = []
        self.body = b""
        self.timeouts = [10.0, 600.0]
        import threading

        self.sock: Any = None
        self.state = "pending"
        self.lock: threading.Lock = threading.Lock()
        self.done: threading.Event = threading.Event()

    def _claim(self, state: str) -> bool:
        with self.lock:
            if self.state != "pending":
                return False
            self.state = state
            return True

    def run(self, argv: list[str], environ: dict[str, str]) -> None:
        """The launch's thread: check the record, then send (or drop)."""
        try:
            built = prepare(argv, environ)
            if built is not None:
                from ketch_early_request_kit.tracker import TRACKER

                TRACKER.stop()  # the record holds: this start records nothing
                self.url, self.headers, self.body, self.timeouts, probes = built
                if git_unchanged(probes):
                    self.send()
                    return
                from ketch_early_request_kit import record

                record.forget(record.cache_file(environ))  # the next start records anew
        except Exception:  # noqa: BLE001 - ketch sends its own request instead
            pass
        if self._claim("dropped"):
            self.done.set()

    def send(self) -> None:
        if not self._claim("sending"):
            return
        try:
            import socket
            from urllib.parse import urlsplit

            parts = urlsplit(self.url)
            https = parts.scheme == "https"
            port = parts.port or (443 if https else 80)
            host = parts.hostname or ""
            sock = socket.create_connection((host, port), timeout=self.timeouts[0])
            if https:
                sock = _tls().wrap_socket(sock, server_hostname=host)
            sock.settimeout(self.timeouts[1])
            target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
            head = f"POST {target} HTTP/1.1\r\n" + "".join(
                f"{name}: {value}\r\n" for name, value in self.headers
            )
            sock.sendall(head.encode("latin-1") + b"\r\n" + self.body)
            self.sock, self.state = sock, "sent"
        except BaseException:  # noqa: BLE001 - ketch sends its own request instead
            self.state = "failed"
        finally:
            self.done.set()

    def compare(self, url: str, headers: list[tuple[str, str]], body: bytes) -> str:
        """ketch built its first request: ``same`` when the one sent at launch is that
        very request (its answer is then ketch's to read), ``differs`` when it is not
        (closed unread), ``unsent`` when none went out (and none will)."""
        if self._claim("dropped"):
            return "unsent"
        self.done.wait()
        if self.sock is None:
            return "unsent"
        if (url, headers, body) == (self.url, self.headers, self.body):
            return "same"
        self.close()
        return "differs"

    def close(self) -> None:
        sock, self.sock = self.sock, None
        if sock is not None:
            try:  # noqa: SIM105 - contextlib is not loaded here
                sock.close()
            except OSError:
                pass


def _tls() -> Any:
    """httpx's own default trust (``httpx.create_ssl_context``): ``SSL_CERT_FILE``,
    ``SSL_CERT_DIR``, else certifi's bundle."""
    import ssl

    if os.environ.get("SSL_CERT_FILE"):
        return ssl.create_default_context(cafile=os.environ["SSL_CERT_FILE"])
    if os.environ.get("SSL_CERT_DIR"):
        return ssl.create_default_context(capath=os.environ["SSL_CERT_DIR"])
    import certifi

    return ssl.create_default_context(cafile=certifi.where())


Built = tuple[str, list[tuple[str, str]], bytes, list[float], list[dict[str, Any]]]


def prepare(argv: list[str], environ: dict[str, str]) -> Built | None:
    """The request this start may send (URL, headers, body, timeouts, and the git
    states to check first), or None (the reason does not matter: ketch sends its own)."""
    from ketch_early_request_kit import record

    data = record.read(record.cache_file(environ))
    if data is None or not data.get("confirmed"):
        return None
    shape = data.get("argv")
    if not isinstance(shape, dict) or shape.get("length") != len(argv):
        return None
    slot = shape.get("slot")
    if not isinstance(slot, int) or not 0 <= slot < len(argv):
        return None
    prompt = argv[slot]
    if not prompt or prompt == "-" or prompt != prompt.strip():
        return None
    if record.command_line(argv, slot) != shape:
        return None
    if any(name in environ or name.upper() in environ for name in record.PROXY_VARIABLES):
        return None
    if (
        data.get("cwd") != os.getcwd()
        or data.get("date") != record.today()
        or data.get("stdin") != "chr"
        or record.stdin_kind() != "chr"
        or data.get("env") != record.environment_digest(environ)
    ):
        return None
    if not _patterns_allow(data.get("patterns"), prompt):
        return None
    from ketch.api import plugin_cache

    if data.get("fingerprint") != plugin_cache.fingerprint():
        return None
    for path, sig, *looked in data.get("paths") or []:
        if record.signature(path, bool(looked)) != sig:
            return None
    return _build(data, prompt, environ)


def _patterns_allow(patterns: Any, prompt: str) -> bool:
    if not isinstance(patterns, list):
        return False
    import re

    try:
        return all(re.fullmatch(p, prompt) is not None for p in patterns)
    except (re.error, TypeError):
        return False


def _build(data: dict[str, Any], prompt: str, environ: dict[str, str]) -> Built | None:
    import json

    from ketch_early_request_kit import record

    key = ""
    if data.get("key_env"):
        key = (environ.get(data["key_env"]) or "").strip()
        if not key:
            return None
    prefix, suffix = data["body"]
    body = (prefix + json.dumps(prompt, ensure_ascii=False) + suffix).encode("utf-8")
    headers = []
    for name, value in data["headers"]:
        if value is None:
            value = str(len(body))  # content-length
        elif record.KEY_MARK in value:
            if not key:
                return None
            value = value.replace(record.KEY_MARK, key)
        if "\r" in value or "\n" in value:
            return None
        headers.append((name, value))
    timeouts = [float(t) for t in data["timeouts"]]
    return data["url"], headers, body, timeouts, list(data.get("probes") or [])


def git_unchanged(probes: Any) -> bool:
    """Each ``git status`` of the record, run again the way ketch runs git: the same
    output (a digest) or no early request."""
    from ketch_early_request_kit.record import probe_digest

    return all(probe_digest(p["args"], p["cwd"]) == p["digest"] for p in probes or [])


def start(argv: list[str]) -> None:
    """Track what this start reads, and check the record on a thread of its own: the
    main thread goes straight on to load ketch."""
    import threading

    from ketch_early_request_kit import handoff
    from ketch_early_request_kit.tracker import TRACKER

    TRACKER.start()
    early = Early()
    handoff.LAUNCHED = early
    thread = threading.Thread(
        target=early.run, args=(argv, dict(os.environ)), name="ketch-early-request", daemon=True
    )
    thread.start()
