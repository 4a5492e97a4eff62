"""Recorded Anthropic Messages streams (../shared/captures/anthropic) replayed through
AnthropicProvider over a real loopback HTTP stream.

Each ``<name>.chunks.txt`` line is served as ``event: <type>`` + ``data: <line>`` (the SSE framing
the API uses); the assembled result must equal ``<name>.expected.json`` (shape described in
../shared/captures/README.md): text, reasoning, tool calls (id, name, parsed arguments) and the
provider's own stop reason.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.anthropic_server import AnthropicServer, Reply
from totem_engine.providers.anthropic import AnthropicProvider
from totem_engine.providers.base import (
    ChatRequest,
    FinishChunk,
    Message,
    ReasoningChunk,
    StateChunk,
    TextChunk,
    ToolCallChunk,
)

CAPTURES = Path(__file__).resolve().parents[2].parent / "shared" / "captures" / "anthropic"

if not CAPTURES.is_dir():
    pytest.skip(f"recorded captures not present at {CAPTURES}", allow_module_level=True)

CASES = sorted(p.name.removesuffix(".chunks.txt") for p in CAPTURES.glob("*.chunks.txt"))
KEY = "sk-ant-capture-key"


def lines_of(name: str) -> list[str]:
    text = (CAPTURES / f"{name}.chunks.txt").read_text(encoding="utf-8")
    return [line for line in text.splitlines() if line.strip()]


async def replay(name: str) -> list:
    with AnthropicServer(api_key=KEY) as server:
        server.enqueue(Reply(events=lines_of(name)))
        provider = AnthropicProvider("capture", server.base_url, KEY)
        try:
            request = ChatRequest(model="claude-sonnet-4-5", system="", messages=(Message("user", "hi"),))
            return [c async for c in provider.stream(request)]
        finally:
            await provider.aclose()


def test_captures_are_there():
    # A present folder with nothing to replay would make the parametrized test vanish silently.
    assert CASES, f"no *.chunks.txt in {CAPTURES}"
    for name in CASES:
        assert (CAPTURES / f"{name}.expected.json").is_file(), f"{name} has no expected.json"


@pytest.mark.parametrize("name", CASES)
async def test_capture_replays_to_expected(name):
    expected = json.loads((CAPTURES / f"{name}.expected.json").read_text(encoding="utf-8"))
    chunks = await replay(name)

    finishes = [c for c in chunks if isinstance(c, FinishChunk)]
    assert len(finishes) == 1 and chunks[-1] is finishes[0]
    got = {
        "text": "".join(c.text for c in chunks if isinstance(c, TextChunk)),
        "reasoning": "".join(c.text for c in chunks if isinstance(c, ReasoningChunk)),
        "tool_calls": [
            {"id": c.call.id, "name": c.call.name, "arguments": json.loads(c.call.arguments)}
            for c in chunks
            if isinstance(c, ToolCallChunk)
        ],
        "finish": finishes[0].reason,
    }
    want = {k: expected[k] for k in ("text", "reasoning", "tool_calls", "finish")}
    assert got == want


@pytest.mark.parametrize("name", CASES)
async def test_capture_thinking_is_kept_with_its_signature(name):
    """Every signature_delta of the capture comes back, byte for byte, in the replay state."""
    signatures = []
    thinking_text = []
    for line in lines_of(name):
        event = json.loads(line)
        delta = event.get("delta") or {}
        if delta.get("type") == "signature_delta":
            signatures.append(delta["signature"])
        if delta.get("type") == "thinking_delta":
            thinking_text.append(delta["thinking"])
    chunks = await replay(name)
    states = [c for c in chunks if isinstance(c, StateChunk)]
    if not signatures:
        assert states == []
        return
    assert len(states) == 1
    assert states[0].data == {
        "thinking": [{"type": "thinking", "thinking": "".join(thinking_text), "signature": "".join(signatures)}]
    }
