"""The streaming HTTP core every HTTP provider shares (OpenAI-compatible, Anthropic, Gemini, Ollama).

Why one module of this size (over 500 lines): every provider's request goes through these few
functions, and the transport errors, the timeouts and the redaction must be translated in one
place for all of them.

Three pieces, and an endpoint helper:

- ``open_stream(client, url, json_body=..., headers=..., limit=...)``: an async context manager
  that POSTs a JSON body and yields the streaming ``httpx.Response`` once the status is 2xx. Two
  timeouts bound it: the client's read timeout (``stall_timeout``: the first byte and each gap
  between chunks) and ``limit`` (``request_timeout``: the whole request, headers to last byte).
  A non-2xx status is turned into the matching ``ProviderError`` (``errors.error_for_status``)
  carrying the vendor's own message. Transport failures are translated wherever they happen, including while
  the caller is reading the body inside the ``async with``:

  ====================================================  ===========================
  httpx exception                                       ProviderError
  ====================================================  ===========================
  ``TimeoutException`` (connect, read, write, pool)      ``ProviderTimeout``
  ``ConnectError`` / any transport error before headers ``ConnectionFailed``
  ``RemoteProtocolError`` / ``ReadError`` mid-stream     ``StreamCut``
  ====================================================  ===========================

- ``aiter_sse_data(response)``: the ``data`` strings of a server-sent-events body, one per event,
  decoded by httpx-sse (``httpx_sse.EventSource(response).aiter_sse()``). httpx-sse follows the
  WHATWG HTML "Server-sent events" interpretation rules that matter here: comment lines
  (``: ping``) are skipped, ``data:`` with or without one following space is accepted, and
  ``\\r\\n``, ``\\r`` and ``\\n`` all end a line (tests/unit/test_openai_provider.py checks each).

- ``get_json(client, url, headers=...)``: one plain GET returning parsed JSON, with the same
  error mapping (used for model listings).

``HttpEndpoint`` bundles what each provider configures the same way (its httpx client and
timeout, the headers and API key sent with every request) and calls the pieces above with them.

Secrets are replaced by ``***`` in every error message this module builds, because some vendors
echo the key back in their 401 text: what is passed in ``secrets`` (the API key and every
configured header value, ``HttpEndpoint.secrets``), the user and password of the request URL
(``https://user:PASSWORD@host``), and any ``scheme://user:password@`` in the text. Nothing here logs.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager, contextmanager
from typing import Any

import anyio
import httpx
import httpx_sse
import pydantic_core

from totem_engine import json_in
from .errors import (
    ConnectionFailed,
    ContextOverflowError,
    InvalidRequestError,
    MalformedStream,
    ProviderError,
    ProviderTimeout,
    ServerError,
    StreamCut,
    error_for_status,
    looks_like_overflow,
)

MAX_ERROR_BODY = 64 * 1024
"""Bytes of an error body read at most: enough for any vendor message, bounded against junk."""

_REDACTED = "***"


# ---------------------------------------------------------------------------------------------
# Redaction and message extraction
# ---------------------------------------------------------------------------------------------


# The credentials part of a URL: "https://user:pw@host" -> "user:pw@".
_URL_USERINFO = re.compile(r"(?<=://)[^/?#@\s]*@")


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """``text`` with every non-empty secret, and the credentials of every URL in it, replaced by ``***``."""
    # Longest first, so a secret that contains another is replaced whole.
    for secret in sorted((s for s in secrets if s), key=len, reverse=True):
        # Very short "secrets" (e.g. "x" used as a dummy key) would shred the message; a real
        # key is long, so only redact values that could plausibly be one.
        if len(secret) >= 4:
            text = text.replace(secret, _REDACTED)
    return _URL_USERINFO.sub(_REDACTED + "@", text)


def url_credentials(url: str) -> tuple[str, ...]:
    """The user and password of ``url``, as written and percent-decoded: secrets to redact."""
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError, ValueError):
        return ()
    userinfo = parsed.userinfo.decode("ascii", errors="replace")
    found = [userinfo, *userinfo.split(":", 1), parsed.username, parsed.password] if userinfo else []
    return tuple(dict.fromkeys(value for value in found if value))


# Headers Totem or httpx set that carry no credential; every other header value is redacted.
_PUBLIC_HEADERS = frozenset({
    "accept", "accept-encoding", "connection", "content-length", "content-type", "host", "user-agent",
    "anthropic-version", "anthropic-beta",
})


def sent_secrets(request: httpx.Request) -> tuple[str, ...]:
    """What a request carried that must not be shown: its header values (but the public ones)
    and the credentials of its URL."""
    values = tuple(value for name, value in request.headers.items() if name.lower() not in _PUBLIC_HEADERS)
    return (*values, *url_credentials(str(request.url)))


def vendor_message(body: str) -> str:
    """The human message inside an error body.

    Shapes understood (in order): ``{"error": {"message": str}}`` (OpenAI, Anthropic, Gemini),
    ``{"error": str}`` (Ollama, some proxies), ``{"message": str}``, ``{"detail": str}``
    (FastAPI-based servers such as vLLM). Anything else: the body text itself, stripped.
    """
    text = body.strip()
    try:
        data = json_in.loads(text, what="the error body")
    except ValueError:
        return text
    found = _message_in(data)
    return found if found else text


def _message_in(data: Any) -> str | None:
    # Some proxies wrap the error in a one-element list (Gemini does this on some paths).
    if isinstance(data, list) and len(data) == 1:
        data = data[0]
    if not isinstance(data, dict):
        return None
    error = data.get("error")
    if isinstance(error, dict) and isinstance(error.get("message"), str) and error["message"]:
        return error["message"]
    if isinstance(error, str) and error:
        return error
    for key in ("message", "detail"):
        if isinstance(data.get(key), str) and data[key]:
            return data[key]
    return None


async def read_bounded(response: httpx.Response, limit: int = MAX_ERROR_BODY) -> str:
    """At most ``limit`` bytes of a streaming response body, decoded leniently as UTF-8."""
    buf = bytearray()
    async for piece in response.aiter_bytes():
        buf.extend(piece)
        if len(buf) >= limit:
            break
    return bytes(buf[:limit]).decode("utf-8", errors="replace")


async def error_from_response(
    response: httpx.Response, secrets: Iterable[str | None] = ()
) -> ProviderError:
    """The ProviderError for a non-2xx streaming response: vendor message, status, Retry-After."""
    try:
        body = await read_bounded(response)
    except httpx.HTTPError:
        # The status line already tells the class; a body we cannot read only loses detail.
        body = ""
    message = vendor_message(body) or f"HTTP {response.status_code} {response.reason_phrase}".strip()
    error = error_for_status(response.status_code, redact(message, secrets), response.headers)
    if error.transient and error.retry_after is None:
        error.retry_after = retry_delay_in_body(body)
    return error


def retry_delay_in_body(body: str) -> float | None:
    """Seconds from a ``google.rpc.RetryInfo`` detail (``{"error": {"details": [{"@type":
    ".../google.rpc.RetryInfo", "retryDelay": "37s"}]}}``), which Gemini sends instead of a
    Retry-After header; None when there is none."""
    try:
        data = json_in.loads(body, what="the error body")
    except ValueError:
        return None
    if isinstance(data, list) and len(data) == 1:
        data = data[0]
    error = data.get("error") if isinstance(data, dict) else None
    details = error.get("details") if isinstance(error, dict) else None
    for detail in details if isinstance(details, list) else ():
        delay = detail.get("retryDelay") if isinstance(detail, dict) else None
        if isinstance(delay, str) and delay.endswith("s"):
            try:
                return max(0.0, float(delay[:-1]))
            except ValueError:
                return None
    return None


# Vendor error "type"/"code" words sent inside a stream, mapped to the HTTP status they mean.
# OpenAI: rate_limit_exceeded, server_error, invalid_request_error, context_length_exceeded ...
# Anthropic: overloaded_error, api_error, rate_limit_error, authentication_error ...
_KIND_STATUS: tuple[tuple[str, int], ...] = (
    ("context_length", 400),
    ("rate_limit", 429),
    ("quota", 429),
    ("overloaded", 529),
    ("unavailable", 503),
    ("authentication", 401),
    ("invalid_api_key", 401),
    ("permission", 403),
    ("not_found", 404),
    ("invalid_request", 400),
    ("timeout", 408),
    ("server_error", 500),
    ("api_error", 500),
    ("internal", 500),
)


def error_from_payload(
    error: Any, headers: Mapping[str, str] | None = None, secrets: Iterable[str | None] = ()
) -> ProviderError:
    """The ProviderError for an error object sent inside a 200 stream.

    ``error`` is the vendor's error value: ``{"message", "type", "code"}`` (OpenAI family;
    ``code`` may be an HTTP status number or a word), ``{"type": "overloaded_error", ...}``
    (Anthropic) or a bare string. Unknown kinds are ``ServerError``: the server failed mid-answer,
    which is worth a retry; an over-the-window message is always ``ContextOverflowError``.
    """
    headers = headers or {}
    if isinstance(error, dict):
        message = _message_in({"error": error}) or json.dumps(error)[:2000]
        words = " ".join(str(error.get(k, "")) for k in ("type", "code", "status")).lower()
        code = error.get("code")
    else:
        message, words, code = str(error), "", None
    message = redact(message, secrets)
    status = _status_from_code(code)
    if status is None:
        status = next((s for word, s in _KIND_STATUS if word in words), None)
    if status is None:
        if looks_like_overflow(message):
            return ContextOverflowError(message)
        return ServerError(message)
    return error_for_status(status, message, headers)


def _status_from_code(code: Any) -> int | None:
    if isinstance(code, bool):
        return None
    if isinstance(code, int) and 400 <= code <= 599:
        return code
    if isinstance(code, str) and code.isdigit() and 400 <= int(code) <= 599:
        return int(code)
    return None


# ---------------------------------------------------------------------------------------------
# Transport errors
# ---------------------------------------------------------------------------------------------


def translate_transport_error(
    exc: httpx.HTTPError, url: str, *, streaming: bool, secrets: Iterable[str | None] = ()
) -> ProviderError:
    """The ProviderError for an httpx failure; ``streaming`` is True once the 2xx headers arrived."""
    where = redact(url, secrets)
    detail = redact(str(exc) or type(exc).__name__, secrets)
    if isinstance(exc, httpx.TimeoutException):
        phase = "while streaming" if streaming else "waiting for"
        return ProviderTimeout(f"timed out {phase} {where}: {detail}")
    if streaming and isinstance(exc, (httpx.RemoteProtocolError, httpx.ReadError)):
        return StreamCut(f"connection to {where} dropped mid-stream: {detail}")
    if isinstance(exc, httpx.ConnectError):
        return ConnectionFailed(f"cannot connect to {where}: {detail}")
    if isinstance(exc, httpx.TransportError):
        if streaming:
            return StreamCut(f"connection to {where} failed mid-stream: {detail}")
        return ConnectionFailed(f"connection to {where} failed before an answer: {detail}")
    # Anything else httpx raises (bad URL, decoding errors) is the request itself being wrong.
    return InvalidRequestError(f"request to {where} failed: {detail}")


# ---------------------------------------------------------------------------------------------
# Streaming POST, SSE, plain GET
# ---------------------------------------------------------------------------------------------


class TlsOnDemand(httpx.AsyncBaseTransport):
    """httpx's default transport, with the certificates loaded at the first https request.

    Loading the CA bundle costs about 40 ms of every start, which a provider on plain http (a
    loopback or local model server) never needs. Plain http goes through a transport whose TLS
    context holds no CA at all, so TLS through it could never verify (it is not used for TLS:
    https takes the other transport). Proxies from the environment are the client's own mounts,
    as without this transport.
    """

    def __init__(self) -> None:
        self._plain: httpx.AsyncHTTPTransport | None = None
        self._tls: httpx.AsyncHTTPTransport | None = None

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.scheme == "https":
            if self._tls is None:
                self._tls = httpx.AsyncHTTPTransport()
            return await self._tls.handle_async_request(request)
        if self._plain is None:
            import ssl

            self._plain = httpx.AsyncHTTPTransport(verify=ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT))
        return await self._plain.handle_async_request(request)

    async def aclose(self) -> None:
        for transport in (self._plain, self._tls):
            if transport is not None:
                await transport.aclose()


@asynccontextmanager
async def open_stream(
    client: httpx.AsyncClient,
    url: str,
    *,
    json_body: Any,
    headers: Mapping[str, str] | None = None,
    secrets: Iterable[str | None] = (),
    limit: float | None = None,
) -> AsyncIterator[httpx.Response]:
    """POST ``json_body`` to ``url`` and yield the 2xx response, unread, for streaming.

    ``limit``: seconds for the whole request, from sending it to the body's last byte (None: no
    cap beyond the client's own timeouts); past it, reading raises ``ProviderTimeout``.

    Raises ProviderError subclasses only (see the module docstring). httpx errors raised by the
    caller while reading the body inside the ``async with`` are translated too, as mid-stream
    failures; ProviderErrors the caller raises pass through unchanged.
    """
    secrets = (*secrets, *url_credentials(url))
    streaming = False
    ends = None if limit is None else anyio.current_time() + limit
    try:
        async with AsyncExitStack() as stack:
            with _within(ends, limit, url, secrets):
                response = await stack.enter_async_context(
                    client.stream("POST", url, content=_json_bytes(json_body), headers=_json_headers(headers))
                )
                if not response.is_success:
                    raise await error_from_response(response, secrets)
            streaming = True
            if ends is not None:
                response.stream = _Bounded(response.stream, ends, limit, client.timeout.read, url, secrets)
            yield response
    except httpx.HTTPError as exc:
        raise translate_transport_error(exc, url, streaming=streaming, secrets=secrets) from None


def _json_bytes(body: Any) -> bytes:
    """``body`` as compact UTF-8 JSON, the bytes httpx's ``json=`` makes (its ``json.dumps`` with
    ``ensure_ascii=False`` and no spaces), in about a fifth of the time: the request grows with
    the session and is encoded at every step (bench/steps.py)."""
    return pydantic_core.to_json(body)


def _json_headers(headers: Mapping[str, str] | None) -> httpx.Headers:
    """``headers`` with ``Content-Type: application/json`` unless they name one (in any case),
    as httpx's ``json=`` does."""
    merged = httpx.Headers(headers or {})
    merged.setdefault("Content-Type", "application/json")
    return merged


