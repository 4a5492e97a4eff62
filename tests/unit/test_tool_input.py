"""ToolInput: the schema the model sees, clamping of bounded numbers, and argument parsing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import pytest
from pydantic import Field

from totem_engine.jobs import Jobs
from totem_engine.terminals import Terminals
from totem_engine.tools.base import Bounded, ToolInput, input_schema, parse_arguments
from totem_engine.tools.read import DEFAULT_LIMIT, ReadInput
from totem_engine.tools.registry import builtin_tools
from totem_engine.tools.write import WriteInput
from totem_engine.vocab.tools import ToolError


def _walk(node):
    """Every dict nested anywhere in a JSON value."""
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from _walk(value)


# --- schema ---------------------------------------------------------------------------------


def test_read_schema_is_flat_without_titles():
    schema = input_schema(ReadInput)
    assert schema["type"] == "object"
    assert set(schema["properties"]) == {"path", "offset", "limit"}
    assert "title" not in schema
    for node in _walk(schema):
        assert "title" not in node, node
    assert "$defs" not in schema


def test_optional_fields_are_plain_types_and_not_required():
    schema = input_schema(ReadInput)
    assert schema["required"] == ["path"]
    for name in ("offset", "limit"):
        prop = schema["properties"][name]
        assert prop["type"] == "integer"
        assert "anyOf" not in prop
        assert "default" not in prop
        assert prop.get("description")
    # Nothing anywhere in the schema admits null.
    for node in _walk(schema):
        assert node.get("type") != "null", node


def test_required_fields_listed_and_described():
    schema = input_schema(WriteInput)
    assert sorted(schema["required"]) == ["content", "path"]
    assert schema["properties"]["path"]["type"] == "string"
    assert schema["properties"]["content"]["type"] == "string"
    assert schema["properties"]["path"]["description"]


def test_model_without_required_fields_has_no_required_key():
    class AllOptional(ToolInput):
        query: str | None = Field(None, description="q")

    schema = input_schema(AllOptional)
    assert "required" not in schema
    assert schema["properties"]["query"] == {"type": "string", "description": "q"}


def test_every_builtin_tool_schema_is_json_and_titleless():
    for tool in builtin_tools(jobs=Jobs(Path.cwd()), terminals=Terminals(Path.cwd())).values():
        schema = input_schema(tool.Input)
        json.dumps(schema)  # serialisable
        for node in _walk(schema):
            assert "title" not in node
            assert node.get("type") != "null"


# --- clamping -------------------------------------------------------------------------------


def test_zero_limit_becomes_default_with_a_note():
    args = ReadInput.model_validate({"path": "a", "limit": 0})
    assert args.limit == DEFAULT_LIMIT
    assert len(args.notes) == 1
    assert "limit" in args.notes[0] and str(DEFAULT_LIMIT) in args.notes[0]


def test_huge_limit_becomes_maximum_with_a_note():
    args = ReadInput.model_validate({"path": "a", "limit": 10**6})
    assert args.limit == DEFAULT_LIMIT
    assert len(args.notes) == 1
    assert "limit" in args.notes[0] and "maximum" in args.notes[0]


def test_negative_offset_becomes_one_with_a_note():
    args = ReadInput.model_validate({"path": "a", "offset": -5})
    assert args.offset == 1
    assert any("offset" in n for n in args.notes)


def test_in_range_values_are_left_alone_without_notes():
    args = ReadInput.model_validate({"path": "a", "offset": 10, "limit": 20})
    assert (args.offset, args.limit) == (10, 20)
    assert args.notes == []


def test_absent_bounded_values_stay_none_without_notes():
    args = ReadInput.model_validate({"path": "a"})
    assert args.offset is None and args.limit is None
    assert args.notes == []


def test_notes_are_per_instance():
    first = ReadInput.model_validate({"path": "a", "limit": 0})
    second = ReadInput.model_validate({"path": "a"})
    assert first.notes and second.notes == []


def test_float_bounded_field_clamps_as_float():
    class Timed(ToolInput):
        timeout: Annotated[float | None, Bounded(default=30, maximum=600)] = None

    low = Timed.model_validate({"timeout": -1.5})
    assert low.timeout == 30.0 and isinstance(low.timeout, float)
    high = Timed.model_validate({"timeout": 1e9})
    assert high.timeout == 600.0
    assert len(high.notes) == 1


def test_clamping_through_parse_arguments():
    args = parse_arguments(ReadInput, '{"path": "a", "limit": 0, "offset": 0}')
    assert args.limit == DEFAULT_LIMIT and args.offset == 1
    assert len(args.notes) == 2


def test_unknown_arguments_are_ignored():
    args = parse_arguments(ReadInput, '{"path": "a", "bogus": 1}')
    assert args.path == "a"
    assert not hasattr(args, "bogus")


# --- parse_arguments errors -----------------------------------------------------------------


def test_broken_json_is_a_tool_error_with_the_expected_shape():
    with pytest.raises(ToolError) as info:
        parse_arguments(ReadInput, '{"path": ')
    message = str(info.value)
    assert "not valid JSON" in message
    assert '"path"' in message and '"required"' in message  # the schema it expected


@pytest.mark.parametrize("raw, kind", [("[1, 2]", "list"), ('"a.txt"', "str"), ("42", "int")])
def test_non_object_json_is_a_tool_error(raw, kind):
    with pytest.raises(ToolError) as info:
        parse_arguments(ReadInput, raw)
    message = str(info.value)
    assert "JSON object" in message
    assert kind in message


def test_missing_required_argument_is_named():
    with pytest.raises(ToolError) as info:
        parse_arguments(WriteInput, '{"path": "a.txt"}')
    message = str(info.value)
    assert "content" in message
    assert "required" in message.lower()


def test_wrong_type_says_what_was_expected():
    with pytest.raises(ToolError) as info:
        parse_arguments(ReadInput, '{"path": "a", "limit": "many"}')
    message = str(info.value)
    assert "limit" in message
    assert "integer" in message


def test_wrong_type_for_string_field():
    with pytest.raises(ToolError) as info:
        parse_arguments(ReadInput, '{"path": 3}')
    message = str(info.value)
    assert "path" in message and "string" in message


@pytest.mark.parametrize("raw", ["", "   ", "\n"])
def test_empty_arguments_mean_an_empty_object(raw):
    class NoArgs(ToolInput):
        pass

    assert isinstance(parse_arguments(NoArgs, raw), NoArgs)
    with pytest.raises(ToolError) as info:
        parse_arguments(ReadInput, raw)
    assert "path" in str(info.value) and "required" in str(info.value).lower()


def test_errors_are_not_pydantic_validation_errors():
    from pydantic import ValidationError

    with pytest.raises(ToolError) as info:
        parse_arguments(ReadInput, "{}")
    assert not isinstance(info.value, ValidationError)
    assert info.value.__cause__ is None
