"""The one parser of tool-call arguments (vocab/tools.py): arguments_object and, with the
reason, decode_arguments, which tools/base.py parse_arguments turns into the model's error."""

from __future__ import annotations

import json

import pytest

from totem_engine.textcalls import as_written
from totem_engine.tools.base import ToolInput, parse_arguments
from totem_engine.vocab.messages import Message
from totem_engine.vocab.tools import ArgumentsError, ToolCall, ToolError, arguments_object, decode_arguments

DEEP = "[" * 100_000 + "]" * 100_000  # deeper than the decoder's recursion limit


class PathInput(ToolInput):
    path: str


@pytest.mark.parametrize("raw, value", [("", {}), ("  \n", {}), ('{"path": "a.py"}', {"path": "a.py"})])
def test_empty_text_is_an_empty_object_and_an_object_is_itself(raw, value):
    assert arguments_object(raw) == value
    assert decode_arguments(raw) == value


@pytest.mark.parametrize("raw", ['{"path": ', "[1, 2]", '"a.py"', "42", "null", DEEP])
def test_anything_but_an_object_is_none(raw):
    assert arguments_object(raw) is None
    with pytest.raises(ArgumentsError):
        decode_arguments(raw)


def test_the_reason_names_the_decoder_error_or_the_type_found():
    with pytest.raises(ArgumentsError) as broken:
        decode_arguments('{"path": ')
    assert str(broken.value) == "Expecting value at position 9" and broken.value.found is None
    with pytest.raises(ArgumentsError) as listed:
        decode_arguments('["ls"]')
    assert listed.value.found == "list"


def test_arguments_nested_too_deeply_are_a_tool_error_not_a_crash():
    with pytest.raises(ToolError) as info:
        parse_arguments(PathInput, DEEP)
    assert "not valid JSON (nested too deeply)" in str(info.value)


def test_the_tool_error_for_broken_json_keeps_the_position_and_the_expected_schema():
    with pytest.raises(ToolError) as info:
        parse_arguments(PathInput, '{"path": ')
    message = str(info.value)
    assert message.startswith("The arguments are not valid JSON (Expecting value at position 9). Expected an object matching: ")
    assert json.loads(message.split("matching: ", 1)[1])["required"] == ["path"]


def test_a_replayed_call_whose_arguments_are_not_an_object_shows_them_as_sent():
    call = ToolCall(id="c1", name="bash", arguments='["ls"]')
    replayed = as_written([Message(role="assistant", tool_calls=(call,))])
    assert replayed[0].text == '```json\n{"name": "bash", "arguments": "[\\"ls\\"]"}\n```'
