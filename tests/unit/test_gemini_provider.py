"""GeminiProvider against the loopback Gemini simulator (tests/support/gemini_server.py)."""

from __future__ import annotations

import json

import pytest

from tests.support.gemini_server import (
    GeminiServer,
    Reply,
    call_reply,
    model_entry,
    response,
    streamed_call_events,
    text_reply,
)
from tests.support.streams import calls, collector, hi, texts
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
from totem_engine.providers.gemini import (
    GeminiProvider,
    build_body,
    clean_schema,
    model_parts,
    parse_json_path,
    thinking_config,
)
from totem_engine.vocab.chat import ChatRequest, FinishChunk, ReasoningChunk, StateChunk, TextChunk, UsageChunk
from totem_engine.vocab.messages import Message
from totem_engine.vocab.tools import ToolCall, ToolSpec

KEY = "AIza-test-secret-key-0123456789"
MODEL = "gemini-2.5-flash"
REQUEST = hi(MODEL)


@pytest.fixture
def server():
    with GeminiServer(api_key=KEY) as srv:
        yield srv


@pytest.fixture
async def provider(server):
    prov = GeminiProvider("gem", server.base_url, KEY)
    yield prov
    await prov.aclose()


collect = collector(REQUEST)


def state_of(chunks):
    found = [c for c in chunks if isinstance(c, StateChunk)]
    assert len(found) <= 1
    return found[0].data if found else None


# ---------------------------------------------------------------------------------------------
# Streaming
# ---------------------------------------------------------------------------------------------


async def test_thoughts_text_usage_and_finish(server, provider):
    server.enqueue(text_reply("Hello, world!", thoughts="Let me think.", usage=(12, 7, 40)))
    chunks = await collect(provider)
    assert [c for c in chunks if isinstance(c, TextChunk)] == [
        TextChunk("Hello"),
        TextChunk(", wo"),
        TextChunk("rld!"),
    ]
    assert texts(chunks, ReasoningChunk) == "Let me think."
    # Reasoning arrives before text, as streamed.
    first_text = next(i for i, c in enumerate(chunks) if isinstance(c, TextChunk))
    assert all(not isinstance(c, ReasoningChunk) for c in chunks[first_text:])
    # output = candidatesTokenCount + thoughtsTokenCount; no signature -> no state.
    assert chunks[-2:] == [UsageChunk(12, 47), FinishChunk(reason="STOP", model="gemini-test-001")]
    assert state_of(chunks) is None


async def test_request_url_headers_and_body(server, provider):
    server.enqueue(text_reply("ok"))
    tool = ToolSpec(
        "read_file",
        "Read a file",
        {
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "path": {"type": "string", "description": "where"},
                "opts": {
                    "type": ["object", "null"],
                    "additionalProperties": False,
                    "properties": {"additionalProperties": {"type": "integer"}},
                },
                "mode": {"const": "r"},
            },
            "required": ["path"],
        },
    )
    request = ChatRequest(
        model=MODEL,
        system="You are Totem.",
        messages=(Message("user", "hi"), Message("assistant", "hello"), Message("user", "again")),
        tools=(tool, ToolSpec("noop", "No inputs", {"type": "object", "properties": {}})),
        max_tokens=256,
        temperature=0.2,
    )
    await collect(provider, request)

    assert server.paths == [f"/v1beta/models/{MODEL}:streamGenerateContent"]
    assert server.queries[0]["alt"] == ["sse"]
    assert server.request_headers[0]["x-goog-api-key"] == KEY
    assert "key" not in server.queries[0]  # never in the URL
    body = server.requests[0]
    assert body["systemInstruction"] == {"parts": [{"text": "You are Totem."}]}
    assert body["contents"] == [
        {"role": "user", "parts": [{"text": "hi"}]},
        {"role": "model", "parts": [{"text": "hello"}]},
        {"role": "user", "parts": [{"text": "again"}]},
    ]
    declarations = body["tools"][0]["functionDeclarations"]
    assert declarations[0] == {
        "name": "read_file",
        "description": "Read a file",
        "parameters": {
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "where"},
                # A property *named* additionalProperties survives; the keyword does not.
                "opts": {
                    "type": "object",
                    "nullable": True,
                    "properties": {"additionalProperties": {"type": "integer"}},
                },
                "mode": {"enum": ["r"]},
            },
            "required": ["path"],
        },
    }
    assert declarations[1] == {"name": "noop", "description": "No inputs"}
    assert body["generationConfig"]["maxOutputTokens"] == 256
    assert body["generationConfig"]["temperature"] == 0.2
    assert body["generationConfig"]["thinkingConfig"] == {"includeThoughts": True}


