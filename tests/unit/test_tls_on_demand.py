"""The providers' HTTP client loads certificates at its first https request (providers/http.py,
``TlsOnDemand``): plain http works without them, and https still verifies the server, against
the CA bundle httpx would use (SSL_CERT_FILE here), as the default transport does."""

from __future__ import annotations

import ssl
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from tests.support.model_server import ModelServer
from totem_engine.providers.http import HttpEndpoint, TlsOnDemand


class _Hello(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"hello"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format, *args):  # noqa: A002
        pass


@pytest.fixture
def tls_server(tmp_path: Path):
    """An https server on 127.0.0.1 with a self-signed certificate; yields (base URL, cert file)."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{server.server_address[1]}", cert
    finally:
        server.shutdown()
        server.server_close()


def endpoint_client() -> httpx.AsyncClient:
    return HttpEndpoint(None, headers=None, timeout=5, client=None, key_header="Authorization").client


async def test_plain_http_needs_no_certificates():
    with ModelServer() as server:
        server.models = [{"id": "m"}]
        async with endpoint_client() as client:
            response = await client.get(f"{server.base_url}/models")
            assert response.json()["data"] == [{"id": "m"}]
            transport = client._transport
            assert isinstance(transport, TlsOnDemand) and transport._tls is None


async def test_https_refuses_a_server_no_known_ca_signed(tls_server, monkeypatch):
    url, _cert = tls_server
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    async with endpoint_client() as client:
        with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
            await client.get(url)


async def test_https_verifies_against_the_environments_ca(tls_server, monkeypatch):
    url, cert = tls_server
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    async with endpoint_client() as client:
        assert (await client.get(url)).text == "hello"
