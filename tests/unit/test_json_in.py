"""The engine's one decoder of outside JSON (totem_engine/json_in.py): the values of ``json``,
and a ``JsonRefused`` (a ValueError saying why) for what is too deep, too large or not JSON."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from totem_engine import json_in
from totem_engine.json_in import JsonRefused

values = st.recursive(
    st.one_of(
        st.none(), st.booleans(), st.integers(min_value=-(2**80), max_value=2**80),
        st.floats(allow_nan=False), st.text(max_size=30),
    ),
    lambda inner: st.one_of(st.lists(inner, max_size=5), st.dictionaries(st.text(max_size=8), inner, max_size=5)),
    max_leaves=30,
)


@settings(max_examples=300)
@given(values, st.booleans())
def test_gives_what_json_gives(value, ascii_only):
    text = json.dumps(value, ensure_ascii=ascii_only)
    assert json_in.loads(text) == json.loads(text)
    assert json_in.loads(text.encode("utf-8")) == json.loads(text)


@pytest.mark.parametrize("text", [
    "[" * 5000 + "]" * 5000,
    '{"a":' * 5000 + "1" + "}" * 5000,
    '[{"a":' * 2500 + "1" + "}]" * 2500,
    '["\\udcff",' + "[" * 5000 + "]" * 5000 + "]",  # the surrogate path bounds the nesting too
])
def test_a_value_nested_5000_deep_is_refused_with_the_reason(text):
    with pytest.raises(JsonRefused, match=f"the answer is nested deeper than {json_in.MAX_DEPTH} levels"):
        json_in.loads(text, what="the answer")


def test_nesting_up_to_the_limit_is_read():
    depth = json_in.MAX_DEPTH
    assert json_in.loads("[" * depth + "]" * depth) is not None


def test_a_text_over_the_size_is_refused_before_it_is_parsed():
    with pytest.raises(JsonRefused, match="is 12 bytes, over the 10 bytes"):
        json_in.loads('"0123456789"', max_bytes=10)
    assert json_in.loads('"01234567"', max_bytes=10) == "01234567"


def test_what_is_not_json_is_a_value_error_that_says_where():
    with pytest.raises(ValueError, match="the body is not JSON: .*line 1 column"):
        json_in.loads('{"a": ', what="the body")


def test_a_lone_surrogate_escape_is_kept_as_json_keeps_it():
    assert json_in.loads('{"t": "A\\udcffB"}') == {"t": "A\udcffB"}


def test_a_lone_surrogate_character_is_kept_and_its_text_still_bounded():
    # found by make fuzz: pydantic-core takes no str holding one (a TypeError, not a ValueError)
    assert json_in.loads('["A\udcffB"]') == ["A\udcffB"]
    with pytest.raises(JsonRefused, match="nested deeper"):
        json_in.loads("[" * 5000 + '"\udcff"' + "]" * 5000)
    with pytest.raises(JsonRefused, match="not JSON"):
        json_in.loads("```python\n\udcff")


def test_nan_and_big_integers_are_read_as_json_reads_them():
    assert json_in.loads("[Infinity, 123456789012345678901234567890]") == [float("inf"), 123456789012345678901234567890]
    assert json_in.loads('{"a": 1, "a": 2}') == {"a": 2}