async def test_two_parallel_calls_signature_on_first_only_full_exchange(server, provider):
    server.enqueue(
        call_reply(
            [("read_file", {"path": "a.py"}, "SIG-FIRST"), ("read_file", {"path": "b.py"}, None)],
            text="Reading both.",
        )
    )
    server.enqueue(text_reply("Both read."))
    tools = (ToolSpec("read_file", "Read", {"type": "object", "properties": {"path": {"type": "string"}}}),)
    first = ChatRequest(model="gemini-3-pro-preview", system="s", messages=(Message("user", "read a and b"),), tools=tools)
    chunks = await collect(provider, first)

    got = calls(chunks)
    assert [(c.name, json.loads(c.arguments)) for c in got] == [
        ("read_file", {"path": "a.py"}),
        ("read_file", {"path": "b.py"}),
    ]
    assert got[0].id != got[1].id and all(got_id.id for got_id in got)
    state = state_of(chunks)
    assert state is not None
    assert chunks[-1] == FinishChunk("STOP", "gemini-test-001")

    # The loop stores the answer with its replay, runs the tools and sends the results back;
    # results arrive out of order on purpose.
    assistant = Message(
        "assistant", text=texts(chunks, TextChunk), tool_calls=tuple(got), replay=state
    )
    second = ChatRequest(
        model="gemini-3-pro-preview",
        system="s",
        messages=(
            Message("user", "read a and b"),
            assistant,
            Message("tool", "B CONTENT", tool_call_id=got[1].id, name="read_file"),
            Message("tool", "A CONTENT", tool_call_id=got[0].id, name="read_file"),
        ),
        tools=tools,
    )
    assert texts(await collect(provider, second), TextChunk) == "Both read."

    contents = server.requests[1]["contents"]
    assert [c["role"] for c in contents] == ["user", "model", "user"]
    model_content = contents[1]["parts"]
    assert model_content == [
        {"text": "Reading both."},
        {"functionCall": {"name": "read_file", "args": {"path": "a.py"}}, "thoughtSignature": "SIG-FIRST"},
        {"functionCall": {"name": "read_file", "args": {"path": "b.py"}}},
    ]
    assert contents[2]["parts"] == [
        {"functionResponse": {"name": "read_file", "response": {"output": "A CONTENT"}}},
        {"functionResponse": {"name": "read_file", "response": {"output": "B CONTENT"}}},
    ]


async def test_text_signature_goes_back_on_the_text_part(server, provider):
    server.enqueue(text_reply("Three r's.", signature="SIG-TEXT"))
    chunks = await collect(provider)
    state = state_of(chunks)
    assert state == {"gemini": {"parts": [{"text": 10, "thoughtSignature": "SIG-TEXT"}]}}
    parts, _ = model_parts(Message("assistant", text="Three r's.", replay=state))
    assert parts == [{"text": "Three r's.", "thoughtSignature": "SIG-TEXT"}]


def test_layout_keeps_each_signature_on_its_own_part_in_order():
    state = {
        "gemini": {
            "parts": [
                {"thought": 5, "thoughtSignature": "S0"},
                {"text": 4},
                {"call": "c1", "thoughtSignature": "S1"},
                {"text": 3, "thoughtSignature": "S2"},
                {"call": "c2"},
            ]
        }
    }
    message = Message(
        "assistant",
        text="abcdxyz",
        reasoning="think",
        tool_calls=(ToolCall("c1", "f", '{"a": 1}'), ToolCall("c2", "g", "")),
        replay=state,
    )
    parts, vendor = model_parts(message)
    assert parts == [
        {"text": "think", "thought": True, "thoughtSignature": "S0"},
        {"text": "abcd"},
        {"functionCall": {"name": "f", "args": {"a": 1}}, "thoughtSignature": "S1"},
        {"text": "xyz", "thoughtSignature": "S2"},
        {"functionCall": {"name": "g", "args": {}}},
    ]
    assert vendor == set()


