"""AnthropicProvider against the loopback Messages API simulator (tests/support/anthropic_server)."""

from __future__ import annotations

import json

import pytest

from tests.support.anthropic_server import (
    AnthropicServer,
    Reply,
    error_event,
    error_reply,
    message_reply,
    message_start,
    redacted_thinking,
    sign,
    text,
    thinking,
    tool_use,
)
from tests.support.streams import calls, collector, hi, texts
from totem_engine.config import ProviderConfig
from totem_engine.providers.anthropic import AnthropicProvider, model_thinks
from totem_engine.providers.errors import (
    AuthenticationError,
    ContextOverflowError,
    InvalidRequestError,
    MalformedStream,
    OverloadedError,
    RateLimitError,
    ServerError,
    StreamCut,
)
from totem_engine.providers.registry import make_provider
from totem_engine.vocab.chat import (
    ChatRequest,
    FinishChunk,
    ReasoningChunk,
    StateChunk,
    TextChunk,
    ToolCallChunk,
    UsageChunk,
)
from totem_engine.vocab.messages import Message
from totem_engine.vocab.tools import ToolCall, ToolSpec

KEY = "sk-ant-test-secret-key-0123456789"
MODEL = "claude-sonnet-4-5-20250929"
REQUEST = hi(MODEL)
READ = ToolSpec("read_file", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}}})


@pytest.fixture
def server():
    with AnthropicServer(api_key=KEY) as srv:
        yield srv


@pytest.fixture
async def provider(server):
    prov = AnthropicProvider("claude", server.base_url, KEY)
    yield prov
    await prov.aclose()


collect = collector(REQUEST)


def states(chunks):
    return [c for c in chunks if isinstance(c, StateChunk)]


# ---------------------------------------------------------------------------------------------
# Answers
# ---------------------------------------------------------------------------------------------


async def test_text_streams_as_it_arrives_then_usage_and_finish(server, provider):
    server.enqueue(message_reply(text("Hello, world!"), usage=(12, 7), model="claude-x-1"))
    chunks = await collect(provider)
    assert chunks == [
        TextChunk("Hello"),
        TextChunk(", wo"),
        TextChunk("rld!"),
        UsageChunk(12, 7),
        FinishChunk(reason="end_turn", model="claude-x-1"),
    ]


async def test_thinking_streams_as_reasoning_and_is_kept_as_state(server, provider):
    server.enqueue(message_reply(thinking("Two plus two is four."), text("4")))
    chunks = await collect(provider)
    # Reasoning deltas come first, as streamed, then the text.
    kinds = [type(c) for c in chunks if isinstance(c, (TextChunk, ReasoningChunk))]
    assert kinds == [ReasoningChunk, ReasoningChunk, ReasoningChunk, TextChunk]
    assert texts(chunks, ReasoningChunk) == "Two plus two is four."
    assert states(chunks) == [
        StateChunk(
            {"thinking": [{"type": "thinking", "thinking": "Two plus two is four.", "signature": sign("Two plus two is four.")}]}
        )
    ]


async def test_parallel_tool_calls_with_fragmented_and_empty_input(server, provider):
    server.enqueue(
        message_reply(
            text("Let me look."),
            tool_use("toolu_A", "read_file", {"path": "dir/ä.py", "nested": {"n": [1, 2]}}),
            tool_use("toolu_B", "list_all", {}),
            pieces=7,  # cuts the JSON text mid-string and mid-key
        )
    )
    chunks = await collect(provider)
    got = calls(chunks)
    assert [(c.id, c.name) for c in got] == [("toolu_A", "read_file"), ("toolu_B", "list_all")]
    assert json.loads(got[0].arguments) == {"path": "dir/ä.py", "nested": {"n": [1, 2]}}
    assert got[1].arguments == "{}"  # only an empty input_json_delta: no arguments
    assert texts(chunks, TextChunk) == "Let me look."
    assert chunks[-1] == FinishChunk(reason="tool_use", model="claude-test-1")
    # Calls are given after every text delta, once the message is complete.
    first_call = next(i for i, c in enumerate(chunks) if isinstance(c, ToolCallChunk))
    assert all(not isinstance(c, TextChunk) for c in chunks[first_call:])


