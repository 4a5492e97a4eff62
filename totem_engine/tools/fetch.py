"""fetch: a web page or text file over http(s), HTML turned into Markdown or plain text.

Permission is asked per host. So that an answer for one host never lets another be contacted,
redirects are followed only on the same host; a redirect elsewhere is reported instead.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass
from typing import Any, Literal

import anyio
import httpx
from pydantic import Field

from totem_engine.tools.base import Action, Tool, ToolContext, ToolInput, ToolResult
from totem_engine.tools.read import looks_binary
from totem_engine.vocab.accounts import first_line, short
from totem_engine.vocab.tools import ToolError

TIME_LIMIT = 30.0  # seconds for the whole fetch, redirects included
MAX_BYTES = 5 * 1024 * 1024
MAX_REDIRECTS = 5
NOTE_ROOM = 300  # characters of the output budget kept for the notes

TEXT_TYPES = frozenset({
    "application/json", "application/xml", "application/javascript", "application/ecmascript",
    "application/x-javascript", "application/yaml", "application/x-yaml", "application/toml",
    "application/x-sh", "application/sql", "application/xhtml+xml",
})
HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
# Elements whose text is code or chrome, not content.
DROPPED = ["script", "style", "noscript", "template", "svg", "iframe"]


class FetchInput(ToolInput):
    url: str = Field(description="The http:// or https:// URL to fetch.")
    format: Literal["text", "markdown"] = Field(
        "markdown", description="How to return HTML: markdown (default) keeps headings, links and lists; text is plain."
    )


def parse_url(raw: str) -> httpx.URL:
    """The URL, or a ToolError unless it is http(s) with a host."""
    try:
        url = httpx.URL(raw.strip())
    except httpx.InvalidURL as exc:
        raise ToolError(f"{raw!r} is not a valid URL: {exc}.") from None
    if url.scheme not in ("http", "https"):
        raise ToolError(f"Only http:// and https:// URLs can be fetched, not {url.scheme or 'a relative'} URL {raw!r}.")
    if not url.host:
        raise ToolError(f"{raw!r} has no host.")
    return url


def media_type(response: httpx.Response) -> str:
    """``text/html`` from ``text/html; charset=utf-8``; '' when the server sent none."""
    return response.headers.get("content-type", "").split(";", 1)[0].strip().lower()


def is_text(kind: str) -> bool:
    return kind.startswith("text/") or kind in TEXT_TYPES or kind.endswith(("+json", "+xml"))


class OffHost(Exception):
    """A redirect to another host: the URL it points to."""


async def open_response(client: httpx.AsyncClient, url: httpx.URL) -> httpx.Response:
    """The final response (streamed, still open) after same-host redirects; OffHost if one leaves."""
    request = client.build_request("GET", url)
    for _ in range(MAX_REDIRECTS + 1):
        response = await client.send(request, stream=True)
        if response.next_request is None:
            return response
        await response.aclose()
        request = response.next_request
        if request.url.host != url.host or request.url.scheme not in ("http", "https"):
            raise OffHost(str(request.url))
    raise ToolError(f"{url} redirected more than {MAX_REDIRECTS} times; giving up.")


async def read_body(response: httpx.Response) -> tuple[bytes, bool]:
    """(the body up to MAX_BYTES, whether more was left unread)."""
    data = bytearray()
    async for chunk in response.aiter_bytes():
        data.extend(chunk)
        if len(data) > MAX_BYTES:
            return bytes(data[:MAX_BYTES]), True
    return bytes(data), False


def html_to(data: bytes, charset: str | None, format: str) -> str:
    """Markdown or plain text of an HTML page, without scripts, styles and the like."""
    # Imported here: bs4 and soupsieve cost about 80 ms to import, paid only by a fetched page.
    from bs4 import BeautifulSoup
    from markdownify import MarkdownConverter

    soup = BeautifulSoup(data, "html.parser", from_encoding=charset)
    for element in soup(DROPPED):
        element.decompose()
    if format == "markdown":
        text = MarkdownConverter(heading_style="ATX", bullets="-").convert_soup(soup)
    else:
        text = soup.get_text("\n")
    lines = [line.rstrip() for line in text.splitlines()]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def decode(data: bytes, charset: str | None) -> str:
    try:
        return data.decode(charset or "utf-8", "replace")
    except LookupError:  # a charset Python does not know
        return data.decode("utf-8", "replace")


@dataclass
class FetchAction(Action):
    url: httpx.URL | None = None
    format: str = "markdown"

    async def apply(self, ctx: ToolContext) -> ToolResult:
        assert self.url is not None
        try:
            with anyio.fail_after(TIME_LIMIT):
                return await self._fetch(ctx)
        except TimeoutError:
            raise ToolError(f"{self.url} did not answer within {TIME_LIMIT:g} seconds.") from None
        except OffHost as exc:
            target = str(exc)
            return ToolResult(
                output=f"{self.url} redirects to another host: {target}\nFetch that URL to follow the redirect.",
                summary=f"redirect to {httpx.URL(target).host}",
            )
        except httpx.HTTPError as exc:
            raise ToolError(f"Could not fetch {self.url}: {exc or type(exc).__name__}.") from None

    async def _fetch(self, ctx: ToolContext) -> ToolResult:
        assert self.url is not None
        async with httpx.AsyncClient(timeout=TIME_LIMIT) as client:
            response = await open_response(client, self.url)
            async with contextlib.aclosing(response):
                if response.status_code >= 400:
                    raise ToolError(f"{response.url} answered HTTP {response.status_code} {response.reason_phrase}.")
                kind = media_type(response)
                if kind and not is_text(kind):
                    raise ToolError(f"{response.url} is {kind}, not text; fetch reads HTML and text only.")
                data, truncated = await read_body(response)
        if not kind and looks_binary(data):
            raise ToolError(f"{response.url} sent binary data without a content type; fetch reads HTML and text only.")
        charset = response.charset_encoding
        text = html_to(data, charset, self.format) if kind in HTML_TYPES else decode(data, charset)
        return self._result(ctx, response, kind, text, truncated, len(data))

    def _result(self, ctx: ToolContext, response: httpx.Response, kind: str, text: str, truncated: bool, size: int) -> ToolResult:
        notes = []
        if response.url != self.url:
            notes.append(f"[Redirected to {response.url}.]")
        if truncated:
            notes.append(f"[Stopped reading after {MAX_BYTES:,} bytes; the rest was not fetched.]")
        room = max(ctx.output_budget - NOTE_ROOM, 0)
        if len(text) > room:
            notes.append(f"[Cut at {room} of {len(text)} characters to fit the output budget.]")
            text = text[:room]
        return ToolResult(
            output="\n".join([text or "(empty response)", *notes]),
            summary=f"{response.status_code} {kind or 'no content type'}, {size} bytes",
        )


class FetchTool(Tool):
    name = "fetch"
    hook_name = "WebFetch"
    read_only = True
    Input = FetchInput

    def account(self, args: dict[str, Any], output: str, *, summary: str = "", is_error: bool = False) -> str:
        """"fetched https://… (5120 characters)"."""
        url = short(args.get("url", "?"), 100)
        if is_error:
            return f"fetched {url}: {short(first_line(output), 120)}"
        return f"fetched {url} ({len(output)} characters)"

    async def prepare(self, args: FetchInput, ctx: ToolContext) -> Action:
        url = parse_url(args.url)
        return FetchAction(
            title=f"Fetch {url}",
            permission="fetch",
            patterns=[url.host],
            always_pattern=url.host,
            url=url,
            format=args.format,
        )
