"""What the fuzz properties share: JSON strategies, mutations of real streams, a hang guard and
the checks every parser's output must pass.

Seed streams are the reply builders of tests/support (the shapes the provider tests use) and,
when the folder is there, the recorded vendor streams of ../shared/captures.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import Any

from hypothesis import settings
from hypothesis import strategies as st

from tests.support import anthropic_server as anth
from tests.support import gemini_server as gem
from tests.support import model_server as oai
from tests.support import ollama_server as oll
from tests.support.captures import ROOT, capture_cases, capture_lines
from totem_engine.vocab.chat import (
    FinishChunk,
    ReasoningChunk,
    StateChunk,
    StreamChunk,
    TextChunk,
    ToolCallChunk,
    UsageChunk,
)

HANG = 10.0
"""Seconds one example may take before it counts as a hang."""


CHEAP = 10
"""How many times the ``fuzz`` profile's count a cheap property gets (a few ms an input): the
inputs go where they cost least, so ``make fuzz`` passes 100,000 in minutes."""


def examples(weight: float) -> int:
    """A property's ``max_examples``: ``weight`` times the ``fuzz`` profile's count under that
    profile (``make fuzz``), the profile's own count otherwise (``make test`` stays quick)."""
    base = settings.default.max_examples
    return max(1, int(base * weight)) if os.environ.get("HYPOTHESIS_PROFILE") == "fuzz" else base


class Hang(Exception):
    """An example ran past ``HANG`` seconds."""


@contextmanager
def no_hang(seconds: float = HANG) -> Iterator[None]:
    """Raise Hang in the main thread after ``seconds``: a parser stuck in a loop fails its
    example instead of stopping the suite (hypothesis' deadline only measures afterwards)."""

    def expire(signum: int, frame: Any) -> None:
        raise Hang(f"example still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# ---- JSON values --------------------------------------------------------------------------------

# Field names of the four wires, so arbitrary objects reach the parsers' branches.
WIRE_KEYS = (
    "id", "model", "choices", "index", "delta", "content", "reasoning_content", "reasoning",
    "tool_calls", "function", "name", "arguments", "finish_reason", "usage", "prompt_tokens",
    "completion_tokens", "error", "message", "type", "content_block", "text", "thinking",
    "signature", "data", "input", "partial_json", "stop_reason", "input_tokens", "output_tokens",
    "candidates", "parts", "functionCall", "args", "partialArgs", "jsonPath", "stringValue",
    "numberValue", "boolValue", "nullValue", "willContinue", "thought", "thoughtSignature",
    "finishReason", "usageMetadata", "promptTokenCount", "modelVersion", "responseId",
    "promptFeedback", "blockReason", "done", "done_reason", "eval_count", "prompt_eval_count",
)
WIRE_WORDS = (
    "text", "thinking", "tool_use", "redacted_thinking", "text_delta", "thinking_delta",
    "signature_delta", "input_json_delta", "message_start", "content_block_start",
    "content_block_delta", "content_block_stop", "message_delta", "message_stop", "ping", "error",
    "stop", "tool_calls", "STOP", "$", "$.a", "$.a[0]", "$['b c']", "$.a[99]", "$.a[99999999]",
    "$.a[" + "9" * 4400 + "]", "[DONE]", "",
)

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False),
    st.text(max_size=20),
    st.sampled_from(WIRE_WORDS),
)
keys = st.one_of(st.sampled_from(WIRE_KEYS), st.text(max_size=8))
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(keys, inner, max_size=5)),
    max_leaves=25,
)
json_objects = st.dictionaries(keys, json_values, max_size=6)


def deep(depth: int) -> str:
    """JSON text nested ``depth`` levels deep (lists or objects)."""
    return "[" * depth + "]" * depth if depth % 2 else '{"a":' * depth + "1" + "}" * depth


payload_texts = st.one_of(
    json_objects.map(json.dumps),
    json_values.map(json.dumps),
    st.text(max_size=60),
    st.integers(min_value=150, max_value=6000).map(deep),
)


# ---- seed streams and their mutations -----------------------------------------------------------


def _dumped(events: list[Any]) -> list[str]:
    return [e if isinstance(e, str) else json.dumps(e) for e in events]


def _captures(vendor: str) -> list[list[str]]:
    folder = ROOT / vendor
    return [capture_lines(folder, name) for name in capture_cases(folder)] if folder.is_dir() else []


