"""Requests at the doors, as far as they run in process: an ACP ``session/prompt``'s content
blocks (totem_acp/prompt.py) and the MCP server's tool arguments (the SDK validates them
against each tool's signature, totem_mcp_server/tools/). Any request is taken or refused with a
validation error; nothing else comes out."""

from __future__ import annotations

import base64
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError

from tests.fuzz.support import CHEAP, examples, json_values, no_hang
from totem_acp.prompt import Block, UserMessage, user_message
from totem_mcp_server.tools import TOOLS

ROOT = Path(tempfile.gettempdir()) / "totem-fuzz-project"
BLOCKS = TypeAdapter(list[Block])
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 24).decode()
data = st.one_of(st.just(PNG), st.binary(max_size=30).map(lambda b: base64.b64encode(b).decode()), st.text(max_size=10))
uris = st.one_of(st.sampled_from([f"file://{ROOT}/a.py", "file:///etc/passwd", f"file://{ROOT}/../x", "https://x/y",
                                  "file://%00", "file:///" + "a/" * 50]), st.text(max_size=15))
blocks = st.one_of(
    st.fixed_dictionaries({"type": st.just("text"), "text": st.text(max_size=30)}),
    st.fixed_dictionaries({"type": st.just("image"), "data": data, "mimeType": st.sampled_from(["image/png", "image/gif", "x"])},
                          optional={"uri": uris}),
    st.fixed_dictionaries({"type": st.just("audio"), "data": data, "mimeType": st.just("audio/wav")}),
    st.fixed_dictionaries({"type": st.just("resource_link"), "uri": uris, "name": st.text(max_size=6)}),
    st.fixed_dictionaries({"type": st.just("resource"), "resource": st.one_of(
        st.fixed_dictionaries({"uri": uris, "text": st.text(max_size=20)}),
        st.fixed_dictionaries({"uri": uris, "blob": data}),
    )}),
    st.dictionaries(st.sampled_from(["type", "text", "uri", "data"]), json_values, max_size=3),
)


@settings(max_examples=examples(CHEAP))
@given(st.lists(blocks, max_size=5))
def test_any_prompt_blocks_are_a_message_or_a_validation_error(value):
    try:
        parsed = BLOCKS.validate_python(value)
    except ValidationError:
        return
    with no_hang():
        message = user_message(parsed, ROOT)
    assert isinstance(message, UserMessage)
    assert all(isinstance(paragraph, str) for paragraph in message.context)


def _arguments_models() -> dict[str, Any]:
    """Each tool's argument model, as the SDK builds it from the tool's signature."""
    from mcp.server.mcpserver.utilities.func_metadata import func_metadata

    return {module.NAME: func_metadata(module.tool(None)).arg_model for module in TOOLS}


MODELS = _arguments_models()
ARGUMENT_NAMES = sorted({name for model in MODELS.values() for name in model.model_fields} | {"x"})


@given(st.sampled_from(sorted(MODELS)), st.dictionaries(st.sampled_from(ARGUMENT_NAMES), json_values, max_size=5))
def test_any_tool_arguments_are_taken_or_refused_by_the_schema(tool, arguments):
    try:
        MODELS[tool].model_validate(arguments)
    except ValidationError:
        pass
