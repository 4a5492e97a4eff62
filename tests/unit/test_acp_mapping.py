"""totem_acp's pure mappings: stop reasons, tool kinds and locations, prompt blocks, permission
answers, and the crash path's answers to the requests still open."""

from __future__ import annotations

import base64
import json
import os

import pytest
from acp import RequestError
from acp.schema import (
    AllowedOutcome,
    DeniedOutcome,
    EmbeddedResourceContentBlock,
    EnvVariable,
    HttpHeader,
    HttpMcpServer,
    ImageContentBlock,
    McpServerStdio,
    RequestPermissionResponse,
    ResourceContentBlock,
    SseMcpServer,
    TextContentBlock,
    TextResourceContents,
)

from tests.support.images import b64, png
from totem_acp import permission, tool_calls
from totem_acp.command import Pending
from totem_acp.mcp_servers import client_specs
from totem_acp.prompt import user_message
from totem_acp.session import stop_reason
from totem_engine.api import events as ev
from totem_engine.api.frontend import PermissionRequest
from totem_engine.tools.job import FORWARD
from totem_engine.turn.terms import TurnResult
from totem_engine.vocab.chat import finish_kind


def result(stop: str, reason: str | None = None) -> TurnResult:
    return TurnResult("ses_1", "trn_1", stop, "", "sim/m", reason)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("stop", "finish", "expected"),
    [
        ("finished", None, "end_turn"), ("finished", "length", "max_tokens"), ("finished", "refusal", "refusal"),
        ("step_limit", None, "max_turn_requests"), ("aborted", "length", "cancelled"), ("guard", None, "end_turn"),
    ],
)
def test_each_end_of_a_turn_has_its_stop_reason(stop, finish, expected):
    assert stop_reason(result(stop), finish, None) == expected


def test_an_error_is_a_json_rpc_error_with_its_message_class_and_hint():
    failure = ev.Error(session_id="ses_1", error_class="AuthenticationError", message="bad key", hint="totem auth set sim")
    with pytest.raises(RequestError) as raised:
        stop_reason(result("error", "bad key"), None, failure)
    assert raised.value.code == -32603 and str(raised.value) == "bad key"
    assert raised.value.data == {"errorClass": "AuthenticationError", "hint": "totem auth set sim"}


@pytest.mark.parametrize(
    ("reason", "kind"),
    [("length", "length"), ("max_tokens", "length"), ("MAX_TOKENS", "length"), ("content_filter", "refusal"),
     ("refusal", "refusal"), ("SAFETY", "refusal"), ("stop", None), ("end_turn", None), (None, None)],
)
def test_provider_stop_words_are_read_as_length_or_refusal(reason, kind):
    assert finish_kind(reason) == kind


@pytest.mark.parametrize(
    ("tool", "arguments", "kind"),
    [
        ("read", {"path": "a.py"}, "read"), ("grep", {"pattern": "x"}, "search"), ("glob", {"pattern": "*"}, "search"),
        ("edit", {"path": "a.py"}, "edit"), ("write", {"path": "a.py"}, "edit"), ("bash", {"command": "ls"}, "execute"),
        ("fetch", {"url": "http://x"}, "fetch"), ("todo", {"todos": []}, "think"), ("fs__read_file", {}, "other"),
        ("patch", {"patch": "--- a/a.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n"}, "delete"),
        ("patch", {"patch": "--- a/a.py\n+++ b/b.py\n"}, "move"),
        ("patch", {"patch": "--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x\n+y\n"}, "edit"),
    ],
)
def test_tool_kinds(tool, arguments, kind):
    assert tool_calls.tool_kind(tool, arguments) == kind


def test_locations_are_absolute_and_a_read_names_its_line(tmp_path):
    [read] = tool_calls.locations(tmp_path, "read", {"path": "src/a.py", "offset": 40})
    assert (read.path, read.line) == (str(tmp_path / "src" / "a.py"), 40)
    patched = tool_calls.locations(tmp_path, "patch", {"patch": "--- a/x.py\n+++ b/x.py\n--- a/y.py\n+++ b/y.py\n"})
    assert [loc.path for loc in patched] == [str(tmp_path / "x.py"), str(tmp_path / "y.py")]
    assert tool_calls.locations(tmp_path, "bash", {"command": "ls"}) == []


