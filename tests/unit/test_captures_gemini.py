"""Recorded Gemini streams (../shared/captures/gemini) replayed through GeminiProvider.

Each ``<name>.chunks.txt`` line is served over a real loopback HTTP stream as
``data: <line>\\n\\n`` (Gemini's SSE has no end marker); the assembled result must equal
``<name>.expected.json`` (shape in ../shared/captures/README.md). A call's ``thoughtSignature``
is read from the provider's StateChunk, i.e. what the next request would send back on that
call's part; ``id`` is compared only where the expected file has a non-null one (Gemini sends
none, so the provider makes them up).
"""

from __future__ import annotations

import json

import pytest

from tests.support.captures import (
    capture_cases,
    capture_expected,
    capture_folder,
    capture_lines,
)
from tests.support.gemini_server import GeminiServer, Reply
from tests.support.streams import calls, hi, stream_once, texts, the_finish
from totem_engine.providers.gemini import GeminiProvider, model_parts
from totem_engine.vocab.chat import ReasoningChunk, StateChunk, TextChunk
from totem_engine.vocab.messages import Message

CAPTURES = capture_folder("gemini")
CASES = capture_cases(CAPTURES)


def test_captures_are_there():
    assert CASES, f"no *.chunks.txt in {CAPTURES}"


async def _replay(name: str) -> list:
    with GeminiServer() as server:
        server.enqueue(Reply(events=capture_lines(CAPTURES, name)))
        provider = GeminiProvider("capture", server.base_url, "capture-key-0000")
        return await stream_once(provider, hi("gemini-3-pro-preview"))


@pytest.mark.parametrize("name", CASES)
async def test_capture_replays_to_expected(name):
    expected = capture_expected(CAPTURES, name)
    chunks = await _replay(name)

    finish = the_finish(chunks)
    states = [c for c in chunks if isinstance(c, StateChunk)]
    assert len(states) <= 1
    signatures = {}
    if states:
        for entry in states[0].data["gemini"]["parts"]:
            if "call" in entry:
                signatures[entry["call"]] = entry.get("thoughtSignature")

    answered = calls(chunks)
    assert len({c.id for c in answered}) == len(answered), "generated call ids must be distinct"
    got_calls = []
    for call, want in zip(answered, expected["tool_calls"] + [{}] * len(answered)):
        got = {"name": call.name, "arguments": json.loads(call.arguments)}
        if "thoughtSignature" in want:
            got["thoughtSignature"] = signatures.get(call.id)
        if want.get("id") is not None:
            got["id"] = call.id
        got_calls.append(got)
    want_calls = [{k: v for k, v in c.items() if k != "id" or v is not None} for c in expected["tool_calls"]]

    got = {
        "text": texts(chunks, TextChunk),
        "reasoning": texts(chunks, ReasoningChunk),
        "tool_calls": got_calls,
        "finish": finish.reason,
    }
    want = {k: expected[k] for k in ("text", "reasoning")} | {
        "tool_calls": want_calls,
        "finish": expected["finish"],
    }
    assert got == want


@pytest.mark.parametrize("name", CASES)
async def test_capture_signatures_go_back_on_their_parts(name):
    """Every thoughtSignature in the capture comes back, once, in the next request's parts."""
    sent = [
        part["thoughtSignature"]
        for line in capture_lines(CAPTURES, name)
        for cand in json.loads(line).get("candidates", [])
        for part in cand.get("content", {}).get("parts", [])
        if part.get("thoughtSignature")
    ]
    chunks = await _replay(name)
    state = next((c.data for c in chunks if isinstance(c, StateChunk)), None)
    message = Message(
        "assistant",
        text=texts(chunks, TextChunk),
        reasoning=texts(chunks, ReasoningChunk),
        tool_calls=tuple(calls(chunks)),
        replay=state,
    )
    parts, _ = model_parts(message)
    assert [p["thoughtSignature"] for p in parts if "thoughtSignature" in p] == sent
    # Each call's signature sits on that call's own part.
    for call in message.tool_calls:
        part = next(p for p in parts if p.get("functionCall", {}).get("name") == call.name
                    and p["functionCall"]["args"] == json.loads(call.arguments))
        entry = next(e for e in state["gemini"]["parts"] if e.get("call") == call.id) if state else {}
        assert part.get("thoughtSignature") == entry.get("thoughtSignature")