async def test_tool_input_that_does_not_parse_is_passed_on_raw(server, provider):
    server.enqueue(message_reply(tool_use("toolu_1", "x", '{"a": 1'), stop_reason="max_tokens"))
    chunks = await collect(provider)
    assert calls(chunks) == [ToolCall("toolu_1", "x", '{"a": 1')]
    assert chunks[-1].reason == "max_tokens"


async def test_ping_and_unknown_events_are_ignored(server, provider):
    server.enqueue(
        Reply(
            events=[
                {"type": "ping"},
                message_start(),
                {"type": "ping"},
                {"type": "some_future_event", "x": 1},
                {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
                {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "ok"}},
                {"type": "content_block_delta", "index": 0, "delta": {"type": "citations_delta", "citation": {}}},
                {"type": "content_block_stop", "index": 0},
                {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 3}},
                {"type": "ping"},
                {"type": "message_stop"},
            ]
        )
    )
    chunks = await collect(provider)
    assert chunks == [TextChunk("ok"), UsageChunk(10, 3), FinishChunk("end_turn", "claude-test-1")]


async def test_input_usage_counts_cache_reads_and_writes(server, provider):
    start = message_start(input_tokens=5)
    start["message"]["usage"].update({"cache_creation_input_tokens": 100, "cache_read_input_tokens": 1000})
    reply = message_reply(text("x"))
    reply.events[0] = start
    server.enqueue(reply)
    chunks = await collect(provider)
    assert [c for c in chunks if isinstance(c, UsageChunk)] == [UsageChunk(1105, 5)]


async def test_redacted_thinking_is_kept_as_is(server, provider):
    server.enqueue(message_reply(redacted_thinking("ENCRYPTED=="), thinking("visible"), tool_use("toolu_1", "t", {})))
    chunks = await collect(provider)
    assert texts(chunks, ReasoningChunk) == "visible"  # nothing readable in a redacted block
    assert states(chunks)[0].data == {
        "thinking": [
            {"type": "redacted_thinking", "data": "ENCRYPTED=="},
            {"type": "thinking", "thinking": "visible", "signature": sign("visible")},
        ]
    }


# ---------------------------------------------------------------------------------------------
# The full thinking + tool exchange
# ---------------------------------------------------------------------------------------------


async def test_thinking_and_tool_use_round_trip_keeps_the_signed_block(server, provider):
    thought = "The user wants a.py; I should read it first."
    server.enqueue(message_reply(thinking(thought), text("Reading."), tool_use("toolu_01", "read_file", {"path": "a.py"})))
    server.enqueue(message_reply(thinking("It prints 1."), text("It prints 1.")))

    first_request = ChatRequest(
        model=MODEL, system="Be brief.", messages=(Message("user", "what does a.py do?"),), tools=(READ,), reasoning="low"
    )
    first = await collect(provider, first_request)
    (call,) = calls(first)
    assert call == ToolCall("toolu_01", "read_file", '{"path": "a.py"}')
    (state,) = states(first)

    # What the engine stores and gives back: the answer, its replay state, the tool's result.
    second_request = ChatRequest(
        model=MODEL,
        system="Be brief.",
        messages=(
            Message("user", "what does a.py do?"),
            Message("assistant", "Reading.", reasoning=texts(first, ReasoningChunk), tool_calls=(call,), replay=state.data),
            Message("tool", "print(1)", tool_call_id="toolu_01", name="read_file"),
        ),
        tools=(READ,),
        reasoning="low",
    )
    second = await collect(provider, second_request)
    assert texts(second, TextChunk) == "It prints 1."
    assert second[-1].reason == "end_turn"

    body = server.requests[1]
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert body["messages"] == [
        {"role": "user", "content": "what does a.py do?"},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": thought, "signature": sign(thought)},
                {"type": "text", "text": "Reading."},
                {"type": "tool_use", "id": "toolu_01", "name": "read_file", "input": {"path": "a.py"}},
            ],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": "print(1)"}]},
    ]