@contextmanager
def _within(ends: float | None, limit: float | None, url: str, secrets: tuple[str | None, ...]) -> Iterator[None]:
    """A block that must end by ``ends`` (``anyio.current_time()``; None: no cap), else
    ``ProviderTimeout`` naming the limit. Entered around single awaits only, never across a
    yield, so the cancellation it may cause stays inside this module."""
    if ends is None:
        yield
        return
    with anyio.CancelScope(deadline=ends) as scope:
        yield
    if scope.cancelled_caught:
        raise ProviderTimeout(f"no complete answer from {redact(url, secrets)} within request_timeout ({limit:g} s)")


class _Bounded(httpx.AsyncByteStream):
    """A response body whose reads end at the request's deadline (``open_stream``'s ``limit``).

    A cancel scope around every read cost about a third of a fast stream's time in Totem (20,000
    deltas: bench/stream_latency.py), so reads go unguarded while the deadline is more than two
    read timeouts (``stall``, the client's) away: such a read ends by itself before the deadline,
    with its bytes or with the client's ReadTimeout. Past that point each read is guarded again.
    With no read timeout every read is guarded.
    """

    def __init__(self, inner: httpx.AsyncByteStream, ends: float, limit: float | None, stall: float | None, url: str,
                 secrets: tuple[str | None, ...]):
        self.inner, self.ends, self.limit, self.url, self.secrets = inner, ends, limit, url, secrets
        # In time.monotonic(), cheaper to read than anyio.current_time() (which may be another clock).
        self.guard_from = float("-inf") if stall is None else time.monotonic() + (ends - anyio.current_time()) - 2 * stall

    async def __aiter__(self) -> AsyncIterator[bytes]:
        chunks = self.inner.__aiter__()
        while time.monotonic() < self.guard_from:
            try:
                chunk = await chunks.__anext__()
            except StopAsyncIteration:
                return
            yield chunk
        while True:
            with _within(self.ends, self.limit, self.url, self.secrets):
                try:
                    chunk = await chunks.__anext__()
                except StopAsyncIteration:
                    return
            yield chunk

    async def aclose(self) -> None:
        await self.inner.aclose()


