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
from pathlib import Path

import pytest

from tests.support.gemini_server import GeminiServer, Reply
from totem_engine.providers.base import (
    ChatRequest,
    FinishChunk,
    Message,
    ReasoningChunk,
    StateChunk,
    TextChunk,
    ToolCallChunk,
)
from totem_engine.providers.gemini import GeminiProvider, model_parts

CAPTURES = Path(__file__).resolve().parents[2].parent / "shared" / "captures" / "gemini"

if not CAPTURES.is_dir():
    pytest.skip(f"recorded captures not present at {CAPTURES}", allow_module_level=True)

CASES = sorted(p.name.removesuffix(".chunks.txt") for p in CAPTURES.glob("*.chunks.txt"))


def test_captures_are_there():
    assert CASES, f"no *.chunks.txt in {CAPTURES}"


async def _replay(name: str) -> list:
    lines = [
        line
        for line in (CAPTURES / f"{name}.chunks.txt").read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    with GeminiServer() as server:
        server.enqueue(Reply(events=lines))
        provider = GeminiProvider("capture", server.base_url, "capture-key-0000")
        try:
            request = ChatRequest(model="gemini-3-pro-preview", system="", messages=(Message("user", "hi"),))
            return [c async for c in provider.stream(request)]
        finally:
            await provider.aclose()


@pytest.mark.parametrize("name", CASES)
async def test_capture_replays_to_expected(name):
    expected = json.loads((CAPTURES / f"{name}.expected.json").read_text(encoding="utf-8"))
    chunks = await _replay(name)

    finishes = [c for c in chunks if isinstance(c, FinishChunk)]
    assert len(finishes) == 1 and chunks[-1] is finishes[0]
    states = [c for c in chunks if isinstance(c, StateChunk)]
    assert len(states) <= 1
    signatures = {}
    if states:
        for entry in states[0].data["gemini"]["parts"]:
            if "call" in entry:
                signatures[entry["call"]] = entry.get("thoughtSignature")

    calls = [c.call for c in chunks if isinstance(c, ToolCallChunk)]
    assert len({c.id for c in calls}) == len(calls), "generated call ids must be distinct"
    got_calls = []
    for call, want in zip(calls, expected["tool_calls"] + [{}] * len(calls)):
        got = {"name": call.name, "arguments": json.loads(call.arguments)}
        if "thoughtSignature" in want:
            got["thoughtSignature"] = signatures.get(call.id)
        if want.get("id") is not None:
            got["id"] = call.id
        got_calls.append(got)
    want_calls = [{k: v for k, v in c.items() if k != "id" or v is not None} for c in expected["tool_calls"]]

    got = {
        "text": "".join(c.text for c in chunks if isinstance(c, TextChunk)),
        "reasoning": "".join(c.text for c in chunks if isinstance(c, ReasoningChunk)),
        "tool_calls": got_calls,
        "finish": finishes[0].reason,
    }
    want = {k: expected[k] for k in ("text", "reasoning")} | {
        "tool_calls": want_calls,
        "finish": expected["finish"],
    }
    assert got == want


@pytest.mark.parametrize("name", CASES)
async def test_capture_signatures_go_back_on_their_parts(name):
    """Every thoughtSignature in the capture comes back, once, in the next request's parts."""
    lines = (CAPTURES / f"{name}.chunks.txt").read_text(encoding="utf-8").splitlines()
    sent = [
        part["thoughtSignature"]
        for line in lines
        if line.strip()
        for cand in json.loads(line).get("candidates", [])
        for part in cand.get("content", {}).get("parts", [])
        if part.get("thoughtSignature")
    ]
    chunks = await _replay(name)
    state = next((c.data for c in chunks if isinstance(c, StateChunk)), None)
    message = Message(
        "assistant",
        text="".join(c.text for c in chunks if isinstance(c, TextChunk)),
        reasoning="".join(c.text for c in chunks if isinstance(c, ReasoningChunk)),
        tool_calls=tuple(c.call for c in chunks if isinstance(c, ToolCallChunk)),
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
