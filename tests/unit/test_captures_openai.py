"""Recorded OpenAI-compatible streams (../shared/captures/openai) replayed through OpenAIProvider.

Each ``<name>.chunks.txt`` line is served over a real loopback HTTP stream as
``data: <line>\\n\\n`` followed by ``data: [DONE]``; the assembled result must equal
``<name>.expected.json`` (shape described in ../shared/captures/README.md).
"""

from __future__ import annotations

import pytest

from tests.support.captures import (
    capture_cases,
    capture_expected,
    capture_folder,
    capture_lines,
)
from tests.support.model_server import ModelServer, Reply
from tests.support.streams import hi, stream_once, summary
from totem_engine.providers.openai import OpenAIProvider

CAPTURES = capture_folder("openai")
CASES = capture_cases(CAPTURES)


def test_captures_are_there():
    # A present folder with nothing to replay would make the parametrized test vanish silently.
    assert CASES, f"no *.chunks.txt in {CAPTURES}"


@pytest.mark.parametrize("name", CASES)
async def test_capture_replays_to_expected(name):
    expected = capture_expected(CAPTURES, name)
    with ModelServer() as server:
        server.enqueue(Reply(events=capture_lines(CAPTURES, name)))
        chunks = await stream_once(OpenAIProvider("capture", server.base_url, "sk-capture"), hi("any"))

    got = summary(chunks)
    # The README gives the tool-call id "where sent": compare only the keys the capture has.
    got["tool_calls"] = [
        {k: v for k, v in call.items() if k in exp}
        for call, exp in zip(got["tool_calls"], expected["tool_calls"])
    ] + got["tool_calls"][len(expected["tool_calls"]):]
    want = {k: expected[k] for k in ("text", "reasoning", "tool_calls", "finish")}
    assert got == want
