"""Stored messages as the provider's message list (history.to_messages)."""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

import pytest

from totem_engine.history import INTERRUPTED, to_messages
from totem_engine.store import StoredMessage, StoredPart
from totem_engine.vocab.messages import Image, Message
from totem_engine.vocab.tools import ToolCall

_ids = itertools.count(1)


def part(type: str, data: dict[str, Any], *, status: str | None = None, discarded: bool = False) -> StoredPart:
    n = next(_ids)
    return StoredPart(
        id=f"p{n}", message_id="m", seq=n, type=type, data=data, status=status,
        discarded=discarded, created_at=float(n), updated_at=float(n),
    )


def message(role: str, *parts: StoredPart) -> StoredMessage:
    n = next(_ids)
    return StoredMessage(
        id=f"m{n}", session_id="s", seq=n, role=role, turn_id="t1", step=None if role == "user" else 0,
        model=None if role == "user" else "m-1", created_at=float(n), parts=list(parts),
    )


def text(t: str, **kw) -> StoredPart:
    return part("text", {"text": t}, **kw)


def tool(call_id: str, name: str, arguments: str, *, status: str | None, output: str | None = None, **kw) -> StoredPart:
    data: dict[str, Any] = {"callId": call_id, "tool": name, "arguments": arguments, "input": {}}
    if output is not None:
        data["output"] = output
    return part("tool", data, status=status, **kw)


def test_user_text():
    assert to_messages([message("user", text("hello "), text("world"))]) == [Message(role="user", text="hello world")]


def test_user_message_without_text_is_left_out():
    assert to_messages([message("user")]) == []


def test_assistant_text_only():
    out = to_messages([message("user", text("hi")), message("assistant", text("Hello."))])
    assert out == [Message(role="user", text="hi"), Message(role="assistant", text="Hello.")]


def test_assistant_with_tool_calls_then_one_tool_message_per_call_in_order():
    stored = [
        message("user", text("look")),
        message(
            "assistant",
            part("reasoning", {"text": "think"}),
            text("Reading both."),
            tool("c1", "read", '{"path": "a.py"}', status="ok", output="1\ta"),
            tool("c2", "read", '{"path": "b.py"}', status="error", output="b.py does not exist."),
            tool("c3", "write", '{"path": "c.py", "content": ""}', status="denied", output="The user rejected this."),
        ),
        message("assistant", text("Done.")),
    ]
    out = to_messages(stored)
    assert [m.role for m in out] == ["user", "assistant", "tool", "tool", "tool", "assistant"]
    assistant = out[1]
    assert assistant.text == "Reading both."
    assert assistant.reasoning == "think"
    assert assistant.tool_calls == (
        ToolCall(id="c1", name="read", arguments='{"path": "a.py"}'),
        ToolCall(id="c2", name="read", arguments='{"path": "b.py"}'),
        ToolCall(id="c3", name="write", arguments='{"path": "c.py", "content": ""}'),
    )
    assert out[2] == Message(role="tool", text="1\ta", tool_call_id="c1", name="read")
    assert out[3] == Message(role="tool", text="b.py does not exist.", tool_call_id="c2", name="read", is_error=True)
    assert out[4] == Message(role="tool", text="The user rejected this.", tool_call_id="c3", name="write", is_error=True)
    assert out[5] == Message(role="assistant", text="Done.")


@pytest.mark.parametrize(
    ("status", "flagged"), [("ok", False), ("error", True), ("denied", True), ("interrupted", False), ("running", False)]
)
def test_a_result_is_an_error_by_its_stored_status_not_its_text(status, flagged):
    # The text is what a tool may well print; only the status calls.py stored says it failed.
    out = to_messages([message("assistant", tool("c1", "bash", "{}", status=status, output="Error: not a failure"))])
    assert out[1].is_error is flagged


def test_tool_calls_without_text():
    out = to_messages([message("assistant", tool("c1", "read", "{}", status="ok", output="x"))])
    assert out[0].role == "assistant" and out[0].text == "" and len(out[0].tool_calls) == 1
    assert out[1].tool_call_id == "c1"


