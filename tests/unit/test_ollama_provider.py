"""OllamaProvider and NDJSON framing against a loopback Ollama simulator (tests/support)."""

from __future__ import annotations

import json
import math
import socket

import httpx
import pytest

from tests.support.ollama_server import (
    OllamaServer,
    Reply,
    call,
    done_line,
    line,
    text_reply,
    tool_reply,
)
from tests.support.streams import calls, collector, hi, texts
from totem_engine.config import Config, ConfigError, ConfigLayer, merge_layers
from totem_engine.providers.errors import (
    ConnectionFailed,
    InvalidRequestError,
    MalformedStream,
    ProviderError,
    ServerError,
    StreamCut,
)
from totem_engine.providers.framing import NDJSONDecoder, aiter_ndjson
from totem_engine.providers.ollama import (
    OllamaProvider,
    context_size,
    estimate_tokens,
)
from totem_engine.providers.registry import make_provider
from totem_engine.vocab.chat import ChatRequest, FinishChunk, ReasoningChunk, TextChunk, ToolCallChunk, UsageChunk
from totem_engine.vocab.messages import Message
from totem_engine.vocab.tools import ToolCall, ToolSpec

REQUEST = hi("test-model")
READ = ToolSpec("read_file", "Read a file", {"type": "object", "properties": {"path": {"type": "string"}}})


@pytest.fixture
def server():
    with OllamaServer() as srv:
        yield srv


@pytest.fixture
async def provider(server):
    prov = OllamaProvider("local", server.base_url)
    yield prov
    await prov.aclose()


collect = collector(REQUEST)


def history(chars: int) -> ChatRequest:
    """A request whose messages hold ``chars`` characters in all (no system, no tools)."""
    return ChatRequest(model="test-model", system="", messages=(Message("user", "x" * chars),))


# ---------------------------------------------------------------------------------------------
# NDJSON framing
# ---------------------------------------------------------------------------------------------


def test_decoder_keeps_partial_lines_across_feeds():
    decoder = NDJSONDecoder()
    assert decoder.feed(b'{"a": 1}\n{"b"') == [{"a": 1}]
    assert decoder.feed(b": 2") == []
    assert decoder.feed(b'}\n{"c": 3}\n') == [{"b": 2}, {"c": 3}]
    assert decoder.finish() == []


def test_decoder_skips_blank_lines_and_strips_cr():
    decoder = NDJSONDecoder()
    assert decoder.feed(b'\n  \r\n{"a": 1}\r\n\n[2]\n') == [{"a": 1}, [2]]


def test_decoder_returns_a_last_line_without_newline():
    decoder = NDJSONDecoder()
    assert decoder.feed(b'{"a": 1}\n{"done": true}') == [{"a": 1}]
    assert decoder.finish() == [{"done": True}]


def test_decoder_joins_a_multibyte_character_split_across_feeds():
    data = json.dumps({"t": "é€"}, ensure_ascii=False).encode() + b"\n"
    decoder = NDJSONDecoder()
    out = []
    for i in range(len(data)):
        out += decoder.feed(data[i : i + 1])
    assert out == [{"t": "é€"}]


def test_decoder_rejects_a_line_that_is_not_json():
    decoder = NDJSONDecoder()
    with pytest.raises(MalformedStream, match="not JSON.*data: hello"):
        decoder.feed(b'{"a": 1}\ndata: hello\n')


def test_decoder_rejects_a_runaway_line():
    decoder = NDJSONDecoder(max_line=16)
    decoder.feed(b"{" + b" " * 10)
    with pytest.raises(MalformedStream, match="longer than 16 bytes"):
        decoder.feed(b" " * 10)


async def test_aiter_ndjson_over_an_httpx_response():
    async def body():
        for piece in (b'{"n": 1}\n{"n"', b': 2}\n\n{"n": 3}'):
            yield piece

    response = httpx.Response(200, content=body())
    assert [v async for v in aiter_ndjson(response)] == [{"n": 1}, {"n": 2}, {"n": 3}]