async def test_changed_thinking_text_is_refused_by_the_simulator(server, provider):
    # The simulator's signature check is what makes the round trip above meaningful.
    server.enqueue(message_reply(text("unused")))
    tampered = {"thinking": [{"type": "thinking", "thinking": "edited", "signature": sign("original")}]}
    request = ChatRequest(
        model=MODEL,
        system="",
        messages=(
            Message("user", "q"),
            Message("assistant", "", tool_calls=(ToolCall("t1", "read_file", "{}"),), replay=tampered),
            Message("tool", "r", tool_call_id="t1"),
        ),
        reasoning="high",
    )
    with pytest.raises(InvalidRequestError, match="Invalid `signature`"):
        await collect(provider, request)


async def test_all_tool_results_of_a_turn_share_one_user_message(server, provider):
    server.enqueue(message_reply(text("done")))
    request = ChatRequest(
        model=MODEL,
        system="",
        messages=(
            Message("user", "go"),
            Message(
                "assistant",
                "",
                tool_calls=(ToolCall("t1", "read_file", '{"path": "a"}'), ToolCall("t2", "read_file", '{"path": "b"}')),
            ),
            Message("tool", "contents of a", tool_call_id="t1"),
            Message("tool", "Error: b does not exist", tool_call_id="t2", is_error=True),
            Message("user", "and then?"),
        ),
    )
    await collect(provider, request)
    assert server.requests[0]["messages"][1:] == [
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "a"}},
                {"type": "tool_use", "id": "t2", "name": "read_file", "input": {"path": "b"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "contents of a"},
                {"type": "tool_result", "tool_use_id": "t2", "content": "Error: b does not exist", "is_error": True},
                {"type": "text", "text": "and then?"},
            ],
        },
    ]


async def test_is_error_comes_from_the_flag_not_from_the_text(server, provider):
    # A command may print "Error: ..." and succeed; a denied call's text need not say "Error".
    server.enqueue(message_reply(text("ok")))
    request = ChatRequest(
        model=MODEL,
        system="",
        messages=(
            Message("user", "go"),
            Message("assistant", "", tool_calls=(ToolCall("t1", "bash", "{}"), ToolCall("t2", "write", "{}"))),
            Message("tool", "Error: printed by the command, exit 0", tool_call_id="t1"),
            Message("tool", "The user rejected this action.", tool_call_id="t2", is_error=True),
        ),
    )
    await collect(provider, request)
    results = server.requests[0]["messages"][2]["content"]
    assert results == [
        {"type": "tool_result", "tool_use_id": "t1", "content": "Error: printed by the command, exit 0"},
        {"type": "tool_result", "tool_use_id": "t2", "content": "The user rejected this action.", "is_error": True},
    ]


async def test_empty_tool_result_and_bad_arguments_still_make_a_valid_request(server, provider):
    server.enqueue(message_reply(text("ok")))
    request = ChatRequest(
        model=MODEL,
        system="",
        messages=(
            Message("user", "go"),
            Message("assistant", "", tool_calls=(ToolCall("t1", "x", "{not json"), ToolCall("t2", "y", "[1]"))),
            Message("tool", "", tool_call_id="t1"),
            Message("tool", "fine", tool_call_id="t2"),
        ),
    )
    await collect(provider, request)  # the simulator refuses empty text blocks and unanswered tool_use
    assistant, results = server.requests[0]["messages"][1:]
    assert [b["input"] for b in assistant["content"]] == [{}, {}]
    assert results["content"][0] == {"type": "tool_result", "tool_use_id": "t1"}


# ---------------------------------------------------------------------------------------------
# Request shape
# ---------------------------------------------------------------------------------------------