def test_edited_text_falls_back_to_one_text_part_keeping_call_signatures():
    state = {"gemini": {"parts": [{"text": 4, "thoughtSignature": "ST"}, {"call": "c1", "thoughtSignature": "S1"}]}}
    message = Message("assistant", text="abcdEXTRA", tool_calls=(ToolCall("c1", "f", "{}"),), replay=state)
    parts, _ = model_parts(message)
    assert parts == [
        {"text": "abcdEXTRA", "thoughtSignature": "ST"},
        {"functionCall": {"name": "f", "args": {}}, "thoughtSignature": "S1"},
    ]


def test_foreign_or_missing_replay_sends_no_signature():
    message = Message(
        "assistant",
        tool_calls=(ToolCall("toolu_1", "f", "{}"),),
        replay={"anthropic": {"blocks": [{"signature": "x"}]}},
    )
    parts, _ = model_parts(message)
    assert parts == [{"functionCall": {"name": "f", "args": {}}}]


async def test_streamed_partial_args_assemble_into_one_call(server, provider):
    partials = [
        {"jsonPath": "$.path", "stringValue": "src/", "willContinue": True},
        {"jsonPath": "$.path", "stringValue": "main.py", "willContinue": True},
        {"jsonPath": "$.path", "stringValue": ""},
        {"jsonPath": "$.range.start", "numberValue": 10},
        {"jsonPath": "$.range.ratio", "numberValue": 0.5},
        {"jsonPath": "$.flags[1]", "boolValue": True},
        {"jsonPath": "$.flags[0]", "boolValue": False},
        {"jsonPath": "$['odd key']", "nullValue": "NULL_VALUE"},
        # A new value for a closed string path replaces it instead of appending.
        {"jsonPath": "$.mode", "stringValue": "x"},
        {"jsonPath": "$.mode", "stringValue": "r"},
    ]
    events = streamed_call_events("read_file", partials, signature="SIG-STREAM")
    events += streamed_call_events("list_dir", [{"jsonPath": "$.dir", "stringValue": "."}])
    events.append(response([{"text": ""}], finish="STOP", usage=(5, 3, 0)))
    server.enqueue(Reply(events=events))
    chunks = await collect(provider)
    got = calls(chunks)
    assert len(got) == 2
    assert json.loads(got[0].arguments) == {
        "path": "src/main.py",
        "range": {"start": 10, "ratio": 0.5},
        "flags": [False, True],
        "odd key": None,
        "mode": "r",
    }
    assert '"start": 10,' in got[0].arguments  # integral numbers stay integers
    assert (got[1].name, json.loads(got[1].arguments)) == ("list_dir", {"dir": "."})
    parts = state_of(chunks)["gemini"]["parts"]
    assert parts == [{"call": got[0].id, "thoughtSignature": "SIG-STREAM"}, {"call": got[1].id}]


async def test_strings_streamed_in_many_pieces_join_in_order(server, provider):
    # Two strings open at once, many pieces each, one still open when the call ends: each is
    # joined in order, keys in the order they came (pieces are joined once, not at every piece).
    partials = [{"jsonPath": "$.path", "stringValue": "a.txt"}]
    for n in range(300):
        partials.append({"jsonPath": "$.content", "stringValue": f"{n},", "willContinue": True})
        partials.append({"jsonPath": "$.note", "stringValue": "n", "willContinue": True})
    partials.append({"jsonPath": "$.note", "stringValue": "!"})
    events = streamed_call_events("write", partials)
    events.append(response([{"text": ""}], finish="STOP"))
    server.enqueue(Reply(events=events))
    (got,) = calls(await collect(provider))
    arguments = json.loads(got.arguments)
    assert list(arguments) == ["path", "content", "note"]
    assert arguments == {"path": "a.txt", "content": "".join(f"{n}," for n in range(300)), "note": "n" * 300 + "!"}