# ---------------------------------------------------------------------------------------------
# Streaming answers
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


async def test_lines_split_across_http_chunks_and_multibyte_text(server, provider):
    reply = text_reply("héllo → wörld", pieces=4, usage=(3, 4))
    reply.chunk_size = 5
    server.enqueue(reply)
    chunks = await collect(provider)
    assert texts(chunks, TextChunk) == "héllo → wörld"
    assert UsageChunk(3, 4) in chunks


async def test_thinking_is_reasoning_and_think_is_requested_for_thinking_models(server, provider):
    server.add_model("qwen3", capabilities=["completion", "tools", "thinking"], architecture="qwen3")
    server.enqueue(text_reply("42", model="qwen3", thinking="Let me add.", pieces=2))
    chunks = await collect(provider, ChatRequest(model="qwen3", system="", messages=(Message("user", "6*7"),)))
    assert texts(chunks, ReasoningChunk) == "Let me add."
    assert texts(chunks, TextChunk) == "42"
    kinds = [type(c) for c in chunks if isinstance(c, (TextChunk, ReasoningChunk))]
    assert kinds == [ReasoningChunk, ReasoningChunk, TextChunk, TextChunk]
    assert server.requests[0]["think"] is True
    assert chunks[-1] == FinishChunk(reason="stop", model="qwen3")


async def test_think_is_not_sent_to_a_model_without_the_capability(server, provider):
    server.enqueue(text_reply("ok"))
    await collect(provider)
    assert "think" not in server.requests[0]


async def test_tool_call_without_id_gets_a_stable_id_and_empty_arguments_become_braces(server, provider):
    server.enqueue(tool_reply([call("list_todos"), call("get_time", {})], text="Checking."))
    chunks = await collect(provider)
    assert calls(chunks) == [
        ToolCall(id="call_0", name="list_todos", arguments="{}"),
        ToolCall(id="call_1", name="get_time", arguments="{}"),
    ]
    assert texts(chunks, TextChunk) == "Checking."
    # Calls come after the text, before usage and finish.
    kinds = [type(c) for c in chunks]
    assert kinds[-4:] == [ToolCallChunk, ToolCallChunk, UsageChunk, FinishChunk]


async def test_two_calls_on_two_lines_stay_two_calls_with_object_arguments(server, provider):
    server.enqueue(
        tool_reply([call("read_file", {"path": "a.py"}), call("read_file", {"path": "b.py", "limit": 3})])
    )
    got = calls(await collect(provider))
    assert [(c.id, c.name) for c in got] == [("call_0", "read_file"), ("call_1", "read_file")]
    assert json.loads(got[0].arguments) == {"path": "a.py"}
    assert json.loads(got[1].arguments) == {"path": "b.py", "limit": 3}


async def test_string_arguments_are_kept_as_sent_and_a_wire_id_is_kept(server, provider):
    wire = {"id": "abc", "function": {"name": "grep", "arguments": '{"pattern": "def "}'}}
    server.enqueue(Reply(lines=[line("", tool_calls=[wire]), done_line()]))
    assert calls(await collect(provider)) == [ToolCall(id="abc", name="grep", arguments='{"pattern": "def "}')]


async def test_tool_call_ids_restart_per_answer(server, provider):
    server.enqueue(tool_reply([call("a", {"x": 1})]))
    server.enqueue(tool_reply([call("b", {"y": 2})]))
    first = calls(await collect(provider))
    second = calls(await collect(provider))
    assert [c.id for c in first + second] == ["call_0", "call_0"]
    assert [c.name for c in first + second] == ["a", "b"]


# ---------------------------------------------------------------------------------------------
# num_ctx sizing
# ---------------------------------------------------------------------------------------------


async def test_small_request_gets_ollama_ctx(server, provider):
    server.enqueue(text_reply("ok"))
    await collect(provider)
    assert server.requests[0]["options"]["num_ctx"] == 8192
    assert "num_predict" not in server.requests[0]["options"]


