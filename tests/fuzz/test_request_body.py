"""Request bodies (providers/http.py ``_json_bytes``) are what httpx's ``json=`` would send: the
same compact UTF-8 bytes for any body without floats (strings of any text included), and the same
values for any body (a float may be written another way: ``5.9e-8`` for Python's ``5.9e-08``)."""

from __future__ import annotations

import json

import httpx
from hypothesis import given
from hypothesis import strategies as st

from tests.fuzz.support import json_values
from totem_engine.providers.http import _json_bytes

no_floats = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(min_value=-(2**63), max_value=2**64 - 1),
              st.text()),
    lambda inner: st.one_of(st.lists(inner, max_size=5), st.dictionaries(st.text(max_size=8), inner, max_size=5)),
    max_leaves=30,
)
bodies = st.dictionaries(st.text(max_size=8), no_floats, max_size=6)  # a body is always an object


@given(bodies)
def test_the_body_is_what_httpx_json_would_send(body):
    assert _json_bytes(body) == httpx.Request("POST", "http://127.0.0.1/", json=body).content


@given(st.dictionaries(st.text(max_size=8), json_values, max_size=6))
def test_any_wire_value_encodes_as_json_that_reads_back(body):
    try:
        expected = httpx.Request("POST", "http://127.0.0.1/", json=body).content
    except ValueError:  # an infinity, which httpx refuses
        return
    assert json.loads(_json_bytes(body)) == json.loads(expected)