async def test_request_headers_and_body(server):
    server.enqueue(message_reply(text("one")))
    server.enqueue(message_reply(text("two")))
    prov = AnthropicProvider("claude", server.base_url + "/v1/", KEY, headers={"anthropic-beta": "x-2025"})
    request = ChatRequest(
        model="claude-3-5-haiku-latest",
        system="You are Totem.",
        messages=(Message("user", "hi"),),
        tools=(READ,),
        max_tokens=256,
        temperature=0.2,
    )
    try:
        await collect(prov, request)
        await collect(prov, ChatRequest(model="claude-3-5-haiku-latest", system="", messages=(Message("user", "x"),)))
    finally:
        await prov.aclose()
    first, second = server.requests
    assert first == {
        "model": "claude-3-5-haiku-latest",
        "max_tokens": 256,
        "messages": [{"role": "user", "content": "hi"}],
        "stream": True,
        "system": "You are Totem.",
        "tools": [{"name": "read_file", "description": "Read a file.", "input_schema": READ.parameters}],
        "temperature": 0.2,
    }
    # max_tokens is required by the API: the default stands in; no system, tools or temperature.
    assert second == {
        "model": "claude-3-5-haiku-latest",
        "max_tokens": 8192,
        "messages": [{"role": "user", "content": "x"}],
        "stream": True,
    }
    headers = server.request_headers[0]
    assert headers["x-api-key"] == KEY
    assert headers["anthropic-version"] == "2023-06-01"
    assert headers["anthropic-beta"] == "x-2025"
    assert "authorization" not in headers


@pytest.mark.parametrize(("level", "budget"), [("low", 2048), ("medium", 8192), ("high", 16384)])
async def test_reasoning_levels_set_the_thinking_budget(server, provider, level, budget):
    server.enqueue(message_reply(text("x")))
    request = ChatRequest(model=MODEL, system="", messages=(Message("user", "q"),), max_tokens=1000, temperature=0.5, reasoning=level)
    await collect(provider, request)
    body = server.requests[0]
    assert body["thinking"] == {"type": "enabled", "budget_tokens": budget}
    assert body["max_tokens"] == 1000 + budget
    assert "temperature" not in body  # refused by the API together with thinking


@pytest.mark.parametrize("model", ["claude-3-5-haiku-20241022", "claude-3-opus-latest", "claude-2.1"])
async def test_no_thinking_for_models_that_do_not_think(server, provider, model):
    server.enqueue(message_reply(text("x")))
    await collect(provider, ChatRequest(model=model, system="", messages=(Message("user", "q"),), reasoning="high"))
    assert "thinking" not in server.requests[0]
    assert server.requests[0]["max_tokens"] == 8192


async def test_no_reasoning_no_thinking(server, provider):
    server.enqueue(message_reply(text("x")))
    await collect(provider)
    assert "thinking" not in server.requests[0]


async def test_unknown_reasoning_level_is_an_invalid_request(provider):
    with pytest.raises(InvalidRequestError, match="unknown reasoning level"):
        await collect(provider, ChatRequest(model=MODEL, system="", messages=(Message("user", "q"),), reasoning="max"))


async def test_thinking_stays_off_inside_a_tool_turn_started_without_it(server, provider):
    # The assistant's tool call came without thinking (another provider, or thinking was off):
    # the API refuses thinking for the rest of that turn, so it is not asked for.
    server.enqueue(message_reply(text("done")))
    request = ChatRequest(
        model=MODEL,
        system="",
        messages=(
            Message("user", "go"),
            Message("assistant", "", tool_calls=(ToolCall("t1", "read_file", "{}"),)),
            Message("tool", "r", tool_call_id="t1"),
        ),
        reasoning="medium",
    )
    chunks = await collect(provider, request)
    assert texts(chunks, TextChunk) == "done"
    assert "thinking" not in server.requests[0]


async def test_thinking_is_back_once_the_tool_turn_is_over(server, provider):
    server.enqueue(message_reply(text("ok")))
    request = ChatRequest(
        model=MODEL,
        system="",
        messages=(
            Message("user", "go"),
            Message("assistant", "", tool_calls=(ToolCall("t1", "read_file", "{}"),)),
            Message("tool", "r", tool_call_id="t1"),
            Message("assistant", "Read it."),
            Message("user", "next"),
        ),
        reasoning="medium",
    )
    await collect(provider, request)
    assert server.requests[0]["thinking"] == {"type": "enabled", "budget_tokens": 8192}