async def test_large_history_gets_the_next_multiple_of_4096(server, provider):
    # 60_000 chars ~ 15_000 tokens + 4096 reserved = 19_096 -> 20_480.
    server.enqueue(text_reply("ok"))
    await collect(provider, history(60_000))
    assert server.requests[0]["options"]["num_ctx"] == 20480


async def test_num_ctx_is_capped_by_the_model_window(server, provider):
    server.add_model("small", context_length=16384)
    server.enqueue(text_reply("ok", model="small"))
    request = ChatRequest(model="small", system="", messages=(Message("user", "x" * 200_000),))
    await collect(provider, request)
    assert server.requests[0]["options"]["num_ctx"] == 16384


async def test_ollama_ctx_above_the_model_window_is_capped_too(server):
    server.add_model("tiny", context_length=4096)
    server.enqueue(text_reply("ok", model="tiny"))
    prov = OllamaProvider("local", server.base_url, ctx=8192)
    try:
        await collect(prov, ChatRequest(model="tiny", system="", messages=(Message("user", "hi"),)))
    finally:
        await prov.aclose()
    assert server.requests[0]["options"]["num_ctx"] == 4096


async def test_num_ctx_is_capped_by_ollama_ctx_max(server):
    server.enqueue(text_reply("ok"))
    prov = OllamaProvider("local", server.base_url, ctx=8192, ctx_max=12288)
    try:
        await collect(prov, history(60_000))
    finally:
        await prov.aclose()
    assert server.requests[0]["options"]["num_ctx"] == 12288


def test_context_size_counts_system_tools_and_reserved_output():
    entry = {"type": "function", "function": {"name": READ.name, "description": READ.description, "parameters": READ.parameters}}
    base = ChatRequest(model="m", system="s" * 4000, messages=(Message("user", "u" * 4000),), tools=(READ,))
    assert estimate_tokens(base) == 2000 + math.ceil(len(json.dumps(entry)) / 4)
    # Reasoning, tool names and arguments count as well: (40 + 4 + 36) / 4.
    with_calls = ChatRequest(
        model="m",
        system="",
        messages=(Message("assistant", reasoning="r" * 40, tool_calls=(ToolCall("c", "n" * 4, "a" * 36),)),),
    )
    assert estimate_tokens(with_calls) == 20
    assert context_size(history(4_000), 8192) == 8192  # 1000 + 4096 reserved fits in 8192
    assert context_size(history(20_000), 8192) == 12288  # 5000 + 4096 = 9096 -> 12288
    # max_tokens replaces the default reserve: 5000 + 1000 fits in 8192.
    assert context_size(ChatRequest("m", "", (Message("user", "x" * 20_000),), max_tokens=1000), 8192) == 8192
    # A larger ollama_ctx is the floor even when the multiple of 4096 would be smaller.
    assert context_size(history(4_000), 10_000) == 10_000


async def test_max_tokens_is_sent_as_num_predict(server, provider):
    server.enqueue(text_reply("ok"))
    await collect(provider, ChatRequest("test-model", "", (Message("user", "hi"),), max_tokens=512))
    assert server.requests[0]["options"]["num_predict"] == 512


async def test_model_details_are_fetched_once_per_model(server, provider):
    server.enqueue(text_reply("one"))
    server.enqueue(text_reply("two"))
    await collect(provider)
    await collect(provider)
    assert server.show_requests == [{"model": "test-model"}]


# ---------------------------------------------------------------------------------------------
# Request body
# ---------------------------------------------------------------------------------------------


