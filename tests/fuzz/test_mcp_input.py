"""What an MCP server sends, as the engine reads it: any message line is a message or a
validation error (mcp/stdio.py reads each line so), and any tool result the SDK accepts reads as
text for the model (mcp/results.py ``read_result``), never another exception."""

from __future__ import annotations

import base64
import json

import mcp.types as mcp_types
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from tests.fuzz.support import deep, json_values, no_hang
from totem_engine.mcp.results import ReadResult, read_result

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 24).decode()
b64 = st.one_of(st.just(PNG), st.binary(max_size=40).map(lambda b: base64.b64encode(b).decode()), st.text(max_size=12))
mimes = st.sampled_from(["image/png", "image/jpeg", "audio/wav", "text/plain", "application/octet-stream", ""])
uris = st.one_of(st.sampled_from(["file:///tmp/a.py", "https://example.com/x", "mem://a"]), st.text(max_size=12))
block_texts = st.one_of(st.text(max_size=40), json_values.map(json.dumps), st.integers(150, 3000).map(deep))

blocks = st.one_of(
    st.fixed_dictionaries({"type": st.just("text"), "text": block_texts}),
    st.fixed_dictionaries({"type": st.just("image"), "data": b64, "mimeType": mimes}),
    st.fixed_dictionaries({"type": st.just("audio"), "data": b64, "mimeType": mimes}),
    st.fixed_dictionaries({"type": st.just("resource_link"), "uri": uris, "name": st.text(max_size=8)}),
    st.fixed_dictionaries({"type": st.just("resource"), "resource": st.one_of(
        st.fixed_dictionaries({"uri": uris, "text": st.text(max_size=20)}),
        st.fixed_dictionaries({"uri": uris, "blob": b64}, optional={"mimeType": mimes}),
    )}),
    st.dictionaries(st.sampled_from(["type", "text", "data", "uri"]), json_values, max_size=4),
)
results = st.fixed_dictionaries(
    {"content": st.lists(blocks, max_size=5)},
    optional={"isError": st.booleans(), "structuredContent": st.dictionaries(st.text(max_size=6), json_values, max_size=4)},
)


@given(results)
def test_any_tool_result_reads_as_text_for_the_model(value):
    try:
        result = mcp_types.CallToolResult.model_validate(value)
    except ValidationError:
        return
    with no_hang():
        read = read_result(result, "srv__tool result")
    assert isinstance(read, ReadResult) and isinstance(read.text, str)
    assert read.text or read.images  # an empty result still says "(no output)"
    assert read.is_error == bool(value.get("isError", False))


messages = st.one_of(
    st.text(max_size=80),
    json_values.map(json.dumps),
    st.integers(150, 6000).map(deep),
    st.fixed_dictionaries(
        {"jsonrpc": st.sampled_from(["2.0", "1.0"])},
        optional={"id": st.one_of(st.integers(), st.text(max_size=5), st.none()), "method": st.text(max_size=12),
                  "params": json_values, "result": st.one_of(json_values, results), "error": json_values},
    ).map(json.dumps),
)


@given(messages)
def test_any_server_line_is_a_message_or_a_validation_error(line):
    with no_hang():
        try:
            mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        except ValidationError:
            pass
