"""Token estimates of a request and the per-session calibration (totem_engine.context)."""

from __future__ import annotations

import json

import pytest

from totem_engine.api import events as ev
from totem_engine.config import Config, ConfigError, ConfigLayer, merge_layers
from totem_engine.context import (
    CALIBRATION_KEY,
    CALIBRATION_MAX,
    CALIBRATION_MIN,
    Calibration,
    attachment_chars,
    breakdown,
    estimate,
    input_tokens,
    message_tokens,
    output_reserve,
)
from totem_engine.vocab.chat import ChatRequest
from totem_engine.vocab.messages import Message
from totem_engine.vocab.tools import ToolCall, ToolSpec


def request(*messages: Message, system: str = "", tools: tuple[ToolSpec, ...] = ()) -> ChatRequest:
    return ChatRequest(model="m", system=system, messages=messages, tools=tools)


def test_more_text_costs_more_about_four_characters_a_token():
    small = estimate(request(Message(role="user", text="x" * 400)), 0)
    large = estimate(request(Message(role="user", text="x" * 4400)), 0)
    assert large - small == 1000


def test_system_prompt_and_reserved_output_are_counted():
    base = estimate(request(Message(role="user", text="hi")), 0)
    assert estimate(request(Message(role="user", text="hi"), system="s" * 800), 0) == base + 200
    assert estimate(request(Message(role="user", text="hi")), 1000) == base + 1000


def test_tool_schemas_are_counted_as_their_json():
    schema = {"type": "object", "properties": {"path": {"type": "string", "description": "d" * 400}}}
    spec = ToolSpec(name="read", description="Read a file.", parameters=schema)
    without = estimate(request(), 0)
    with_tool = estimate(request(tools=(spec,)), 0)
    chars = len(json.dumps({"name": "read", "description": "Read a file.", "parameters": schema}))
    assert with_tool - without == pytest.approx(chars / 4, abs=1)


def test_tool_call_arguments_and_results_are_counted():
    plain = message_tokens(Message(role="assistant", text="ok"))
    args = json.dumps({"path": "src/app.py", "content": "y" * 800})
    with_call = message_tokens(Message(role="assistant", text="ok", tool_calls=(ToolCall("c1", "write", args),)))
    assert with_call - plain >= 800 // 4
    result = message_tokens(Message(role="tool", text="z" * 1200, tool_call_id="c1", name="write"))
    assert result >= 300


def test_calibration_multiplies_the_input_not_the_reserve():
    req = request(Message(role="user", text="x" * 4000))
    raw = input_tokens(req)
    assert estimate(req, 500, calibration=2.0) == 2 * raw + 500
    assert estimate(req, 500, calibration=1.0) == raw + 500


def test_first_report_sets_the_factor_then_it_is_smoothed():
    cal = Calibration()
    assert cal.update(1000, 1500) == pytest.approx(1.5)
    # Half way from 1.5 to the new ratio 1.1.
    assert cal.update(1000, 1100) == pytest.approx(1.3)
    assert cal.update(2000, 2600) == pytest.approx(1.3)


def test_factor_is_clamped():
    cal = Calibration()
    assert cal.update(100, 100_000) == CALIBRATION_MAX
    cal = Calibration()
    assert cal.update(100_000, 50) == 1.0  # too small a report teaches nothing
    assert cal.update(100_000, 1000) == CALIBRATION_MIN


def test_useless_reports_change_nothing():
    cal = Calibration(factor=1.2, observations=3)
    assert cal.update(0, 5000) == 1.2
    assert cal.update(1000, 0) == 1.2
    assert cal.observations == 3


def test_calibration_survives_the_session_meta_as_a_float():
    cal = Calibration()
    assert cal.to_meta() == {}  # nothing learned, nothing stored
    cal.update(1000, 1250)
    meta = {"todos": [], **cal.to_meta()}
    assert isinstance(meta[CALIBRATION_KEY], float)
    again = Calibration.from_meta(json.loads(json.dumps(meta)))
    assert again.factor == pytest.approx(1.25)
    # Learned before: the next report is smoothed, not taken whole.
    assert again.update(1000, 2250) == pytest.approx(1.75)


@pytest.mark.parametrize("stored", [None, "x", True, float("nan"), 99.0, 0.01])
def test_unreadable_or_wild_meta_is_safe(stored):
    cal = Calibration.from_meta({} if stored is None else {CALIBRATION_KEY: stored})
    assert CALIBRATION_MIN <= cal.factor <= CALIBRATION_MAX


def test_output_reserve_is_the_limit_but_at_most_a_quarter_of_the_window():
    assert output_reserve(1024, 8192) == 1024
    assert output_reserve(8192, 8192) == 2048
    assert output_reserve(None, 4096) == 1024
    assert output_reserve(None, None) == 4096


SHARES = ev.ContextBreakdown(system=900, history=300, tool_results=200, attachments=7, output=1024)


def test_context_event_wire_form():
    wire = ev.ContextEstimate(session_id="s", estimate=2431, window=8192, breakdown=SHARES).to_wire()
    assert wire == {
        "sessionId": "s", "kind": "context", "estimate": 2431, "window": 8192,
        "breakdown": {"system": 900, "history": 300, "toolResults": 200, "attachments": 7, "output": 1024},
    }
    assert ev.ContextEstimate(session_id="s", estimate=1, window=None, breakdown=SHARES).to_wire()["window"] is None


BLOCK = '<context file="src/app.py" lines="1-2">\n' + "a" * 396 + "\n</context>"


def test_attachment_chars_are_the_context_blocks_only():
    assert attachment_chars("no blocks here") == 0
    text = f'{BLOCK}\n\n<context file="b.py"/>\n\nwhat does it do?'
    assert attachment_chars(text) == len(BLOCK) + len('<context file="b.py"/>')
    assert attachment_chars("I typed <context file= by hand") == 0


def test_breakdown_splits_the_estimate_by_what_fills_the_window():
    call = ToolCall(id="c1", name="read", arguments='{"path": "a"}')
    req = request(
        Message(role="user", text=f"{BLOCK}\n\nexplain it"),
        Message(role="assistant", text="Let me read.", tool_calls=(call,)),
        Message(role="tool", text="r" * 800, tool_call_id="c1", name="read"),
        system="s" * 2000,
        tools=(ToolSpec("read", "Read a file", {"type": "object"}),),
    )
    shares = breakdown(req, 500)
    assert shares.system > 500 and shares.output == 500
    assert shares.tool_results >= 200 and shares.attachments >= len(BLOCK) // 4
    assert shares.history > 0
    total = shares.system + shares.history + shares.tool_results + shares.attachments + shares.output
    assert total == estimate(req, 500)
    # Calibrated the same way as the estimate, and still adding up to it.
    scaled = breakdown(req, 500, 1.7)
    assert scaled.system + scaled.history + scaled.tool_results + scaled.attachments + scaled.output == estimate(req, 500, 1.7)
    assert scaled.tool_results > shares.tool_results


def test_compact_at_config_key():
    assert Config().compact_at == 0.7
    assert merge_layers([ConfigLayer("f", "file", {"compact_at": 0.5})]).compact_at == 0.5
    with pytest.raises(ConfigError):
        merge_layers([ConfigLayer("f", "file", {"compact_at": 1.5})])