async def test_request_body_shape_with_tool_results_and_object_arguments(server):
    server.enqueue(text_reply("done"))
    request = ChatRequest(
        model="test-model",
        system="You are Totem.",
        messages=(
            Message("user", "read a.py"),
            Message(
                "assistant",
                text="Reading.",
                reasoning="need the file",
                tool_calls=(
                    ToolCall("call_7", "read_file", '{"path": "a.py"}'),
                    ToolCall("call_8", "list_todos", ""),
                ),
            ),
            Message("tool", "print(1)", tool_call_id="call_7", name="read_file"),
            Message("tool", "[]", tool_call_id="call_8"),  # name found from the call
        ),
        tools=(READ,),
    )
    prov = OllamaProvider("local", server.base_url, temperature=0.2)
    try:
        await collect(prov, request)
    finally:
        await prov.aclose()
    body = server.requests[0]
    assert body["model"] == "test-model"
    assert body["stream"] is True
    assert body["messages"] == [
        {"role": "system", "content": "You are Totem."},
        {"role": "user", "content": "read a.py"},
        {
            "role": "assistant",
            "content": "Reading.",
            "thinking": "need the file",
            "tool_calls": [
                {"function": {"name": "read_file", "arguments": {"path": "a.py"}}},
                {"function": {"name": "list_todos", "arguments": {}}},
            ],
        },
        {"role": "tool", "content": "print(1)", "tool_name": "read_file"},
        {"role": "tool", "content": "[]", "tool_name": "list_todos"},
    ]
    assert body["tools"] == [
        {
            "type": "function",
            "function": {"name": "read_file", "description": "Read a file", "parameters": READ.parameters},
        }
    ]
    assert body["options"]["temperature"] == 0.2


async def test_request_temperature_wins_over_config_and_none_sends_none_nor_a_seed(server):
    server.enqueue(text_reply("a"))
    server.enqueue(text_reply("b"))
    prov = OllamaProvider("local", server.base_url, temperature=0.2)
    plain = OllamaProvider("plain", server.base_url)
    try:
        await collect(prov, ChatRequest("test-model", "", (Message("user", "hi"),), temperature=0.9, seed=2))
        await collect(plain)
    finally:
        await prov.aclose()
        await plain.aclose()
    assert server.requests[0]["options"]["temperature"] == 0.9 and server.requests[0]["options"]["seed"] == 2
    assert "temperature" not in server.requests[1]["options"] and "seed" not in server.requests[1]["options"]


async def test_broken_argument_text_is_replayed_as_an_empty_object(server, provider):
    server.enqueue(text_reply("ok"))
    request = ChatRequest(
        "test-model",
        "",
        (Message("user", "x"), Message("assistant", tool_calls=(ToolCall("c", "f", '{"path": '),))),
    )
    await collect(provider, request)
    assert server.requests[0]["messages"][1]["tool_calls"][0]["function"]["arguments"] == {}


async def test_api_key_is_sent_as_bearer(server):
    server.enqueue(text_reply("ok"))
    prov = OllamaProvider("cloud", server.base_url + "/api/", "ollama-secret-key-123")
    try:
        await collect(prov)
    finally:
        await prov.aclose()
    assert server.request_headers[0]["Authorization"] == "Bearer ollama-secret-key-123"


# ---------------------------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------------------------


async def test_models_list_windows_and_capabilities(server, provider):
    server.add_model("qwen3:8b", context_length=40960, capabilities=["completion", "tools", "thinking"], architecture="qwen3")
    server.add_model("llava", context_length=4096, capabilities=["completion", "vision"])
    server.add_model("old", context_length=None, capabilities=None)
    models = {m.id: m for m in await provider.models()}
    assert set(models) == {"test-model", "qwen3:8b", "llava", "old"}
    qwen = models["qwen3:8b"]
    assert (qwen.provider, qwen.context_window, qwen.tools, qwen.reasoning, qwen.vision) == (
        "local", 40960, True, True, False,
    )
    assert qwen.extra["capabilities"] == ["completion", "thinking", "tools"]
    assert qwen.extra["details"]["family"] == "qwen3"
    llava = models["llava"]
    assert (llava.context_window, llava.tools, llava.reasoning, llava.vision) == (4096, False, False, True)
    old = models["old"]
    assert (old.context_window, old.tools, old.reasoning, old.vision) == (None, None, None, None)