async def aiter_sse_data(response: httpx.Response) -> AsyncIterator[str]:
    """The ``data`` field of each server-sent event, in order (multi-line data joined by ``\\n``).

    Events with no data (keep-alives, bare ``event:`` lines) are skipped. A body that is not
    ``text/event-stream`` raises MalformedStream naming the content type, unless it is a JSON
    error object, which raises the matching ProviderError (some gateways answer 200 + JSON error).
    """
    content_type = response.headers.get("content-type", "")
    if "text/event-stream" not in content_type.lower():
        raise await _not_an_event_stream(response, content_type)
    async for event in httpx_sse.EventSource(response).aiter_sse():
        if event.data:
            yield event.data


async def _not_an_event_stream(response: httpx.Response, content_type: str) -> ProviderError:
    body = await read_bounded(response)
    try:
        data = json_in.loads(body, what="the answer")
    except ValueError:
        data = None
    secrets = sent_secrets(response.request)
    if isinstance(data, dict) and "error" in data:
        return error_from_payload(data["error"], response.headers, secrets=secrets)
    shown = content_type or "no content type"
    return MalformedStream(
        redact(f"expected a text/event-stream answer, got {shown}: {body[:200]!r}", secrets)
    )


async def get_json(
    client: httpx.AsyncClient,
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    secrets: Iterable[str | None] = (),
) -> Any:
    """GET ``url`` and return its JSON body; errors mapped as for ``open_stream``."""
    secrets = (*secrets, *url_credentials(url))
    try:
        async with client.stream("GET", url, headers=dict(headers or {})) as response:
            if not response.is_success:
                raise await error_from_response(response, secrets)
            body = await response.aread()
    except httpx.HTTPError as exc:
        raise translate_transport_error(exc, url, streaming=False, secrets=secrets) from None
    try:
        return json_in.loads(body, what="the answer")
    except ValueError:
        text = body[:200].decode("utf-8", errors="replace")
        raise MalformedStream(f"{redact(url, secrets)} did not answer JSON: {text!r}") from None


