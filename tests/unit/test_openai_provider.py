"""OpenAIProvider and the shared HTTP core against a real loopback server (tests/support)."""

from __future__ import annotations

import json
import socket

import pytest

from tests.support.model_server import ModelServer, Reply, chunk, text_reply, tool_reply
from tests.support.streams import calls, collector, hi, texts
from totem_engine.providers.errors import (
    AuthenticationError,
    ConnectionFailed,
    ContextOverflowError,
    InvalidRequestError,
    MalformedStream,
    OverloadedError,
    ProviderTimeout,
    RateLimitError,
    ServerError,
    StreamCut,
)
from totem_engine.providers.http import error_from_payload, vendor_message
from totem_engine.providers.openai import OpenAIProvider
from totem_engine.vocab.chat import ChatRequest, FinishChunk, ReasoningChunk, TextChunk, UsageChunk
from totem_engine.vocab.messages import Message
from totem_engine.vocab.tools import ToolCall, ToolSpec

KEY = "sk-test-secret-key-0123456789"
REQUEST = hi("test-model")


@pytest.fixture
def server():
    with ModelServer() as srv:
        yield srv


@pytest.fixture
async def provider(server):
    prov = OpenAIProvider("local", server.base_url, KEY)
    yield prov
    await prov.aclose()


collect = collector(REQUEST)


# ---------------------------------------------------------------------------------------------
# Happy paths
# ---------------------------------------------------------------------------------------------


async def test_text_streams_in_pieces_then_usage_and_finish(server, provider):
    server.enqueue(text_reply("Hello, world!", pieces=3, usage=(12, 7)))
    chunks = await collect(provider)
    assert [c for c in chunks if isinstance(c, TextChunk)] == [
        TextChunk("Hello"),
        TextChunk(", wo"),
        TextChunk("rld!"),
    ]
    assert chunks[-2:] == [UsageChunk(12, 7), FinishChunk(reason="stop", model="test-model")]


async def test_reasoning_content_and_reasoning_are_both_reasoning(server, provider):
    server.enqueue(
        Reply(
            events=[
                chunk({"role": "assistant", "reasoning_content": "think "}),
                chunk({"reasoning": "more"}),
                chunk({"content": "answer"}),
                chunk({}, finish_reason="stop"),
            ]
        )
    )
    chunks = await collect(provider)
    assert texts(chunks, ReasoningChunk) == "think more"
    assert texts(chunks, TextChunk) == "answer"
    # Reasoning arrives before the text, as streamed.
    kinds = [type(c) for c in chunks if isinstance(c, (TextChunk, ReasoningChunk))]
    assert kinds == [ReasoningChunk, ReasoningChunk, TextChunk]


async def test_delta_with_both_reasoning_fields_is_not_doubled(server, provider):
    server.enqueue(
        Reply(events=[chunk({"reasoning_content": "x", "reasoning": "x"}), chunk({}, finish_reason="stop")])
    )
    assert texts(await collect(provider), ReasoningChunk) == "x"


async def test_parallel_tool_calls_split_across_chunks(server, provider):
    server.enqueue(
        tool_reply([("read_file", {"path": "a.py"}), ("grep", {"pattern": "def ", "n": 3})], text="Let me look.", split=4)
    )
    chunks = await collect(provider)
    got = calls(chunks)
    assert [(c.id, c.name) for c in got] == [("call_1", "read_file"), ("call_2", "grep")]
    assert json.loads(got[0].arguments) == {"path": "a.py"}
    assert json.loads(got[1].arguments) == {"pattern": "def ", "n": 3}
    assert texts(chunks, TextChunk) == "Let me look."
    assert chunks[-1] == FinishChunk(reason="tool_calls", model="test-model")


async def test_interleaved_tool_call_deltas_are_assembled_by_index(server, provider):
    def call(index, **fields):
        return chunk({"tool_calls": [{"index": index, **fields}]})

    server.enqueue(
        Reply(
            events=[
                call(0, id="A", type="function", function={"name": "one", "arguments": ""}),
                call(1, id="B", type="function", function={"name": "two", "arguments": '{"b"'}),
                call(0, function={"arguments": '{"a": '}),
                call(1, function={"arguments": ": 2}"}),
                call(0, function={"arguments": "1}"}),
                chunk({}, finish_reason="tool_calls"),
            ]
        )
    )
    got = calls(await collect(provider))
    assert got == [ToolCall("A", "one", '{"a": 1}'), ToolCall("B", "two", '{"b": 2}')]


