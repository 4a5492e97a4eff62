"""Recorded OpenAI-compatible streams (../shared/captures/openai) replayed through OpenAIProvider.

Each ``<name>.chunks.txt`` line is served over a real loopback HTTP stream as
``data: <line>\\n\\n`` followed by ``data: [DONE]``; the assembled result must equal
``<name>.expected.json`` (shape described in ../shared/captures/README.md).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.model_server import ModelServer, Reply
from totem_engine.providers.base import (
    ChatRequest,
    FinishChunk,
    Message,
    ReasoningChunk,
    TextChunk,
    ToolCallChunk,
)
from totem_engine.providers.openai import OpenAIProvider

CAPTURES = Path(__file__).resolve().parents[2].parent / "shared" / "captures" / "openai"

if not CAPTURES.is_dir():
    pytest.skip(f"recorded captures not present at {CAPTURES}", allow_module_level=True)

CASES = sorted(p.name.removesuffix(".chunks.txt") for p in CAPTURES.glob("*.chunks.txt"))


def test_captures_are_there():
    # A present folder with nothing to replay would make the parametrized test vanish silently.
    assert CASES, f"no *.chunks.txt in {CAPTURES}"


@pytest.mark.parametrize("name", CASES)
async def test_capture_replays_to_expected(name):
    lines = [
        line
        for line in (CAPTURES / f"{name}.chunks.txt").read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    expected = json.loads((CAPTURES / f"{name}.expected.json").read_text(encoding="utf-8"))

    with ModelServer() as server:
        server.enqueue(Reply(events=lines))
        provider = OpenAIProvider("capture", server.base_url, "sk-capture")
        try:
            request = ChatRequest(model="any", system="", messages=(Message("user", "hi"),))
            chunks = [c async for c in provider.stream(request)]
        finally:
            await provider.aclose()

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
    # The README gives the tool-call id "where sent": compare only the keys the capture has.
    got["tool_calls"] = [
        {k: v for k, v in call.items() if k in exp}
        for call, exp in zip(got["tool_calls"], expected["tool_calls"])
    ] + got["tool_calls"][len(expected["tool_calls"]):]
    want = {k: expected[k] for k in ("text", "reasoning", "tool_calls", "finish")}
    assert got == want