def test_discarded_parts_are_left_out():
    stored = [
        message("user", text("old ask", discarded=True), text("ask")),
        message(
            "assistant",
            text("first try", discarded=True),
            tool("c0", "read", "{}", status="ok", output="stale", discarded=True),
        ),
        message("assistant", text("second try"), tool("c1", "read", "{}", status="ok", output="fresh")),
    ]
    out = to_messages(stored)
    assert [m.role for m in out] == ["user", "assistant", "tool"]
    assert out[0].text == "ask"
    assert out[1].text == "second try"
    assert [c.id for c in out[1].tool_calls] == ["c1"]
    assert out[2].text == "fresh"
    assert all("stale" not in m.text and "first try" not in m.text for m in out)


@pytest.mark.parametrize("status", ["pending", "running", None])
def test_unfinished_call_is_replayed_as_interrupted(status):
    out = to_messages(
        [message("assistant", text("Running it."), tool("c1", "write", '{"path": "x"}', status=status, output="partial"))]
    )
    assert out[0].tool_calls == (ToolCall(id="c1", name="write", arguments='{"path": "x"}'),)
    assert out[1] == Message(role="tool", text=INTERRUPTED, tool_call_id="c1", name="write")


def test_interrupted_status_without_output_is_replayed_as_interrupted():
    out = to_messages([message("assistant", tool("c1", "read", "{}", status="interrupted"))])
    assert out[1].text == INTERRUPTED


def test_every_call_gets_exactly_one_answer():
    stored = [
        message(
            "assistant",
            tool("a", "read", "{}", status="ok", output="A"),
            tool("b", "read", "{}", status="running"),
            tool("c", "read", "{}", status="pending"),
        )
    ]
    out = to_messages(stored)
    calls = [c.id for c in out[0].tool_calls]
    answers = [m.tool_call_id for m in out if m.role == "tool"]
    assert calls == answers == ["a", "b", "c"]
    assert [m.text for m in out[1:]] == ["A", INTERRUPTED, INTERRUPTED]


def test_missing_arguments_default_to_empty_object():
    p = part("tool", {"callId": "c1", "tool": "read"}, status="ok")
    p.data["output"] = "x"
    out = to_messages([message("assistant", p)])
    assert out[0].tool_calls[0].arguments == "{}"


def test_step_and_notice_parts_are_not_replayed():
    stored = [
        message("assistant", part("step", {"n": 1}), text("Hi."), part("notice", {"text": "stopped: guard"})),
    ]
    out = to_messages(stored)
    assert out == [Message(role="assistant", text="Hi.")]


def test_assistant_message_with_only_reasoning_is_left_out():
    assert to_messages([message("assistant", part("reasoning", {"text": "hmm"}))]) == []


def test_finished_call_with_empty_output_is_not_called_interrupted():
    out = to_messages([message("assistant", tool("c1", "bash", '{"command": "true"}', status="ok", output=""))])
    assert out[1].tool_call_id == "c1"
    assert out[1].text == ""
    assert out[1].text != INTERRUPTED


def test_with_text_keeps_every_other_field_as_replace_does():
    image = Image(name="a.png", mime_type="image/png", data="QUJD", size=3, width=2, height=2)
    message = Message(
        role="tool", text="old", reasoning="why", tool_calls=(ToolCall(id="c1", name="read", arguments="{}"),),
        tool_call_id="c1", name="read", replay={"k": 1}, is_error=True, images=(image,),
    )
    # A field added to Message fails here until with_text copies it too.
    assert [f.name for f in dataclasses.fields(Message)] == [
        "role", "text", "reasoning", "tool_calls", "tool_call_id", "name", "replay", "is_error", "images",
    ]
    assert message.with_text("new") == dataclasses.replace(message, text="new")
    assert message.with_text("new", images=()) == dataclasses.replace(message, text="new", images=())