# ---------------------------------------------------------------------------------------------
# One configured endpoint
# ---------------------------------------------------------------------------------------------


class HttpEndpoint:
    """The HTTP side every provider sets up the same way: its client, headers and key.

    ``client``: used as is and never closed here when given; otherwise one is made whose
    ``timeout`` (``stall_timeout``) bounds connecting (at most 30 s) and each wait for bytes,
    and ``aclose`` closes it. ``request_timeout`` caps each streamed request as a whole. Every
    request sends ``Accept`` (``stream_accept`` for a stream, else JSON), then ``defaults``, then the configured ``headers`` (which may override a default), then the key,
    when set, as ``key_header: key_prefix + api_key``. The key is redacted from every error.
    """

    def __init__(
        self,
        api_key: str | None,
        *,
        headers: Mapping[str, str] | None,
        timeout: float,
        client: httpx.AsyncClient | None,
        key_header: str,
        request_timeout: float | None = None,
        key_prefix: str = "",
        stream_accept: str = "text/event-stream",
        defaults: Mapping[str, str] | None = None,
    ) -> None:
        self.api_key = api_key
        self.request_timeout = request_timeout
        self.headers = dict(headers or {})
        self._key_header = key_header
        self._key_prefix = key_prefix
        self._stream_accept = stream_accept
        self._defaults = dict(defaults or {})
        self._owns_client = client is None
        self.client = client or httpx.AsyncClient(
            timeout=httpx.Timeout(timeout, connect=min(timeout, 30.0)), transport=TlsOnDemand()
        )

    def __repr__(self) -> str:
        # Never show the key, even in a debugger or a log of provider objects.
        return f"HttpEndpoint(key_header={self._key_header!r})"

    @property
    def secrets(self) -> tuple[str | None, ...]:
        """What to redact from error messages: the key and every configured header value (they
        often carry credentials: ``X-Api-Key``, ``Authorization``, a gateway's token)."""
        return (self.api_key, *self.headers.values())

    def request_headers(self, *, streaming: bool) -> dict[str, str]:
        headers = {"Accept": self._stream_accept if streaming else "application/json", **self._defaults}
        headers.update(self.headers)
        if self.api_key:
            headers[self._key_header] = self._key_prefix + self.api_key
        return headers

    def post(
        self, url: str, json_body: Any, *, streaming: bool = True
    ) -> AbstractAsyncContextManager[httpx.Response]:
        """``open_stream`` on this endpoint: ``async with endpoint.post(url, body) as response``."""
        return open_stream(
            self.client,
            url,
            json_body=json_body,
            headers=self.request_headers(streaming=streaming),
            secrets=self.secrets,
            limit=self.request_timeout,
        )

    async def get_json(self, url: str) -> Any:
        """``get_json`` on this endpoint."""
        return await get_json(self.client, url, headers=self.request_headers(streaming=False), secrets=self.secrets)

    async def aclose(self) -> None:
        if self._owns_client:
            await self.client.aclose()


__all__ = [
    "MAX_ERROR_BODY",
    "HttpEndpoint",
    "aiter_sse_data",
    "error_from_payload",
    "error_from_response",
    "get_json",
    "open_stream",
    "read_bounded",
    "redact",
    "sent_secrets",
    "translate_transport_error",
    "url_credentials",
    "vendor_message",
]