async def test_named_part_while_a_call_is_open_closes_it(server, provider):
    server.enqueue(
        Reply(
            events=[
                response([{"functionCall": {"name": "a", "willContinue": True}}]),
                response([{"functionCall": {"partialArgs": [{"jsonPath": "$.x", "numberValue": 1}], "willContinue": True}}]),
                response([{"functionCall": {"name": "b", "args": {"y": 2}}}]),
                response([{"text": ""}], finish="STOP"),
            ]
        )
    )
    got = calls(await collect(provider))
    assert [(c.name, json.loads(c.arguments)) for c in got] == [("a", {"x": 1}), ("b", {"y": 2})]


async def test_vendor_call_ids_are_kept_and_sent_back(server, provider):
    server.enqueue(call_reply([("f", {}, "S")], ids=["vendor-7"]))
    chunks = await collect(provider)
    (call,) = calls(chunks)
    assert call.id == "vendor-7"
    body = build_body(
        ChatRequest(
            model=MODEL,
            system="",
            messages=(
                Message("user", "go"),
                Message("assistant", tool_calls=(call,), replay=state_of(chunks)),
                Message("tool", "done", tool_call_id="vendor-7", name="f"),
            ),
        )
    )
    assert body["contents"][1]["parts"] == [
        {"functionCall": {"name": "f", "args": {}, "id": "vendor-7"}, "thoughtSignature": "S"}
    ]
    assert body["contents"][2]["parts"] == [
        {"functionResponse": {"name": "f", "response": {"output": "done"}, "id": "vendor-7"}}
    ]


async def test_generated_ids_differ_between_answers(server, provider):
    server.enqueue(call_reply([("f", {}, None)]))
    server.enqueue(Reply(events=[dict(e, responseId="resp-2") for e in call_reply([("f", {}, None)]).events]))
    first = calls(await collect(provider))
    second = calls(await collect(provider))
    assert first[0].id != second[0].id


async def test_user_text_after_tool_results_joins_the_same_user_turn():
    body = build_body(
        ChatRequest(
            model=MODEL,
            system="",
            messages=(
                Message("user", "go"),
                Message("assistant", tool_calls=(ToolCall("c1", "f", "{}"),)),
                Message("tool", "r1", tool_call_id="c1", name="f"),
                Message("user", "and then?"),
            ),
        )
    )
    assert [c["role"] for c in body["contents"]] == ["user", "model", "user"]
    assert body["contents"][2]["parts"] == [
        {"functionResponse": {"name": "f", "response": {"output": "r1"}}},
        {"text": "and then?"},
    ]


async def test_prompt_blocked_finishes_with_block_reason(server, provider):
    server.enqueue(Reply(events=[{"promptFeedback": {"blockReason": "SAFETY"}, "modelVersion": "m"}]))
    chunks = await collect(provider)
    assert chunks == [FinishChunk("SAFETY", "m")]


# ---------------------------------------------------------------------------------------------
# Reasoning levels
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "reasoning", "expected"),
    [
        ("gemini-2.5-flash", "low", {"thinkingBudget": 1024, "includeThoughts": True}),
        ("gemini-2.5-flash", "medium", {"thinkingBudget": 8192, "includeThoughts": True}),
        ("gemini-2.5-pro", "high", {"thinkingBudget": 24576, "includeThoughts": True}),
        ("gemini-2.5-flash", "none", {"thinkingBudget": 0, "includeThoughts": False}),
        ("gemini-2.5-pro", "none", {"thinkingBudget": 128, "includeThoughts": False}),
        ("gemini-2.5-flash-lite", "minimal", {"thinkingBudget": 512, "includeThoughts": True}),
        ("gemini-2.5-flash", "minimal", {"thinkingBudget": 128, "includeThoughts": True}),
        ("models/gemini-3-pro-preview", "low", {"thinkingLevel": "low", "includeThoughts": True}),
        ("gemini-3-pro-preview", "high", {"thinkingLevel": "high", "includeThoughts": True}),
        ("gemini-3-pro-preview", "none", {"thinkingLevel": "low", "includeThoughts": False}),
        ("gemini-3-flash-preview", "none", {"thinkingLevel": "minimal", "includeThoughts": False}),
        ("gemini-3-flash-preview", "medium", {"thinkingLevel": "medium", "includeThoughts": True}),
        ("gemini-3-pro-preview", None, {"includeThoughts": True}),
        ("gemini-flash-latest", "low", {"thinkingBudget": 1024, "includeThoughts": True}),
        ("gemini-flash-latest", None, None),
        ("gemini-2.0-flash", "high", None),
    ],
)
def test_thinking_config(model, reasoning, expected):
    assert thinking_config(model, reasoning) == expected