async def test_new_id_under_used_index_starts_a_new_call(server, provider):
    server.enqueue(
        Reply(
            events=[
                chunk({"tool_calls": [{"index": 0, "id": "first", "function": {"name": "ls", "arguments": '{"p": 1}'}}]}),
                # Same id repeated and an empty id (Alibaba) continue the call, they do not split it.
                chunk({"tool_calls": [{"index": 0, "id": "first", "function": {"arguments": ""}}]}),
                chunk({"tool_calls": [{"index": 0, "id": "", "function": {"arguments": ""}}]}),
                chunk({"tool_calls": [{"index": 0, "id": "second", "function": {"name": "cat", "arguments": ""}}]}),
                chunk({}, finish_reason="tool_calls"),
            ]
        )
    )
    got = calls(await collect(provider))
    assert got == [ToolCall("first", "ls", '{"p": 1}'), ToolCall("second", "cat", "{}")]


async def test_raw_arguments_are_kept_for_the_loop_to_parse(server, provider):
    server.enqueue(
        Reply(
            events=[
                chunk({"tool_calls": [{"index": 0, "id": "c", "function": {"name": "x", "arguments": "{not json"}}]}),
                chunk({}, finish_reason="tool_calls"),
            ]
        )
    )
    assert calls(await collect(provider)) == [ToolCall("c", "x", "{not json")]


async def test_usage_only_chunk_after_finish(server, provider):
    server.enqueue(
        Reply(
            events=[
                chunk({"content": "ok"}),
                chunk({}, finish_reason="length"),
                chunk(usage=(295, 22), choices=False),
            ]
        )
    )
    chunks = await collect(provider)
    assert [c for c in chunks if isinstance(c, UsageChunk)] == [UsageChunk(295, 22)]
    assert chunks[-1].reason == "length"


async def test_eof_after_finish_reason_without_done_is_a_normal_end(server, provider):
    reply = text_reply("fine", usage=None)
    reply.done = False
    server.enqueue(reply)
    chunks = await collect(provider)
    assert texts(chunks, TextChunk) == "fine"
    assert chunks[-1] == FinishChunk(reason="stop", model="test-model")


async def test_models_lists_ids_and_context_windows(server, provider):
    server.models = [
        {"id": "a", "object": "model", "context_length": 8192},
        {"id": "b", "object": "model", "max_model_len": 4096},
        {"id": "c", "object": "model", "context_window": 1000},
        {"id": "d", "object": "model"},
    ]
    models = await provider.models()
    assert [(m.id, m.provider, m.context_window) for m in models] == [
        ("a", "local", 8192),
        ("b", "local", 4096),
        ("c", "local", 1000),
        ("d", "local", None),
    ]


# ---------------------------------------------------------------------------------------------
# Request shape
# ---------------------------------------------------------------------------------------------


