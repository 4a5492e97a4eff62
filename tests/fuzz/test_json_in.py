"""The engine's one decoder of outside JSON (totem_engine/json_in.py) under any text: a value, or
a ``JsonRefused`` that says why; never another exception, whatever the nesting."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.fuzz.support import CHEAP, deep, examples, json_values, no_hang
from totem_engine import json_in
from totem_engine.json_in import JsonRefused

texts = st.one_of(
    st.text(max_size=80),
    json_values.map(json.dumps),
    st.integers(min_value=150, max_value=6000).map(deep),
    st.lists(st.sampled_from(["[", "]", "{", "}", '"a":', ",", "1", '"\\udcff"', "null", " "]), max_size=60).map("".join),
)


@settings(max_examples=examples(CHEAP))
@given(texts)
def test_any_text_is_a_value_or_refused_with_a_reason(text):
    with no_hang():
        try:
            json_in.loads(text)
        except JsonRefused as refused:
            assert str(refused).startswith("the JSON is ")


@given(json_values)
def test_what_json_writes_it_reads_back(value):
    assert json_in.loads(json.dumps(value)) == value
