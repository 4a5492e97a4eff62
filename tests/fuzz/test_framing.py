"""SSE and NDJSON framing under arbitrary bodies cut into arbitrary reads: only ProviderError
subclasses, and a well-formed body comes out exactly as it went in, however it is cut."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import httpx
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.fuzz.support import CHEAP, examples, json_values, no_hang
from totem_engine.providers import openai
from totem_engine.providers.errors import MalformedStream, ProviderError
from totem_engine.providers.framing import NDJSONDecoder
from totem_engine.providers.http import aiter_sse_data

cuts = st.lists(st.integers(min_value=0), max_size=10)

SSE_BITS = (b"data: ", b"data:", b"event: x\n", b"id: 1\n", b"retry: 5\n", b": keep-alive\n", b"\n", b"\r\n", b"\r", b"[DONE]", b'{"choices": []}')
sse_bodies = st.lists(st.one_of(st.sampled_from(SSE_BITS), st.binary(max_size=16)), max_size=30).map(b"".join)


def reads(body: bytes, at: list[int]) -> list[bytes]:
    bounds = [0, *sorted({c % (len(body) + 1) for c in at}), len(body)]
    return [body[a:b] for a, b in zip(bounds, bounds[1:])]


class Body(httpx.AsyncByteStream):
    def __init__(self, parts: list[bytes]):
        self.parts = parts

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for part in self.parts:
            yield part


def response(body: bytes, at: list[int], content_type: str = "text/event-stream") -> httpx.Response:
    request = httpx.Request("POST", "http://127.0.0.1:9/v1/chat/completions")  # as every real answer has
    return httpx.Response(200, headers={"content-type": content_type}, stream=Body(reads(body, at)), request=request)


def run(coroutine):
    with no_hang():
        return asyncio.run(coroutine)


async def sse_data(resp: httpx.Response) -> list[str]:
    return [data async for data in aiter_sse_data(resp)]


async def parsed(resp: httpx.Response) -> list:
    return [chunk async for chunk in openai.parse_stream(aiter_sse_data(resp))]


@given(sse_bodies, cuts, st.sampled_from(("text/event-stream", "text/event-stream; charset=utf-8", "application/json", "text/html", "")))
def test_any_sse_body_gives_provider_errors_only(body, at, content_type):
    try:
        run(parsed(response(body, at, content_type)))
    except ProviderError:
        pass


@settings(max_examples=examples(CHEAP))
@given(st.lists(st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n"), min_size=1), max_size=12), cuts, st.sampled_from((b"\n", b"\r\n", b"\r")))
def test_sse_data_comes_out_as_sent_however_it_is_cut(events, at, newline):
    body = b"".join(b"data: " + e.encode() + newline + newline for e in events)
    assert run(sse_data(response(body, at))) == events


@settings(max_examples=examples(CHEAP))
@given(st.binary(max_size=200), cuts)
def test_ndjson_decoder_takes_any_bytes(body, at):
    decoder = NDJSONDecoder(max_line=64)
    try:
        with no_hang():
            for part in reads(body, at):
                decoder.feed(part)
            decoder.finish()
    except MalformedStream:
        pass


@given(st.lists(json_values, max_size=10), cuts, st.sampled_from((b"\n", b"\r\n")))
def test_ndjson_values_come_out_as_sent_however_they_are_cut(values, at, newline):
    body = b"".join(json.dumps(v, ensure_ascii=False).encode() + newline for v in values)
    decoder = NDJSONDecoder()
    out = []
    for part in reads(body, at):
        out += decoder.feed(part)
    out += decoder.finish()
    assert out == values
