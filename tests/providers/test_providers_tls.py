"""A provider's HTTP client and TLS: a plain ``http://`` base URL (a local server) loads no
CA bundle, and what it builds instead still refuses an ``https://`` server it cannot
verify; an ``https://`` base URL verifies against the CAs it is told to trust.

A real TLS server on 127.0.0.1 with a self-signed certificate, trusted through
``SSL_CERT_FILE`` (what httpx's default context reads): a client that verifies as httpx
does by default reaches it, one that trusts nothing does not.
"""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from ketch_import_kit.httpx import httpx
from ketch_provider_kit.streams import LoopClient


class _Ok(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - the handler's protocol
        body = b"ok"
        self.send_response(200)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args: object) -> None:
        pass


def _self_signed(directory: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = directory / "cert.pem", directory / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_file, key_file


@pytest.fixture
def tls_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    cert_file, key_file = _self_signed(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert_file))
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Ok)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


async def _get(client: LoopClient, url: str) -> int:
    try:
        response = await client.get().get(url)
        return response.status_code
    finally:
        await client.aclose()


def test_an_https_base_url_verifies_against_the_trusted_cas(tls_server: str) -> None:
    client = LoopClient(timeout=10, connect_timeout=10, base_url=tls_server)
    assert asyncio.run(_get(client, f"{tls_server}/")) == 200


def test_a_plain_http_base_url_loads_no_ca_bundle_and_refuses_unverified_tls(
    tls_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[object] = []
    real = httpx.create_ssl_context
    monkeypatch.setattr(httpx, "create_ssl_context", lambda *a, **k: built.append(1) or real())
    client = LoopClient(timeout=10, connect_timeout=10, base_url="http://127.0.0.1:9/v1")
    # The certificate the default context would trust is refused: nothing goes unverified.
    with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
        asyncio.run(_get(client, f"{tls_server}/"))
    assert built == [], "a plain http:// base URL built the CA-loading TLS context"


@pytest.mark.parametrize("base_url", [None, "https://api.example.test/v1", " HTTPS://x/ "])
def test_only_a_plain_http_base_url_skips_the_ca_bundle(
    base_url: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[object] = []
    monkeypatch.setattr(httpx, "create_ssl_context", lambda *a, **k: built.append(1) or True)
    client = LoopClient(timeout=10, connect_timeout=10, base_url=base_url)
    client._tls.get()  # joins the thread that builds it
    assert built == [1]