SEEDS: dict[str, list[list[str]]] = {
    "openai": [
        _dumped(oai.text_reply("Hello, world!", reasoning="think first").events) + ["[DONE]"],
        _dumped(oai.tool_reply([("read", {"path": "a.py"}), ("ls", {})], text="Looking.").events) + ["[DONE]"],
        *_captures("openai"),
    ],
    "anthropic": [
        _dumped(anth.message_reply(anth.thinking("hmm"), anth.text("Hi there"), anth.tool_use("t1", "read", {"path": "a"})).events),
        _dumped(anth.message_reply(anth.redacted_thinking("xyz"), anth.text("ok")).events),
        *_captures("anthropic"),
    ],
    "gemini": [
        _dumped(gem.text_reply("Hello there", thoughts="first this", signature="SIG").events),
        _dumped(gem.call_reply([("read", {"path": "a.py"}, "S1"), ("ls", {}, None)], text="ok", ids=["v1", "v2"]).events),
        _dumped(
            gem.streamed_call_events("write", [{"jsonPath": "$.path", "stringValue": "a", "willContinue": True}, {"jsonPath": "$.n[0]", "numberValue": 2}], signature="S")
            + [gem.response([{"text": ""}], finish="STOP")]
        ),
        *_captures("gemini"),
    ],
    "ollama": [
        _dumped(oll.text_reply("Hello there", thinking="first").lines),
        _dumped(oll.tool_reply([oll.call("read", {"path": "a.py"}), oll.call("ls")], text="ok").lines),
    ],
}


def _slots(value: Any, out: list[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
    """Every (container, key) of a parsed JSON value: the places a mutation may change."""
    if isinstance(value, dict):
        for key, child in value.items():
            out.append((value, key))
            _slots(child, out)
    elif isinstance(value, list):
        for index, child in enumerate(value):
            out.append((value, index))
            _slots(child, out)
    return out


@st.composite
def mutated(draw: st.DrawFn, vendor: str) -> list[str]:
    """One seed stream of ``vendor`` with one to four mutations: a field's value replaced by
    any JSON value, a field removed, a payload cut short, dropped, repeated or replaced."""
    stream = list(draw(st.sampled_from(SEEDS[vendor])))
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(stream) - 1))
        op = draw(st.sampled_from(("replace", "replace", "replace", "remove", "cut", "drop", "repeat", "payload")))
        if op == "cut":
            stream[at] = stream[at][: draw(st.integers(0, len(stream[at])))]
        elif op == "drop" and len(stream) > 1:
            del stream[at]
        elif op == "repeat":
            stream.insert(at, stream[at])
        elif op == "payload":
            stream[at] = draw(payload_texts)
        else:
            try:
                value = json.loads(stream[at])
                slots = _slots(value, [])
            except (ValueError, RecursionError):  # not JSON, or a deep payload put in before
                continue
            if not slots:
                continue
            container, key = draw(st.sampled_from(slots))
            if op == "remove" and isinstance(container, dict):
                del container[key]
            else:
                container[key] = draw(json_values)
            try:
                stream[at] = json.dumps(value)
            except RecursionError:
                continue
    return stream


# ---- running a parser and checking what it gave ---------------------------------------------------


async def aiter(items: list[Any]) -> AsyncIterator[Any]:
    for item in items:
        yield item


def collect(stream: AsyncIterator[StreamChunk]) -> list[StreamChunk]:
    """Every chunk of ``stream``, run on a fresh event loop under the hang guard."""

    async def run() -> list[StreamChunk]:
        return [chunk async for chunk in stream]

    with no_hang():
        return asyncio.run(run())


def check_answer(chunks: list[StreamChunk]) -> None:
    """A stream a parser accepted: chunks of the neutral types with fields of their types, and
    exactly one FinishChunk, last."""
    assert chunks and isinstance(chunks[-1], FinishChunk)
    assert sum(isinstance(c, FinishChunk) for c in chunks) == 1
    for chunk in chunks:
        if isinstance(chunk, (TextChunk, ReasoningChunk)):
            assert isinstance(chunk.text, str)
        elif isinstance(chunk, ToolCallChunk):
            call = chunk.call
            assert isinstance(call.id, str) and isinstance(call.name, str) and isinstance(call.arguments, str)
        elif isinstance(chunk, UsageChunk):
            assert isinstance(chunk.input_tokens, int) and isinstance(chunk.output_tokens, int)
        elif isinstance(chunk, FinishChunk):
            assert chunk.reason is None or isinstance(chunk.reason, str)
            assert chunk.model is None or isinstance(chunk.model, str)
        else:
            assert isinstance(chunk, StateChunk)
            json.dumps(chunk.data)  # stored with the message: must stay JSON
