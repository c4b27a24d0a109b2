"""web_fetch against real loopback HTTP servers."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from ketch_tools_testkit import Recorder

PAGE = b"""<!doctype html><html><head><title>Release notes</title><style>body{}</style>
<script>steal()</script></head><body><nav>Home | Docs</nav><main>
<h1>Version 2</h1><p>It is <b>faster</b>; see <a href="/changelog">the changelog</a>.</p>
<ul><li>one</li><li>two</li></ul><pre><code>pip install thing</code></pre></main>
<footer>copyright</footer></body></html>"""


def serve(
    routes: dict[str, Callable[[BaseHTTPRequestHandler], None]],
) -> tuple[ThreadingHTTPServer, str]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:  # noqa: N802
            route = routes.get(self.path.split("?")[0]) or reply(b"no such page", "text/plain", 404)
            # The client may stop reading (size cap, timeout): expected.
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                route(self)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.block_on_close = False
    threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    ).start()
    return server, f"http://127.0.0.1:{server.server_port}"


def reply(
    body: bytes, content_type: str = "text/html; charset=utf-8", status: int = 200
) -> Callable[[BaseHTTPRequestHandler], None]:
    def handle(h: BaseHTTPRequestHandler) -> None:
        h.send_response(status)
        h.send_header("Content-Type", content_type)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)

    return handle


def redirect(location: str) -> Callable[[BaseHTTPRequestHandler], None]:
    def handle(h: BaseHTTPRequestHandler) -> None:
        h.send_response(302)
        h.send_header("Location", location)
        h.send_header("Content-Length", "0")
        h.end_headers()

    return handle


@pytest.fixture
def servers() -> Iterator[Callable[[dict], str]]:
    started: list[ThreadingHTTPServer] = []

    def make(routes: dict) -> str:
        server, base = serve(routes)
        started.append(server)
        return base

    yield make
    for server in started:
        server.shutdown()
        server.server_close()


def test_html_becomes_readable_markdown(tools, servers) -> None:
    base = servers({"/notes": reply(PAGE)})
    result = tools().call("web_fetch", {"url": f"{base}/notes"})
    assert result.ok, result.output
    out = result.output
    assert "Host: 127.0.0.1" in out and "Status: 200" in out and "Title: Release notes" in out
    assert (
        "# Version 2" in out
        and "**faster**" in out
        and "- one" in out
        and "pip install thing" in out
    )
    assert f"[the changelog]({base}/changelog)" in out
    assert "steal()" not in out and "body{}" not in out and "Home | Docs" not in out


def test_redirect_to_another_origin_is_reauthorized(tools, servers) -> None:
    other = servers({"/final": reply(b"<p>landed</p>")})
    base = servers(
        {
            "/go": redirect(f"{other}/final"),
            "/same": redirect("/here"),
            "/here": reply(b"<p>same host</p>"),
        }
    )
    recorder = Recorder(answer=True)
    session = tools(approver=recorder)
    result = session.call("web_fetch", {"url": f"{base}/go"})
    assert result.ok and "landed" in result.output
    assert f"URL: {other}/final (redirected from {base}/go)" in result.output
    assert [r.call.accesses[0].target for r in recorder.requests] == [
        f"{base}/go",
        f"{other}/final",
    ]
    hop = recorder.requests[1].call.accesses[0]
    assert (
        hop.effect == "network"
        and hop.detail["host"] == "127.0.0.1"
        and hop.detail["redirected_from"] == f"{base}/go"
    )
    # The same origin needs no second question.
    recorder.requests.clear()
    assert "same host" in session.call("web_fetch", {"url": f"{base}/same"}).output
    assert len(recorder.requests) == 1


def test_denied_redirect_fetches_nothing_from_it(tools, servers) -> None:
    hits: list[str] = []

    def final(h: BaseHTTPRequestHandler) -> None:
        hits.append(h.path)
        reply(b"secret")(h)

    other = servers({"/final": final})
    base = servers({"/go": redirect(f"{other}/final")})
    answers = iter([True, False])

    async def approver(request):  # first: the URL asked for; second: the redirect
        from ketch.policy import ApprovalAnswer

        return ApprovalAnswer(approved=next(answers))

    result = tools(approver=approver).call("web_fetch", {"url": f"{base}/go"})
    assert not result.ok and "was not allowed" in result.output and "secret" not in result.output
    assert hits == []


def test_only_http_and_https_and_no_credentials(tools) -> None:
    session = tools()
    for url in (
        "file:///etc/passwd",
        "ftp://example.com/x",
        "gopher://x",
        "http://user:pw@example.com/",
        "http://exa mple.com/",
        "javascript:alert(1)",
    ):
        result = session.call("web_fetch", {"url": url})
        assert not result.ok and "Invalid input" in result.output, url


def test_redirect_to_a_file_url_is_refused(tools, servers) -> None:
    base = servers({"/go": redirect("file:///etc/passwd")})
    result = tools().call("web_fetch", {"url": f"{base}/go"})
    assert not result.ok and "cannot be followed" in result.output and "root:" not in result.output


def test_size_cap_and_paging(tools, servers) -> None:
    big = "".join(f"paragraph {n} " + "word " * 30 + "\n" for n in range(20_000)).encode()
    base = servers({"/big.txt": reply(big, "text/plain")})
    session = tools(settings={"web_fetch": {"max_bytes": 200_000, "max_chars": 5_000}})
    first = session.call("web_fetch", {"url": f"{base}/big.txt"})
    assert first.ok and "paragraph 0 " in first.output
    assert "only its start was downloaded" in first.output
    assert "continue with offset=" in first.output
    assert len(first.output) < 6_000
    offset = int(first.output.split("continue with offset=")[1].split("]")[0])
    second = session.call("web_fetch", {"url": f"{base}/big.txt", "offset": offset})
    assert second.ok and "paragraph 0 " not in second.output


def test_slow_server_times_out(tools, servers) -> None:
    def slow(h: BaseHTTPRequestHandler) -> None:
        time.sleep(5)
        reply(b"late")(h)

    base = servers({"/slow": slow})
    started = time.monotonic()
    result = tools(settings={"web_fetch": {"timeout": 0.5}}).call(
        "web_fetch", {"url": f"{base}/slow"}
    )
    assert not result.ok and "timed out" in result.output
    assert time.monotonic() - started < 4


def test_binary_and_error_responses(tools, servers) -> None:
    base = servers({"/logo.png": reply(b"\x89PNG\r\n\x1a\n\x00\x00", "image/png")})
    session = tools()
    image = session.call("web_fetch", {"url": f"{base}/logo.png"})
    assert not image.ok and "image/png" in image.output and "text only" in image.output
    missing = session.call("web_fetch", {"url": f"{base}/missing"})
    assert not missing.ok and "Status: 404" in missing.output and "no such page" in missing.output


def test_connection_refused_is_a_clear_error(tools, servers) -> None:
    base = servers({})
    port = base.rsplit(":", 1)[1]
    session = tools()
    # Find a closed port: the server's own, after shutting it down, is closed.
    result = session.call("web_fetch", {"url": f"http://127.0.0.1:{int(port)}/x"})
    assert not result.ok  # 404 from the live server
    closed = session.call("web_fetch", {"url": "http://127.0.0.1:9/"})
    assert not closed.ok and "could not fetch" in closed.output and "Traceback" not in closed.output
