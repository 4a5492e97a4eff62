"""Recorded Anthropic Messages streams (../shared/captures/anthropic) replayed through
AnthropicProvider over a real loopback HTTP stream.

Each ``<name>.chunks.txt`` line is served as ``event: <type>`` + ``data: <line>`` (the SSE framing
the API uses); the assembled result must equal ``<name>.expected.json`` (shape described in
../shared/captures/README.md): text, reasoning, tool calls (id, name, parsed arguments) and the
provider's own stop reason.
"""

from __future__ import annotations

import json

import pytest

from tests.support.anthropic_server import AnthropicServer, Reply
from tests.support.captures import (
    capture_cases,
    capture_expected,
    capture_folder,
    capture_lines,
)
from tests.support.streams import hi, stream_once, summary
from totem_engine.providers.anthropic import AnthropicProvider
from totem_engine.vocab.chat import StateChunk

CAPTURES = capture_folder("anthropic")
CASES = capture_cases(CAPTURES)
KEY = "sk-ant-capture-key"


async def replay(name: str) -> list:
    with AnthropicServer(api_key=KEY) as server:
        server.enqueue(Reply(events=capture_lines(CAPTURES, name)))
        return await stream_once(AnthropicProvider("capture", server.base_url, KEY), hi("claude-sonnet-4-5"))


def test_captures_are_there():
    # A present folder with nothing to replay would make the parametrized test vanish silently.
    assert CASES, f"no *.chunks.txt in {CAPTURES}"
    for name in CASES:
        assert (CAPTURES / f"{name}.expected.json").is_file(), f"{name} has no expected.json"


@pytest.mark.parametrize("name", CASES)
async def test_capture_replays_to_expected(name):
    expected = capture_expected(CAPTURES, name)
    got = summary(await replay(name))
    want = {k: expected[k] for k in ("text", "reasoning", "tool_calls", "finish")}
    assert got == want


@pytest.mark.parametrize("name", CASES)
async def test_capture_thinking_is_kept_with_its_signature(name):
    """Every signature_delta of the capture comes back, byte for byte, in the replay state."""
    signatures = []
    thinking_text = []
    for line in capture_lines(CAPTURES, name):
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