async def test_reasoning_level_reaches_the_wire(server, provider):
    server.enqueue(text_reply("ok"))
    await collect(provider, ChatRequest(model="gemini-2.5-pro", system="", messages=(Message("user", "x"),), reasoning="medium"))
    assert server.requests[0]["generationConfig"] == {
        "thinkingConfig": {"thinkingBudget": 8192, "includeThoughts": True}
    }


def test_unknown_reasoning_level_is_invalid_request():
    with pytest.raises(InvalidRequestError, match="extreme"):
        thinking_config("gemini-2.5-pro", "extreme")


# ---------------------------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------------------------


async def test_models_paginates_and_maps_fields(server):
    server.models = [
        model_entry("gemini-2.5-pro", input_limit=1_048_576, thinking=True),
        model_entry("gemini-embedding-001", methods=("embedContent",)),
        model_entry("gemini-2.0-flash", input_limit=1_000_000),
        model_entry("gemini-3-pro-preview", input_limit=2_000_000, thinking=True),
    ]
    server.page_cap = 2
    provider = GeminiProvider("gem", server.base_url, KEY, models_page_size=500)
    try:
        models = await provider.models()
    finally:
        await provider.aclose()
    assert [(m.id, m.context_window, m.reasoning) for m in models] == [
        ("gemini-2.5-pro", 1_048_576, True),
        ("gemini-2.0-flash", 1_000_000, None),
        ("gemini-3-pro-preview", 2_000_000, True),
    ]
    assert all(m.provider == "gem" for m in models)
    assert [q.get("pageToken") for q in server.model_queries] == [None, ["2"]]
    assert all(q["pageSize"] == ["500"] for q in server.model_queries)
    assert all(h["x-goog-api-key"] == KEY for h in server.model_headers)


# ---------------------------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------------------------


def _error_body(code, message, status, details=None):
    error = {"code": code, "message": message, "status": status}
    if details:
        error["details"] = details
    return json.dumps({"error": error})


@pytest.mark.parametrize("status", [401, 403])
async def test_401_403_authentication_with_vendor_message_without_key(server, provider, status):
    server.enqueue(Reply(status=status, body=_error_body(status, f"Permission denied for key {KEY}", "PERMISSION_DENIED")))
    with pytest.raises(AuthenticationError) as info:
        await collect(provider)
    assert info.value.status == status
    assert "Permission denied for key" in info.value.message
    assert KEY not in str(info.value)


async def test_wrong_key_400_is_authentication(server):
    provider = GeminiProvider("gem", server.base_url, "AIza-wrong-key-99999")
    try:
        with pytest.raises(AuthenticationError, match="API key not valid"):
            await collect(provider)
    finally:
        await provider.aclose()


async def test_429_retry_after_header(server, provider):
    server.enqueue(Reply(status=429, headers={"Retry-After": "7"}, body=_error_body(429, "Quota exceeded", "RESOURCE_EXHAUSTED")))
    with pytest.raises(RateLimitError) as info:
        await collect(provider)
    assert info.value.retry_after == 7.0
    assert info.value.message == "Quota exceeded"