@pytest.mark.parametrize(
    ("model", "thinks"),
    [
        ("claude-3-7-sonnet-20250219", True),
        ("claude-sonnet-4-20250514", True),
        ("claude-opus-4-1-20250805", True),
        ("claude-haiku-4-5", True),
        ("anthropic.claude-sonnet-4-5-20250929-v1:0", True),
        ("claude-3-5-sonnet-20241022", False),
        ("claude-3-haiku-20240307", False),
        ("claude-instant-1.2", False),
        ("gpt-4o", False),
    ],
)
def test_model_thinks(model, thinks):
    assert model_thinks(model) is thinks


# ---------------------------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------------------------


async def test_models_follow_pages_and_read_capabilities(server, provider):
    server.page_size = 2
    server.models = [
        {"id": "claude-a", "type": "model", "max_input_tokens": 200000, "capabilities": {"thinking": {"supported": True}, "image_input": {"supported": True}}},
        {"id": "claude-b", "type": "model", "capabilities": {"thinking": {"supported": False}}},
        {"id": "claude-c", "type": "model", "display_name": "C"},
        {"id": "claude-d", "type": "model"},
        {"id": "claude-e", "type": "model"},
    ]
    models = await provider.models()
    assert [(m.id, m.provider, m.context_window, m.reasoning) for m in models] == [
        ("claude-a", "claude", 200000, True),
        ("claude-b", "claude", None, False),
        ("claude-c", "claude", None, None),
        ("claude-d", "claude", None, None),
        ("claude-e", "claude", None, None),
    ]
    assert models[0].vision is True
    assert models[2].extra["display_name"] == "C"
    assert [q.get("after_id") for q in server.model_queries] == [None, "claude-b", "claude-d"]
    assert server.request_headers[-1]["x-api-key"] == KEY


async def test_listed_thinking_capability_decides_over_the_model_id(server, provider):
    server.models = [
        {"id": "house-model", "type": "model", "capabilities": {"thinking": {"supported": True}}},
        {"id": "claude-opus-4-9", "type": "model", "capabilities": {"thinking": {"supported": False}}},
    ]
    await provider.models()
    server.enqueue(message_reply(text("a")))
    server.enqueue(message_reply(text("b")))
    await collect(provider, ChatRequest(model="house-model", system="", messages=(Message("user", "q"),), reasoning="low"))
    await collect(provider, ChatRequest(model="claude-opus-4-9", system="", messages=(Message("user", "q"),), reasoning="low"))
    assert "thinking" in server.requests[0]
    assert "thinking" not in server.requests[1]


async def test_models_with_a_wrong_key_is_authentication_error(server):
    prov = AnthropicProvider("claude", server.base_url, "sk-ant-wrong-key")
    try:
        with pytest.raises(AuthenticationError, match="invalid x-api-key"):
            await prov.models()
    finally:
        await prov.aclose()


# ---------------------------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------------------------


async def test_401_is_authentication_error_with_the_vendor_message(server):
    wrong = "sk-ant-wrong-key-9876543210"
    prov = AnthropicProvider("claude", server.base_url, wrong)
    try:
        with pytest.raises(AuthenticationError) as info:
            await collect(prov)
    finally:
        await prov.aclose()
    assert info.value.status == 401
    assert info.value.message == "invalid x-api-key"
    assert not info.value.transient


async def test_a_key_echoed_in_an_error_never_reaches_the_message(server, provider):
    server.enqueue(error_reply(403, "permission_error", f"key {KEY} may not use this model"))
    with pytest.raises(AuthenticationError) as info:
        await collect(provider)
    assert KEY not in str(info.value)
    assert "may not use this model" in info.value.message


async def test_429_with_retry_after_is_rate_limit(server, provider):
    server.enqueue(error_reply(429, "rate_limit_error", "Number of requests has exceeded your rate limit", {"retry-after": "7"}))
    with pytest.raises(RateLimitError) as info:
        await collect(provider)
    assert info.value.retry_after == 7.0
    assert info.value.status == 429
    assert info.value.message == "Number of requests has exceeded your rate limit"
    assert info.value.transient