async def test_models_fill_the_details_cache(server, provider):
    await provider.models()
    shown = len(server.show_requests)
    server.enqueue(text_reply("ok"))
    await collect(provider)
    assert len(server.show_requests) == shown


# ---------------------------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------------------------


async def test_error_line_mid_stream_raises_with_its_message(server, provider):
    server.enqueue(Reply(lines=[line("partial"), {"error": "an error was encountered while running the model"}]))
    seen = []
    with pytest.raises(ProviderError) as info:
        async for chunk in provider.stream(REQUEST):
            seen.append(chunk)
    assert isinstance(info.value, ServerError)
    assert info.value.message == "an error was encountered while running the model"
    assert seen == [TextChunk("partial")]


async def test_unknown_model_is_invalid_request_with_the_server_message(server, provider):
    with pytest.raises(InvalidRequestError) as info:
        await collect(provider, ChatRequest("nope:7b", "", (Message("user", "hi"),)))
    assert info.value.status == 404
    assert info.value.message == 'model "nope:7b" not found, try pulling it first'
    # The failed /api/show was not cached: pulling the model later works without a restart.
    assert "nope:7b" not in provider._details


async def test_http_error_status_goes_through_the_shared_mapping(server, provider):
    server.enqueue(Reply(status=500, body=json.dumps({"error": "llama runner process has terminated"})))
    with pytest.raises(ServerError, match="llama runner process has terminated"):
        await collect(provider)


async def test_connection_dropped_mid_stream_is_stream_cut(server, provider):
    reply = text_reply("Hello there", pieces=3)
    reply.cut_after = 2
    server.enqueue(reply)
    with pytest.raises(StreamCut):
        await collect(provider)


async def test_clean_end_without_done_is_stream_cut(server, provider):
    server.enqueue(Reply(lines=[line("Hel"), line("lo"), line("", tool_calls=[call("f", {})])]))
    seen = []
    with pytest.raises(StreamCut, match="done"):
        async for chunk in provider.stream(REQUEST):
            seen.append(chunk)
    # The tool call was held back: a cut answer has no calls, so the loop may retry it.
    assert not any(isinstance(c, ToolCallChunk) for c in seen)


async def test_a_line_that_is_not_json_is_malformed(server, provider):
    server.enqueue(Reply(lines=[line("ok"), "<html>proxy error</html>", done_line()]))
    with pytest.raises(MalformedStream, match="proxy error"):
        await collect(provider)


async def test_unreachable_server_is_connection_failed():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    prov = OllamaProvider("local", f"http://127.0.0.1:{port}")
    try:
        with pytest.raises(ConnectionFailed):
            await collect(prov)
    finally:
        await prov.aclose()


# ---------------------------------------------------------------------------------------------
# Configuration and registry
# ---------------------------------------------------------------------------------------------


async def test_registry_builds_an_ollama_provider_from_config():
    config = Config.model_validate(
        {"providers": {"local": {"kind": "ollama", "ollama_ctx": 16384, "ollama_ctx_max": 65536, "temperature": 0}}}
    )
    prov = make_provider("local", config.providers["local"], timeout=5.0)
    try:
        assert isinstance(prov, OllamaProvider)
        assert prov.base_url == "http://127.0.0.1:11434"
        assert (prov.ctx, prov.ctx_max, prov.temperature) == (16384, 65536, 0)
    finally:
        await prov.aclose()


def test_config_defaults_and_validation():
    settings = Config.model_validate({"providers": {"local": {"kind": "ollama"}}}).providers["local"]
    assert (settings.ollama_ctx, settings.ollama_ctx_max, settings.temperature) == (8192, None, None)
    with pytest.raises(ConfigError, match="ollama_ctx: expected more than 0"):
        merge_layers([ConfigLayer("t.toml", "file", {"providers": {"l": {"kind": "ollama", "ollama_ctx": 0}}})])
    with pytest.raises(ConfigError, match="temperature: expected at least 0"):
        merge_layers([ConfigLayer("t.toml", "file", {"providers": {"l": {"kind": "ollama", "temperature": -1}}})])
