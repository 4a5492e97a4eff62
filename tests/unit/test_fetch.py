"""The fetch tool against a loopback HTTP server (stdlib http.server in a thread)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from totem_engine.tools import fetch as fetch_mod
from totem_engine.tools.base import ToolContext, ToolResult
from totem_engine.tools.fetch import FetchTool
from totem_engine.vocab.tools import ToolError
from totem_engine.workspace.files import DiskWorkspace

PAGE = b"""<!doctype html><html><head><title>T</title><style>body { color: red }</style>
<script>var secret = "script text";</script></head>
<body><h1>Heading</h1><p>Some <b>bold</b> text and a <a href="/next">link</a>.</p>
<ul><li>one</li><li>two</li></ul></body></html>"""

CHUNK = b"x" * 65536


class Handler(BaseHTTPRequestHandler):
    """Routes: each path serves one case."""

    def do_GET(self) -> None:
        routes = {
            "/page.html": lambda: self.send(200, "text/html; charset=utf-8", PAGE),
            "/plain.txt": lambda: self.send(200, "text/plain", b"just text\nline two\n"),
            "/latin1.txt": lambda: self.send(200, "text/plain; charset=iso-8859-1", "café".encode("latin-1")),
            "/data.json": lambda: self.send(200, "application/json", b'{"a": 1}'),
            "/untyped": lambda: self.send(200, None, b"no type given"),
            "/untyped.bin": lambda: self.send(200, None, b"\x00\x01\x02"),
            "/image.png": lambda: self.send(200, "image/png", b"\x89PNG\r\n\x1a\n"),
            "/redirect": lambda: self.redirect("/plain.txt"),
            "/loop": lambda: self.redirect("/loop"),
            "/offhost": lambda: self.redirect(f"http://localhost:{self.server.server_port}/plain.txt"),
            "/to-ftp": lambda: self.redirect("ftp://127.0.0.1/file"),
            "/missing": lambda: self.send(404, "text/plain", b"not here"),
            "/endless": self.endless,
            "/slow": self.slow,
        }
        routes.get(self.path, lambda: self.send(404, "text/plain", b""))()

    def send(self, status: int, content_type: str | None, body: bytes) -> None:
        self.send_response(status)
        if content_type:
            self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def redirect(self, location: str) -> None:
        self.send_response(302)
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def endless(self) -> None:
        """A body with no end in sight: only a reader that stops can return."""
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.end_headers()
        try:
            for _ in range(2000):  # 128 MB at most, should the reader never stop
                self.wfile.write(CHUNK)
        except OSError:
            pass

    def slow(self) -> None:
        time.sleep(2)
        self.send(200, "text/plain", b"late")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def base() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()


@pytest.fixture
def ctx(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ToolContext:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)  # the loopback server is reached directly
    return ToolContext(root=tmp_path, workspace=DiskWorkspace(), session_id="s1", call_id="c1")


async def fetch(ctx: ToolContext, **arguments) -> ToolResult:
    tool = FetchTool()
    action = await tool.prepare(tool.Input.model_validate(arguments), ctx)
    return await action.apply(ctx)


async def test_html_becomes_markdown_without_scripts_or_styles(ctx, base):
    output = (await fetch(ctx, url=f"{base}/page.html")).output
    assert "# Heading" in output
    assert "**bold**" in output
    assert "[link](/next)" in output
    assert "- one" in output and "- two" in output
    assert "script text" not in output and "color: red" not in output and "<p>" not in output


async def test_html_as_plain_text(ctx, base):
    output = (await fetch(ctx, url=f"{base}/page.html", format="text")).output
    assert "Heading" in output and "bold" in output and "link" in output
    assert "#" not in output and "**" not in output and "](" not in output
    assert "script text" not in output


async def test_plain_text_as_it_is(ctx, base):
    result = await fetch(ctx, url=f"{base}/plain.txt")
    assert result.output == "just text\nline two\n"
    assert result.summary.startswith("200 text/plain")


async def test_charset_from_the_header(ctx, base):
    assert (await fetch(ctx, url=f"{base}/latin1.txt")).output == "café"


async def test_json_is_text(ctx, base):
    assert (await fetch(ctx, url=f"{base}/data.json")).output == '{"a": 1}'


async def test_no_content_type_text_is_read_binary_refused(ctx, base):
    assert (await fetch(ctx, url=f"{base}/untyped")).output == "no type given"
    with pytest.raises(ToolError, match="binary"):
        await fetch(ctx, url=f"{base}/untyped.bin")


async def test_binary_content_type_is_refused(ctx, base):
    with pytest.raises(ToolError, match="image/png, not text"):
        await fetch(ctx, url=f"{base}/image.png")


async def test_same_host_redirect_is_followed_and_noted(ctx, base):
    output = (await fetch(ctx, url=f"{base}/redirect")).output
    assert output.startswith("just text\nline two\n")
    assert f"[Redirected to {base}/plain.txt.]" in output


async def test_redirect_to_another_host_is_reported_not_followed(ctx, base):
    result = await fetch(ctx, url=f"{base}/offhost")
    assert "redirects to another host" in result.output
    assert "/plain.txt" in result.output and "localhost" in result.output
    assert "just text" not in result.output


async def test_redirect_to_another_scheme_is_not_followed(ctx, base):
    result = await fetch(ctx, url=f"{base}/to-ftp")
    assert "ftp://127.0.0.1/file" in result.output and "Fetch that URL" in result.output


async def test_redirect_loop_gives_up(ctx, base):
    with pytest.raises(ToolError, match="more than 5 times"):
        await fetch(ctx, url=f"{base}/loop")


async def test_http_error_status(ctx, base):
    with pytest.raises(ToolError, match="HTTP 404"):
        await fetch(ctx, url=f"{base}/missing")


async def test_stops_reading_past_the_size_limit(ctx, base, monkeypatch):
    monkeypatch.setattr(fetch_mod, "MAX_BYTES", 200_000)
    ctx.output_budget = 10**7
    output = (await fetch(ctx, url=f"{base}/endless")).output
    body, note = output.rsplit("\n", 1)
    assert body == "x" * 200_000
    assert note == "[Stopped reading after 200,000 bytes; the rest was not fetched.]"


async def test_output_capped_by_the_budget(ctx, base, monkeypatch):
    monkeypatch.setattr(fetch_mod, "MAX_BYTES", 200_000)
    ctx.output_budget = 5_000
    output = (await fetch(ctx, url=f"{base}/endless")).output
    assert len(output) <= 5_000
    assert "to fit the output budget" in output


async def test_time_limit(ctx, base, monkeypatch):
    monkeypatch.setattr(fetch_mod, "TIME_LIMIT", 0.3)
    started = time.monotonic()
    with pytest.raises(ToolError, match="did not answer within 0.3 seconds"):
        await fetch(ctx, url=f"{base}/slow")
    assert time.monotonic() - started < 1.5


async def test_connection_refused_is_a_tool_error(ctx):
    with pytest.raises(ToolError, match="Could not fetch"):
        await fetch(ctx, url="http://127.0.0.1:9/")  # the discard port: nothing listens


@pytest.mark.parametrize("url", ["ftp://example.com/file", "file:///etc/passwd", "javascript:alert(1)", "example.com/page", "http://"])
async def test_only_http_urls_with_a_host(ctx, url):
    with pytest.raises(ToolError):
        await FetchTool().prepare(FetchTool.Input.model_validate({"url": url}), ctx)


async def test_permission_is_asked_per_host(ctx):
    tool = FetchTool()
    action = await tool.prepare(tool.Input.model_validate({"url": "https://docs.example.org/a/b?q=1"}), ctx)
    assert (action.permission, action.patterns, action.always_pattern) == ("fetch", ["docs.example.org"], "docs.example.org")


async def test_unknown_format_is_refused(ctx):
    with pytest.raises(Exception, match="format"):
        FetchTool.Input.model_validate({"url": "https://example.com", "format": "html"})