async def test_429_retry_info_in_body(server, provider):
    details = [
        {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": []},
        {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "37s"},
    ]
    server.enqueue(Reply(status=429, body=_error_body(429, "You exceeded your current quota", "RESOURCE_EXHAUSTED", details)))
    with pytest.raises(RateLimitError) as info:
        await collect(provider)
    assert info.value.retry_after == 37.0


async def test_400_overflow_nested_as_escaped_json_is_context_overflow(server, provider):
    inner = json.dumps(
        {
            "error": {
                "code": 400,
                "message": "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
                "status": "INVALID_ARGUMENT",
            }
        },
        indent=2,
    )
    server.enqueue(Reply(status=400, body=_error_body(400, inner, "INVALID_ARGUMENT")))
    with pytest.raises(ContextOverflowError) as info:
        await collect(provider)
    assert info.value.status == 400
    assert info.value.message.startswith("The input token count (1200000) exceeds")


async def test_plain_400_stays_invalid_request(server, provider):
    server.enqueue(Reply(status=400, body=_error_body(400, "Invalid JSON payload received.", "INVALID_ARGUMENT")))
    with pytest.raises(InvalidRequestError) as info:
        await collect(provider)
    assert type(info.value) is InvalidRequestError


@pytest.mark.parametrize(
    ("error", "cls"),
    [
        ({"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}, OverloadedError),
        ({"code": 500, "message": "Internal error", "status": "INTERNAL"}, ServerError),
        ({"code": 429, "message": "slow down", "status": "RESOURCE_EXHAUSTED"}, RateLimitError),
        (
            {"code": 400, "message": "The input token count (5) exceeds the maximum number of tokens allowed (4).", "status": "INVALID_ARGUMENT"},
            ContextOverflowError,
        ),
    ],
)
async def test_error_object_inside_stream(server, provider, error, cls):
    server.enqueue(Reply(events=[response([{"text": "partial"}]), {"error": error}]))
    with pytest.raises(cls, match=error["message"][:10]):
        await collect(provider)


async def test_stream_without_finish_reason_is_stream_cut(server, provider):
    server.enqueue(Reply(events=[response([{"text": "half an ans"}])]))
    with pytest.raises(StreamCut):
        await collect(provider)


async def test_connection_dropped_mid_stream_is_stream_cut(server, provider):
    reply = text_reply("a long answer here", pieces=3)
    reply.cut_after = 2
    server.enqueue(reply)
    with pytest.raises(StreamCut):
        await collect(provider)


async def test_malformed_payload(server, provider):
    server.enqueue(Reply(events=["{not json"]))
    with pytest.raises(MalformedStream):
        await collect(provider)


def test_repr_hides_the_key():
    provider = GeminiProvider("gem", "http://127.0.0.1:1/v1beta", KEY)
    assert KEY not in repr(provider)


# ---------------------------------------------------------------------------------------------
# Pieces
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "steps"),
    [
        ("$", []),
        ("$.a", ["a"]),
        ("$.a.b[2].c", ["a", "b", 2, "c"]),
        ("$['odd key'][0]", ["odd key", 0]),
        ('$["q\\"uote"]', ['q"uote']),
    ],
)
def test_parse_json_path(path, steps):
    assert parse_json_path(path) == steps


@pytest.mark.parametrize("path", ["a.b", "$..a", "$[x]"])
def test_bad_json_path_is_malformed(path):
    with pytest.raises(MalformedStream):
        parse_json_path(path)


def test_clean_schema_drops_rejected_keys_recursively():
    schema = {
        "$schema": "x",
        "$defs": {},
        "type": "object",
        "properties": {
            "items": {"type": "array", "items": {"type": "object", "additionalProperties": True, "properties": {"n": {"type": "integer", "exclusiveMinimum": 0}}}},
            "choice": {"anyOf": [{"type": "string", "enum": ["a", "b"]}, {"type": "integer", "enum": [1, 2]}]},
        },
        "required": ["items", "ghost"],
    }
    assert clean_schema(schema) == {
        "type": "object",
        "properties": {
            "items": {"type": "array", "items": {"type": "object", "properties": {"n": {"type": "integer"}}}},
            "choice": {"anyOf": [{"type": "string", "enum": ["a", "b"]}, {"type": "integer"}]},
        },
        "required": ["items"],
    }


def test_registry_makes_a_gemini_provider_with_the_default_base_url():
    from totem_engine.config import ProviderConfig
    from totem_engine.providers.registry import make_provider

    provider = make_provider("g", ProviderConfig(kind="gemini", api_key="AIza-config-key-1234"), timeout=30)
    assert isinstance(provider, GeminiProvider)
    assert provider.base_url == "https://generativelanguage.googleapis.com/v1beta"