async def test_request_body_shape(server):
    server.enqueue(text_reply("one"))
    server.enqueue(text_reply("two"))
    prov = OpenAIProvider("local", server.base_url + "/", KEY, headers={"X-Title": "totem"})
    tool = ToolSpec("read_file", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}}})
    request = ChatRequest(
        model="m-1",
        system="You are Totem.",
        messages=(
            Message("user", "read a.py"),
            Message("assistant", "", reasoning="secret thoughts", tool_calls=(ToolCall("call_9", "read_file", '{"path": "a.py"}'),)),
            Message("tool", "print(1)", tool_call_id="call_9", name="read_file"),
            Message("assistant", "It prints 1."),
        ),
        tools=(tool,),
        max_tokens=256,
        temperature=0.2,
        seed=3,
    )
    try:
        await collect(prov, request)
        await collect(prov, ChatRequest(model="m-2", system="", messages=(Message("user", "x"),)))
    finally:
        await prov.aclose()

    first, second = server.requests
    assert first == {
        "model": "m-1",
        "messages": [
            {"role": "system", "content": "You are Totem."},
            {"role": "user", "content": "read a.py"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"id": "call_9", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a.py"}'}}
                ],
            },
            {"role": "tool", "tool_call_id": "call_9", "content": "print(1)"},
            {"role": "assistant", "content": "It prints 1."},
        ],
        "stream": True,
        "stream_options": {"include_usage": True},
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "read_file",
                    "description": "Read a file.",
                    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
                },
            }
        ],
        "max_tokens": 256,
        "temperature": 0.2,
        "seed": 3,
    }
    # No tools, no system prompt, no limits: those keys are left out entirely.
    assert second == {
        "model": "m-2",
        "messages": [{"role": "user", "content": "x"}],
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    headers = {k.lower(): v for k, v in server.request_headers[0].items()}
    assert headers["authorization"] == f"Bearer {KEY}"
    assert headers["x-title"] == "totem"


async def test_no_key_no_authorization_header(server):
    server.enqueue(text_reply("hi"))
    prov = OpenAIProvider("local", server.base_url)
    try:
        await collect(prov)
    finally:
        await prov.aclose()
    assert "authorization" not in {k.lower() for k in server.request_headers[0]}


def test_repr_hides_the_key():
    prov = OpenAIProvider("p", "http://127.0.0.1:1/v1", KEY)
    assert KEY not in repr(prov)


# ---------------------------------------------------------------------------------------------
# HTTP errors
# ---------------------------------------------------------------------------------------------


async def test_429_with_retry_after_is_rate_limit(server, provider):
    server.enqueue(
        Reply(status=429, headers={"Retry-After": "7"}, body=json.dumps({"error": {"message": "Slow down", "type": "rate_limit"}}))
    )
    with pytest.raises(RateLimitError) as info:
        await collect(provider)
    assert info.value.retry_after == 7.0
    assert info.value.status == 429
    assert info.value.message == "Slow down"
    assert info.value.transient


async def test_401_carries_server_message_but_never_the_key(server, provider):
    # OpenAI echoes (part of) the key back; a full echo must not reach the message.
    server.enqueue(
        Reply(status=401, body=json.dumps({"error": {"message": f"Incorrect API key provided: {KEY}.", "code": "invalid_api_key"}}))
    )
    with pytest.raises(AuthenticationError) as info:
        await collect(provider)
    assert "Incorrect API key provided" in info.value.message
    assert KEY not in str(info.value)
    assert info.value.status == 401


async def test_500_is_server_error_with_plain_text_body(server, provider):
    server.enqueue(Reply(status=500, body="upstream exploded"))
    with pytest.raises(ServerError) as info:
        await collect(provider)
    assert info.value.message == "upstream exploded"
    assert info.value.status == 500


async def test_empty_queue_answers_500_no_scripted_reply(server, provider):
    with pytest.raises(ServerError, match="no scripted reply"):
        await collect(provider)


async def test_400_overflow_message_is_context_overflow(server, provider):
    msg = "This model's maximum context length is 8192 tokens."
    server.enqueue(Reply(status=400, body=json.dumps({"error": {"message": msg}})))
    with pytest.raises(ContextOverflowError):
        await collect(provider)


async def test_connection_refused_is_connection_failed():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now
    prov = OpenAIProvider("gone", f"http://127.0.0.1:{port}/v1", KEY)
    try:
        with pytest.raises(ConnectionFailed) as info:
            await collect(prov)
    finally:
        await prov.aclose()
    assert KEY not in str(info.value)


async def test_stalled_stream_is_provider_timeout(server):
    reply = text_reply("slow")
    reply.hold = 10  # the server goes quiet before [DONE]; ModelServer.stop cuts the hold short
    server.enqueue(reply)
    prov = OpenAIProvider("local", server.base_url, KEY, timeout=0.3)
    try:
        with pytest.raises(ProviderTimeout):
            await collect(prov)
    finally:
        await prov.aclose()


async def test_a_dripping_stream_ends_at_the_request_timeout(server):
    # One delta every 0.4 s keeps each read under the stall timeout; the whole request still
    # ends at request_timeout, long before the 20 deltas are sent (issue 16, item 12).
    reply = text_reply("x" * 20, pieces=20)
    reply.delay = 0.4
    server.enqueue(reply)
    prov = OpenAIProvider("local", server.base_url, KEY, timeout=5, request_timeout=1.0)
    seen: list = []
    try:
        with pytest.raises(ProviderTimeout, match=r"within request_timeout \(1 s\)"):
            async for piece in prov.stream(REQUEST):
                seen.append(piece)
    finally:
        await prov.aclose()
    assert 0 < len(texts(seen, TextChunk)) < 10


async def test_a_dripping_stream_ends_at_the_request_timeout_beyond_twice_the_stall_timeout(server):
    # request_timeout (1 s) more than twice the stall timeout (0.2 s): the first reads go
    # unguarded (providers/http.py, _Bounded), the later ones still end at the request's deadline.
    reply = text_reply("x" * 20, pieces=20)
    reply.delay = 0.15
    server.enqueue(reply)
    prov = OpenAIProvider("local", server.base_url, KEY, timeout=0.2, request_timeout=1.0)
    seen: list = []
    try:
        with pytest.raises(ProviderTimeout, match=r"within request_timeout \(1 s\)"):
            async for piece in prov.stream(REQUEST):
                seen.append(piece)
    finally:
        await prov.aclose()
    assert 0 < len(texts(seen, TextChunk)) < 15


async def test_a_steady_stream_under_the_request_timeout_is_whole(server):
    reply = text_reply("abcdef", pieces=3)
    reply.delay = 0.05
    server.enqueue(reply)
    prov = OpenAIProvider("local", server.base_url, KEY, timeout=5, request_timeout=5.0)
    try:
        assert texts(await collect(prov), TextChunk) == "abcdef"
    finally:
        await prov.aclose()


# ---------------------------------------------------------------------------------------------
# Broken streams
# ---------------------------------------------------------------------------------------------


async def test_connection_dropped_mid_stream_is_stream_cut(server, provider):
    reply = text_reply("abcdef", pieces=3)
    reply.cut_after = 2
    server.enqueue(reply)
    seen = []
    with pytest.raises(StreamCut):
        async for c in provider.stream(REQUEST):
            seen.append(c)
    assert not any(isinstance(c, FinishChunk) for c in seen)


async def test_clean_eof_without_done_or_finish_is_stream_cut(server, provider):
    server.enqueue(Reply(events=[chunk({"content": "half an ans"})], done=False))
    with pytest.raises(StreamCut):
        await collect(provider)


async def test_malformed_json_payload(server, provider):
    server.enqueue(Reply(events=[chunk({"content": "ok"}), "{this is not json"]))
    with pytest.raises(MalformedStream, match="not JSON"):
        await collect(provider)


async def test_non_object_payload_is_malformed(server, provider):
    server.enqueue(Reply(events=["[1, 2]"]))
    with pytest.raises(MalformedStream, match="not a JSON object"):
        await collect(provider)


async def test_200_that_is_not_an_event_stream_is_malformed(server, provider):
    server.enqueue(Reply(status=200, body="<html>captive portal</html>", headers={"Content-Type": "text/html"}))
    with pytest.raises(MalformedStream, match="text/html"):
        await collect(provider)


@pytest.mark.parametrize(
    ("error", "cls"),
    [
        ({"message": "Rate limit reached", "type": "rate_limit_exceeded"}, RateLimitError),
        ({"message": "busy", "type": "overloaded_error"}, OverloadedError),
        ({"message": "bad gateway", "code": 502}, ServerError),
        ({"message": "Invalid key", "code": "invalid_api_key"}, AuthenticationError),
        ({"message": "too many tokens in prompt"}, ContextOverflowError),
        ({"message": "something odd"}, ServerError),
    ],
)
async def test_error_object_inside_stream(server, provider, error, cls):
    server.enqueue(Reply(events=[chunk({"content": "par"}), {"error": error}]))
    with pytest.raises(cls) as info:
        await collect(provider)
    assert type(info.value) is cls
    assert info.value.message == error["message"]


# ---------------------------------------------------------------------------------------------
# SSE wire details (httpx-sse decoding, checked end to end)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("eol", ["\n", "\r\n", "\r"], ids=["lf", "crlf", "cr"])
async def test_sse_comments_no_space_and_line_endings(server, provider, eol):
    one = json.dumps(chunk({"content": "Hel"}))
    two = json.dumps(chunk({"content": "lo"}))
    end = json.dumps(chunk({}, finish_reason="stop"))
    lines = [
        ": ping",
        "",
        f"data:{one}",  # no space after the colon
        "",
        ":another comment",
        f"data: {two}",
        "",
        "event: message",
        f"data: {end}",
        "",
        "data:[DONE]",
        "",
    ]
    body = eol.join(lines) + eol
    server.enqueue(Reply(body=body, headers={"Content-Type": "text/event-stream; charset=utf-8"}))
    chunks = await collect(provider)
    assert texts(chunks, TextChunk) == "Hello"
    assert chunks[-1] == FinishChunk(reason="stop", model="test-model")


# ---------------------------------------------------------------------------------------------
# Helpers of the HTTP core
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('{"error": {"message": "nope", "type": "x"}}', "nope"),
        ('{"error": "model not found"}', "model not found"),
        ('{"detail": "Not Found"}', "Not Found"),
        ("  plain text  ", "plain text"),
        ('{"unrelated": 1}', '{"unrelated": 1}'),
    ],
)
def test_vendor_message(body, message):
    assert vendor_message(body) == message


def test_error_from_payload_redacts_secrets_and_defaults_to_400_class():
    err = error_from_payload({"message": f"bad key {KEY}", "type": "invalid_request_error"}, secrets=(KEY,))
    assert isinstance(err, InvalidRequestError)
    assert KEY not in err.message


def test_a_configured_content_type_is_sent_alone():
    from totem_engine.providers.http import _json_headers

    assert _json_headers(None).get_list("content-type") == ["application/json"]
    # A header of the user's config wins, whatever its case, as with httpx's own json=.
    mine = _json_headers({"content-type": "application/json; charset=utf-8", "X-Title": "totem"})
    assert mine.get_list("content-type") == ["application/json; charset=utf-8"]
    assert mine["x-title"] == "totem"
