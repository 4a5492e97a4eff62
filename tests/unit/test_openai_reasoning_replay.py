"""The OpenAI-compatible wire's reasoning carried back (providers/openai.py ``Replay``): what the
parser keeps from a stream, and what the request builder sends with an assistant message."""

from __future__ import annotations

import json

from tests.support.captures import capture_expected, capture_folder, capture_lines
from totem_engine.providers.openai import asks_reasoning_content, build_body, parse_stream
from totem_engine.vocab.chat import ChatRequest, StateChunk
from totem_engine.vocab.messages import Message
from totem_engine.vocab.tools import ToolCall

CALL = ToolCall(id="call_1", name="read", arguments='{"path": "a.txt"}')
DETAILS = [{"type": "reasoning.encrypted", "data": "gAAAAB", "format": "openai-responses-v1", "index": 0}]


async def _chunks(lines: list[str], asked: str | None) -> list:
    async def payloads():
        for line in [*lines, "[DONE]"]:
            yield line

    return [c async for c in parse_stream(payloads(), asked=asked)]


def _payload(delta: dict, finish: str | None = None) -> str:
    return json.dumps({"model": "m", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})


def _sent(messages: tuple[Message, ...], model: str) -> list[dict]:
    body = build_body(ChatRequest(model=model, system="", messages=messages))
    return [m for m in body["messages"] if m["role"] == "assistant"]


def test_only_deepseek_models_ask_for_their_reasoning_content():
    assert asks_reasoning_content("deepseek-reasoner") and asks_reasoning_content("deepseek/deepseek-v4-pro")
    assert not asks_reasoning_content("grok-3-mini") and not asks_reasoning_content("qwen3-32b")


async def test_the_recorded_deepseek_tool_call_keeps_its_reasoning_content_for_the_model_asked_for():
    folder = capture_folder("openai")  # outside the repository: skipped where it is absent, as every capture test
    lines = capture_lines(folder, "deepseek-tool-call")
    expected = capture_expected(folder, "deepseek-tool-call")["reasoning"]
    [state] = [c for c in await _chunks(lines, "deepseek-reasoner") if isinstance(c, StateChunk)]
    assert state.data == {"model": "deepseek-reasoner", "reasoning_content": expected}
    # The same stream for a model that does not ask for it, or with no model named: nothing kept.
    assert not [c for c in await _chunks(lines, "grok-3-mini") if isinstance(c, StateChunk)]
    assert not [c for c in await _chunks(lines, None) if isinstance(c, StateChunk)]


async def test_deepseek_reasoning_without_a_tool_call_is_not_kept():
    lines = [_payload({"reasoning_content": "Easy."}), _payload({"content": "4"}, "stop")]
    assert not [c for c in await _chunks(lines, "deepseek-reasoner") if isinstance(c, StateChunk)]


async def test_reasoning_details_pieces_are_joined_per_index_and_kept_as_sent():
    text = {"type": "reasoning.text", "format": "anthropic-claude-v1", "index": 0}
    lines = [
        _payload({"reasoning": "Read", "reasoning_details": [{**text, "text": "Read"}]}),
        _payload({"reasoning": " it.", "reasoning_details": [{**text, "text": " it.", "signature": None}]}),
        _payload({"reasoning_details": [{**text, "text": "", "signature": "EqQB"}]}),
        _payload({"reasoning_details": [{"type": "reasoning.encrypted", "data": "opaque", "id": "rs_1"}]}),
        _payload({"content": "Done."}, "stop"),
    ]
    [state] = [c for c in await _chunks(lines, "anthropic/claude-sonnet-4.5") if isinstance(c, StateChunk)]
    assert state.data == {
        "model": "anthropic/claude-sonnet-4.5",
        "reasoning_details": [
            {**text, "text": "Read it.", "signature": "EqQB"},
            {"type": "reasoning.encrypted", "data": "opaque", "id": "rs_1"},
        ],
    }


def test_the_replay_goes_back_on_its_assistant_message_to_the_model_that_wrote_it():
    replay = {"model": "deepseek-v4-pro", "reasoning_content": "Read a.txt first.", "reasoning_details": DETAILS}
    step = Message(role="assistant", tool_calls=(CALL,), reasoning="Read a.txt first.", replay=replay)
    messages = (Message(role="user", text="what is in a.txt?"), step, Message(role="tool", text="one", tool_call_id="call_1"))

    [sent] = _sent(messages, "deepseek-v4-pro")
    assert sent["reasoning_content"] == "Read a.txt first." and sent["reasoning_details"] == DETAILS
    assert sent["tool_calls"][0]["id"] == "call_1"
    # Another model of the same provider gets neither.
    [sent] = _sent(messages, "deepseek-v4-flash")
    assert set(sent) == {"role", "content", "tool_calls"}


def test_reasoning_alone_is_never_sent():
    # Message.reasoning is any provider's (an Anthropic step's thinking text, say): without this
    # provider's replay it stays out of the request.
    step = Message(role="assistant", text="Done.", reasoning="Thought about it.")
    [sent] = _sent((Message(role="user", text="hi"), step), "deepseek-v4-pro")
    assert sent == {"role": "assistant", "content": "Done."}