def test_prompt_blocks_become_the_users_message(tmp_path):
    root = tmp_path.resolve()
    shot = b64(png(640, 480))
    message = user_message([
        TextContentBlock(type="text", text="fix "),
        ResourceContentBlock(type="resource_link", uri=(root / "a.py").as_uri(), name="a.py"),
        TextContentBlock(type="text", text="this"),
        EmbeddedResourceContentBlock(type="resource", resource=TextResourceContents(uri=(root / "b.py").as_uri(), text="x = 1\n")),
        ResourceContentBlock(type="resource_link", uri="https://example.com/doc", name="doc"),
        ImageContentBlock(type="image", mime_type="image/png", data=shot),
    ], root)
    assert message.typed == "fix this"
    assert message.context == [
        '<context file="a.py"/>', '<context file="b.py">\nx = 1\n</context>', "[resource: https://example.com/doc (doc)]",
    ]
    assert message.text("fix this").endswith("</context>\n\n[resource: https://example.com/doc (doc)]\n\nfix this")
    # The image is attached to the message, as the language server's attachments are.
    [image] = message.images
    assert (image.mime_type, image.width, image.height, image.data) == ("image/png", 640, 480, shot)
    assert image.caption == "[image: image 1, 640x480 PNG, 1 KB]"


def test_an_image_the_engine_cannot_take_is_its_caption(tmp_path):
    bmp = base64.b64encode(b"BM" + b"\x00" * 64).decode()
    message = user_message([ImageContentBlock(type="image", mime_type="image/bmp", data=bmp, uri="file:///tmp/shot.bmp")], tmp_path)
    assert message.images == () and message.context == ["[image: attached image, BMP, 1 KB]"]


def test_permission_answers_map_one_to_one_and_cancelled_is_not_a_reject():
    request = PermissionRequest(
        session_id="s", call_id="c", tool="job", title="job: $ make serve", input={}, rule=None, permission="bash",
        always_pattern="make serve", paths=[], choices=(FORWARD,),
    )
    for outcome in ("allow_once", "allow_always", "reject_once", "reject_always"):
        answer = RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=outcome))
        assert permission.reply(answer, request).outcome == outcome
    # The job's forward is offered as one more allow once, and chosen by its id.
    offered = permission.options(request)
    assert [(o.option_id, o.kind) for o in offered[:2]] == [("allow_once", "allow_once"), ("forward_ports", "allow_once")]
    assert offered[1].name == FORWARD.label
    forward = permission.reply(RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id="forward_ports")), request)
    assert (forward.outcome, forward.choice) == ("allow_once", "forward_ports")
    unknown = permission.reply(RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id="yes")), request)
    assert unknown.outcome == "reject_once" and "not offered" in unknown.reason
    with pytest.raises(permission.Cancelled):
        permission.reply(RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled")), request)


def test_at_a_crash_every_open_request_is_answered_with_an_error():
    read, write = os.pipe()
    pending = Pending(write)
    pending.observe(True, {"jsonrpc": "2.0", "id": 1, "method": "initialize"})
    pending.observe(False, {"jsonrpc": "2.0", "id": 1, "result": {}})
    pending.observe(True, {"jsonrpc": "2.0", "id": 2, "method": "session/prompt"})
    pending.observe(True, {"jsonrpc": "2.0", "method": "session/cancel"})  # a notification waits for nothing
    pending.observe(False, {"jsonrpc": "2.0", "id": 0, "method": "session/request_permission"})  # ours, not the client's
    assert pending.fail_all("Totem crashed: boom") == 1
    os.close(write)
    lines = os.read(read, 65536).decode().splitlines()
    os.close(read)
    assert [json.loads(line) for line in lines] == [
        {"jsonrpc": "2.0", "id": 2, "error": {"code": -32603, "message": "Totem crashed: boom"}}
    ]


def test_the_clients_mcp_servers_become_specs_and_an_sse_one_is_left_out_with_a_notice():
    specs, left = client_specs([
        McpServerStdio(name="fs", command="npx", args=["-y", "server"], env=[EnvVariable(name="TZ", value="UTC")]),
        HttpMcpServer(type="http", name="docs", url="http://127.0.0.1:9/mcp", headers=[HttpHeader(name="X-Token", value="t")]),
        SseMcpServer(type="sse", name="old", url="http://127.0.0.1:9/sse", headers=[]),
    ])
    fs, docs = specs
    assert (fs.source, fs.transport, fs.target, fs.env) == ("client", "stdio", "npx -y server", (("TZ", "UTC"),))
    assert (docs.transport, docs.url, docs.headers) == ("http", "http://127.0.0.1:9/mcp", (("X-Token", "t"),))
    assert left == ["MCP server old was not started: Totem speaks stdio and streamable HTTP to MCP servers, not sse."]