async def test_529_is_overloaded(server, provider):
    server.enqueue(error_reply(529, "overloaded_error", "Overloaded"))
    with pytest.raises(OverloadedError):
        await collect(provider)


async def test_overloaded_error_event_mid_stream(server, provider):
    reply = message_reply(text("partial answer"))
    reply.events = reply.events[:4] + [error_event("overloaded_error", "Overloaded")]
    server.enqueue(reply)
    seen = []
    with pytest.raises(OverloadedError) as info:
        async for chunk in provider.stream(REQUEST):
            seen.append(chunk)
    assert info.value.message == "Overloaded"
    assert info.value.transient
    assert texts(seen, TextChunk)  # the text before the error did arrive
    assert not any(isinstance(c, FinishChunk) for c in seen)


@pytest.mark.parametrize(
    ("kind", "cls"),
    [("api_error", ServerError), ("rate_limit_error", RateLimitError), ("invalid_request_error", InvalidRequestError)],
)
async def test_error_events_map_to_their_class(server, provider, kind, cls):
    server.enqueue(Reply(events=[message_start(), error_event(kind, "it went wrong")]))
    with pytest.raises(cls) as info:
        await collect(provider)
    assert type(info.value) is cls


async def test_400_prompt_too_long_is_context_overflow(server, provider):
    server.enqueue(error_reply(400, "invalid_request_error", "prompt is too long: 210344 tokens > 200000 maximum"))
    with pytest.raises(ContextOverflowError) as info:
        await collect(provider)
    assert info.value.status == 400
    assert "210344 tokens" in info.value.message


async def test_other_400_is_invalid_request_not_overflow(server, provider):
    server.enqueue(error_reply(400, "invalid_request_error", "tools.0.name: String should match pattern"))
    with pytest.raises(InvalidRequestError) as info:
        await collect(provider)
    assert type(info.value) is InvalidRequestError


async def test_empty_queue_answers_500_no_scripted_reply(server, provider):
    with pytest.raises(ServerError, match="no scripted reply"):
        await collect(provider)


# ---------------------------------------------------------------------------------------------
# Broken streams
# ---------------------------------------------------------------------------------------------


async def test_end_without_message_stop_is_stream_cut(server, provider):
    reply = message_reply(tool_use("toolu_1", "read_file", {"path": "a"}))
    reply.events = reply.events[:-1]  # message_delta with its stop_reason arrives, message_stop does not
    server.enqueue(reply)
    seen = []
    with pytest.raises(StreamCut):
        async for chunk in provider.stream(REQUEST):
            seen.append(chunk)
    # The finished tool_use block was not handed on: the loop may retry the whole step.
    assert not any(isinstance(c, (ToolCallChunk, FinishChunk)) for c in seen)


async def test_connection_dropped_mid_stream_is_stream_cut(server, provider):
    reply = message_reply(text("abcdefghij"))
    reply.cut_after = 4
    server.enqueue(reply)
    with pytest.raises(StreamCut):
        await collect(provider)


async def test_payload_that_is_not_json_is_malformed(server, provider):
    server.enqueue(Reply(events=[message_start(), "{oops"]))
    with pytest.raises(MalformedStream, match="not JSON"):
        await collect(provider)


# ---------------------------------------------------------------------------------------------
# Wiring
# ---------------------------------------------------------------------------------------------


def test_registry_makes_an_anthropic_provider_with_the_default_url():
    prov = make_provider("claude", ProviderConfig(kind="anthropic", api_key=KEY), timeout=5)
    assert isinstance(prov, AnthropicProvider)
    assert prov.base_url == "https://api.anthropic.com"
    assert KEY not in repr(prov)


async def test_registry_provider_uses_the_configured_url_and_key(server):
    server.enqueue(message_reply(text("hi from config")))
    prov = make_provider(
        "claude", ProviderConfig(kind="anthropic", base_url=server.base_url, api_key=KEY), timeout=5
    )
    try:
        assert texts(await collect(prov), TextChunk) == "hi from config"
    finally:
        await prov.aclose()
