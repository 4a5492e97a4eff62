"""Wrong field types from a model stream are MalformedStream, never a Python exception (issue 16
item 6): one case per place a fuzz of the four wire parsers crashed, each a real stream with one
field of the wrong type (or JSON nested 5,000 deep), fed to the parser as SSE data payloads
(Ollama: NDJSON lines through the decoder)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from totem_engine.providers import anthropic, gemini, ollama, openai
from totem_engine.providers.errors import MalformedStream
from totem_engine.providers.framing import NDJSONDecoder
from totem_engine.providers.wire.decode import SHOWN
from totem_engine.vocab.chat import TextChunk, ToolCallChunk

DEEP = "[" * 5000 + "]" * 5000


async def payloads(items: list[Any]) -> AsyncIterator[str]:
    for item in items:
        yield item if isinstance(item, str) else json.dumps(item)


async def run_sse(parser: Any, items: list[Any]) -> list[Any]:
    return [chunk async for chunk in parser(payloads(items))]


async def run_ndjson(lines: list[Any]) -> list[Any]:
    decoder = NDJSONDecoder()
    body = b"".join((line if isinstance(line, str) else json.dumps(line)).encode() + b"\n" for line in lines)

    async def values() -> AsyncIterator[Any]:
        for value in decoder.feed(body) + decoder.finish():
            yield value

    return [chunk async for chunk in ollama.parse_stream(values())]


# ---- OpenAI Chat Completions --------------------------------------------------------------------


def openai_chunk(delta: Any, **extra: Any) -> dict[str, Any]:
    return {"id": "c", "model": "m", "choices": [{"index": 0, "delta": delta, "finish_reason": None}], **extra}


OPENAI_END = [{"id": "c", "model": "m", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}, "[DONE]"]

OPENAI_BAD = {
    "delta is a string": openai_chunk("hello"),
    "tool_calls is a number": openai_chunk({"tool_calls": 3}),
    "index is a list": openai_chunk({"tool_calls": [{"index": [0], "id": "a", "function": {"name": "ls", "arguments": ""}}]}),
    "function is a string": openai_chunk({"tool_calls": [{"index": 0, "id": "a", "function": "ls"}]}),
    "choices is an object": {"id": "c", "choices": {"0": {}}},
    "a choice is a number": {"id": "c", "choices": [7]},
    "content is a number": openai_chunk({"content": 42}),
    "usage is a list": {"id": "c", "choices": [], "usage": [1, 2]},
    "nested 5,000 deep": '{"id": "c", "choices": [], "x": ' + DEEP + "}",
}


@pytest.mark.parametrize("bad", list(OPENAI_BAD.values()), ids=list(OPENAI_BAD))
async def test_openai_wrong_field_type_is_malformed(bad):
    with pytest.raises(MalformedStream):
        await run_sse(openai.parse_stream, [openai_chunk({"content": "hi"}), bad, *OPENAI_END])


async def test_openai_deliberate_tolerance_stays():
    # No index (continues the latest call), an integer id (its string form), an empty repeated
    # id, arguments as an object: all read, none refused.
    items = [
        openai_chunk({"tool_calls": [{"index": 0, "id": 7, "function": {"name": "ls", "arguments": {"p": 1}}}]}),
        openai_chunk({"tool_calls": [{"id": "", "function": {"arguments": ""}}]}),
        openai_chunk({"content": None, "tool_calls": None}),
        *OPENAI_END,
    ]
    calls = [c.call for c in await run_sse(openai.parse_stream, items) if isinstance(c, ToolCallChunk)]
    assert [(c.id, c.name, json.loads(c.arguments)) for c in calls] == [("7", "ls", {"p": 1})]


async def test_malformed_quotes_the_vendor_text_cut_short():
    bad = json.dumps(openai_chunk("x" * 5000))
    with pytest.raises(MalformedStream) as caught:
        await run_sse(openai.parse_stream, [bad])
    message = str(caught.value)
    assert "choices.0.delta" in message
    assert repr(bad[:SHOWN]) in message and len(message) < SHOWN + 200


# ---- Anthropic Messages -------------------------------------------------------------------------

ANTHROPIC_START = {"type": "message_start", "message": {"model": "claude", "usage": {"input_tokens": 3}}}
ANTHROPIC_END = [
    {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}},
    {"type": "message_stop"},
]

ANTHROPIC_BAD = {
    "content_block is a string": {"type": "content_block_start", "index": 0, "content_block": "text"},
    "message_delta.delta is a number": {"type": "message_delta", "delta": 5},
    "signature is a number": {"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": 12}},
    "block delta is a list": {"type": "content_block_delta", "index": 0, "delta": ["text_delta"]},
    "index is a string": {"type": "content_block_stop", "index": "0"},
    "message is a string": {"type": "message_start", "message": "hi"},
    "usage is a number": {"type": "message_delta", "delta": {}, "usage": 9},
    "nested 5,000 deep": '{"type": "ping", "x": ' + DEEP + "}",
}


@pytest.mark.parametrize("bad", list(ANTHROPIC_BAD.values()), ids=list(ANTHROPIC_BAD))
async def test_anthropic_wrong_field_type_is_malformed(bad):
    with pytest.raises(MalformedStream):
        await run_sse(anthropic.parse_stream, [ANTHROPIC_START, bad, *ANTHROPIC_END])


async def test_anthropic_unknown_events_and_blocks_still_pass():
    items = [
        ANTHROPIC_START,
        {"type": "content_block_start", "index": 0, "content_block": {"type": "server_tool_use", "id": "s", "name": "web", "input": {}}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "citations_delta", "citation": {"url": 1}}},
        {"type": "content_block_stop", "index": 0},
        {"type": "something_new", "payload": [1, {"x": None}]},
        {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": "ok", "citations": None}},
        *ANTHROPIC_END,
    ]
    assert [c.text for c in await run_sse(anthropic.parse_stream, items) if isinstance(c, TextChunk)] == ["ok"]


# ---- Gemini streamGenerateContent ---------------------------------------------------------------


def gemini_response(parts: Any, finish: str | None = None) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}}
    if finish:
        candidate["finishReason"] = finish
    return {"candidates": [candidate], "modelVersion": "gemini-2.5-flash", "responseId": "r"}


GEMINI_END = [gemini_response([{"text": ""}], finish="STOP")]

GEMINI_BAD = {
    "parts is a number": gemini_response(3),
    "partialArgs is a float": gemini_response([{"functionCall": {"name": "f", "partialArgs": 1.5, "willContinue": True}}]),
    "a part is a string": gemini_response(["hello"]),
    "functionCall is a string": gemini_response([{"functionCall": "f"}]),
    "args is a list": gemini_response([{"functionCall": {"name": "f", "args": [1]}}]),
    "jsonPath is a number": gemini_response([{"functionCall": {"name": "f", "partialArgs": [{"jsonPath": 3, "stringValue": "x"}]}}]),
    "candidates is an object": {"candidates": {"content": {}}},
    "usageMetadata counts are text": {"candidates": [], "usageMetadata": {"promptTokenCount": "3"}},
    "nested 5,000 deep": '{"candidates": [], "x": ' + DEEP + "}",
}


@pytest.mark.parametrize("bad", list(GEMINI_BAD.values()), ids=list(GEMINI_BAD))
async def test_gemini_wrong_field_type_is_malformed(bad):
    with pytest.raises(MalformedStream):
        await run_sse(gemini.parse_stream, [gemini_response([{"text": "hi"}]), bad, *GEMINI_END])


async def test_gemini_one_response_in_a_list_is_still_read():
    items = [json.dumps([gemini_response([{"text": "hi"}])]), *GEMINI_END]
    assert [c.text for c in await run_sse(gemini.parse_stream, items) if isinstance(c, TextChunk)] == ["hi"]


# ---- Ollama /api/chat (NDJSON) --------------------------------------------------------------------

OLLAMA_END = {"model": "qwen", "message": {"role": "assistant", "content": ""}, "done": True, "done_reason": "stop"}

OLLAMA_BAD = {
    "tool_calls is true": {"model": "qwen", "message": {"role": "assistant", "content": "", "tool_calls": True}, "done": False},
    "message is a list": {"model": "qwen", "message": ["hi"], "done": False},
    "function is a string": {"message": {"tool_calls": [{"function": "ls"}]}, "done": False},
    "arguments is a number": {"message": {"tool_calls": [{"function": {"name": "ls", "arguments": 5}}]}, "done": False},
    "done is a string": {"message": {"content": "x"}, "done": "true"},
    "eval_count is a float": {"message": {"content": ""}, "done": True, "eval_count": 1.5},
    "nested 5,000 deep": '{"message": {"content": ""}, "done": false, "x": ' + DEEP + "}",
}


@pytest.mark.parametrize("bad", list(OLLAMA_BAD.values()), ids=list(OLLAMA_BAD))
async def test_ollama_wrong_field_type_is_malformed(bad):
    with pytest.raises(MalformedStream):
        await run_ndjson([{"message": {"content": "hi"}, "done": False}, bad, OLLAMA_END])


def test_ndjson_decoder_refuses_json_nested_5000_deep():
    with pytest.raises(MalformedStream, match="not JSON"):
        NDJSONDecoder().feed(DEEP.encode() + b"\n")


async def test_ollama_integer_call_id_and_text_arguments_are_read():
    line = {"message": {"tool_calls": [{"id": 5, "function": {"name": "ls", "arguments": '{"p": 1}'}}]}, "done": False}
    calls = [c.call for c in await run_ndjson([line, OLLAMA_END]) if isinstance(c, ToolCallChunk)]
    assert [(c.id, c.name, c.arguments) for c in calls] == [("5", "ls", '{"p": 1}')]


# ---- every parser: a lone surrogate escape is text, not a refusal (item 8 stores it replaced) ----


async def test_a_lone_surrogate_escape_is_still_read_as_text():
    bad = '{"id": "c", "choices": [{"index": 0, "delta": {"content": "A\\udcffB"}}]}'
    chunks = await run_sse(openai.parse_stream, [bad, *OPENAI_END])
    assert [c.text for c in chunks if isinstance(c, TextChunk)] == ["A\udcffB"]


@pytest.mark.parametrize(
    "path",
    ["$.a[" + "9" * 5000 + "]", "$.a[99999999]"],
    ids=["an index of 5,000 digits", "an index far past the end"],
)
async def test_gemini_partial_argument_index_out_of_all_proportion_is_malformed(path):
    # int() refuses 4,300 digits (ValueError); filling a list up to 99,999,999 takes gigabytes.
    bad = gemini_response([{"functionCall": {"name": "f", "partialArgs": [{"jsonPath": path, "numberValue": 1}]}}])
    with pytest.raises(MalformedStream):
        await run_sse(gemini.parse_stream, [bad, *GEMINI_END])


async def test_a_lone_surrogate_does_not_lift_the_nesting_bound():
    bad = '{"id": "c", "choices": [{"delta": {"content": "A\\udcffB"}}], "x": ' + "[" * 900 + "]" * 900 + "}"
    with pytest.raises(MalformedStream, match="not JSON"):
        await run_sse(openai.parse_stream, [bad, *OPENAI_END])
