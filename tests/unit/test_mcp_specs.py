"""MCP servers as mcp.json declares them (totem_engine/mcp/specs.py), their tools' names
(naming.py), and a result as the model reads it (results.py, images.py)."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path

import mcp_types
import pytest

from tests.support.mcp_standin import png
from totem_engine.config_error import ConfigError
from totem_engine.images import caption, image_size
from totem_engine.mcp.naming import VALID, join_tools, joined_name, sanitized
from totem_engine.mcp.results import read_result
from totem_engine.mcp.specs import (
    is_loopback,
    load_specs,
    project_mcp_path,
    user_mcp_path,
)


def write(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data) if not isinstance(data, str) else data)


def test_the_projects_entry_wins_by_name_and_each_file_keeps_its_own(tmp_path):
    write(user_mcp_path(), {"servers": {
        "fs": {"command": "node", "args": ["fs.js", "/home"]},
        "time": {"command": "mcp-server-time", "env": {"TZ": "UTC"}},
    }})
    write(project_mcp_path(tmp_path), {"servers": {
        "fs": {"command": "node", "args": ["fs.js", "."], "enabled": False},
        "docs": {"url": "http://127.0.0.1:8931/mcp", "headers": {"X-Token": "t"}},
    }})
    specs = load_specs(tmp_path)
    assert sorted(specs) == ["docs", "fs", "time"]
    assert (specs["fs"].source, specs["fs"].args, specs["fs"].enabled) == ("project", ("fs.js", "."), False)
    assert specs["time"].source == "user" and dict(specs["time"].env) == {"TZ": "UTC"}
    assert specs["docs"].transport == "http" and dict(specs["docs"].headers) == {"X-Token": "t"}
    assert specs["fs"].target == "node fs.js ." and specs["docs"].target == "http://127.0.0.1:8931/mcp"


def test_a_command_line_with_spaces_is_shown_quoted_as_a_shell_would_run_it(tmp_path):
    write(project_mcp_path(tmp_path), {"servers": {"s": {"command": "/opt/my tools/srv", "args": ["--dir", "a b"]}}})
    assert load_specs(tmp_path)["s"].target == "'/opt/my tools/srv' --dir 'a b'"


@pytest.mark.parametrize(("entry", "says"), [
    ({"command": "x", "url": "http://127.0.0.1/mcp"}, 'either "command"'),
    ({}, 'either "command"'),
    ({"url": "http://127.0.0.1/mcp", "args": ["a"]}, '"args" and "env" belong to a stdio server'),
    ({"command": "x", "headers": {"A": "b"}}, '"headers" belong to a streamable HTTP server'),
    ({"url": "ftp://host/mcp"}, "http:// or https://"),
    ({"command": "x", "enabled": "no"}, "enabled"),
    ({"command": "x", "cmd": "y"}, "cmd"),
])
def test_a_wrong_entry_is_a_config_error_naming_the_file_and_the_problem(tmp_path, entry, says):
    write(project_mcp_path(tmp_path), {"servers": {"bad": entry}})
    with pytest.raises(ConfigError) as caught:
        load_specs(tmp_path)
    assert str(project_mcp_path(tmp_path)) in str(caught.value) and says in str(caught.value)


def test_a_file_that_is_not_json_says_where(tmp_path):
    write(user_mcp_path(), '{"servers": {')
    with pytest.raises(ConfigError, match="invalid JSON"):
        load_specs(tmp_path)


def test_no_file_no_server(tmp_path):
    assert load_specs(tmp_path) == {}


@pytest.mark.parametrize(("url", "remote"), [
    ("http://127.0.0.1:9/mcp", False), ("http://localhost/mcp", False), ("http://[::1]:80/mcp", False),
    ("http://127.8.9.10/mcp", False), ("https://forge.totaljs.es/mcp/", True), ("http://10.0.0.2/mcp", True),
])
def test_a_url_server_is_remote_unless_its_host_is_this_machine(tmp_path, url, remote):
    write(project_mcp_path(tmp_path), {"servers": {"s": {"url": url}}})
    assert load_specs(tmp_path)["s"].remote is remote
    assert is_loopback("LOCALHOST") and not is_loopback("example.com")


def test_joined_names_are_kept_to_what_every_provider_accepts():
    assert joined_name("fs", "read_text_file") == "fs__read_text_file"
    assert joined_name("my.server", "get weather/now") == "my_server__get_weather_now"
    long = joined_name("s" * 40, "t" * 40)
    assert len(long) == 64 and VALID.match(long)
    assert sanitized("") == "_" and VALID.match(joined_name("ünï", "çødé"))


def test_two_tools_that_come_out_with_one_name_are_a_clash_naming_both():
    joined, clashes = join_tools([("a.b", ["get"]), ("a_b", ["get", "put"]), ("c", ["x.y", "x_y"])])
    assert joined == {"a_b__get": ("a.b", "get"), "a_b__put": ("a_b", "put"), "c__x_y": ("c", "x.y")}
    assert [(c.name, c.first, c.second) for c in clashes] == [("a_b__get", "a.b/get", "a_b/get"), ("c__x_y", "c/x.y", "c/x_y")]
    assert "a.b/get and a_b/get" in str(clashes[0])


def test_a_taken_name_is_never_given_to_a_server_tool():
    joined, clashes = join_tools([("s", ["t"])], taken=["s__t"])
    assert joined == {} and clashes[0].first == "s__t"


def test_text_goes_to_the_model_and_structured_content_only_when_the_text_does_not_carry_it():
    said = mcp_types.CallToolResult(
        content=[mcp_types.TextContent(type="text", text='{"a": 1}')], structured_content={"a": 1},
    )
    assert read_result(said, "x").text == '{"a": 1}'
    wrapped = mcp_types.CallToolResult(
        content=[mcp_types.TextContent(type="text", text="line one\nline two")], structured_content={"content": "line one\nline two"},
    )
    assert read_result(wrapped, "x").text == "line one\nline two"
    extra = mcp_types.CallToolResult(
        content=[mcp_types.TextContent(type="text", text="Found 2.")], structured_content={"items": ["p", "q"]},
    )
    assert read_result(extra, "x").text == 'Found 2.\n{"items":["p","q"]}'
    # Data alone (a 2026-07-28 server need not repeat it as text) is its compact JSON.
    only = mcp_types.CallToolResult(content=[], structured_content={"n": 3, "name": "Zoë", "tags": ["a", "b"]})
    assert read_result(only, "x").text == '{"n":3,"name":"Zoë","tags":["a","b"]}'
    assert json.loads(read_result(only, "x").text) == {"n": 3, "name": "Zoë", "tags": ["a", "b"]}


def test_an_error_result_is_an_error_and_links_and_images_are_text():
    data = base64.b64encode(png(640, 480)).decode()
    result = mcp_types.CallToolResult(
        content=[
            mcp_types.TextContent(type="text", text="Failed halfway."),
            mcp_types.ResourceLink(type="resource_link", uri="file:///srv/log.txt", name="log.txt"),
            mcp_types.ImageContent(type="image", data=data, mime_type="image/png"),
        ],
        is_error=True,
    )
    read = read_result(result, "s__shot result")
    size = round(len(png(640, 480)) / 1024) or 1
    assert read.is_error and [i.caption for i in read.images] == [f"[image: s__shot result, 640x480 PNG, {size} KB]"]
    assert base64.b64decode(read.images[0].data) == png(640, 480)
    # The caption follows the text in every request (history.py), the image itself once.
    assert read.text == "Failed halfway.\n[resource link: file:///srv/log.txt (log.txt)]"


def test_a_resource_link_is_one_line_with_its_uri_name_type_and_description():
    link = mcp_types.ResourceLink(
        type="resource_link", uri="file:///srv/notes.md", name="notes.md", title="Meeting notes", mime_type="text/markdown",
        description="What was said\non Monday.",
    )
    bare = mcp_types.ResourceLink(type="resource_link", uri="https://example.org/a", name="https://example.org/a")
    read = read_result(mcp_types.CallToolResult(content=[link, bare]), "x")
    assert read.text.splitlines() == [
        "[resource link: file:///srv/notes.md (Meeting notes, text/markdown): What was said on Monday.]",
        "[resource link: https://example.org/a]",
    ]


def test_an_image_that_cannot_be_sent_is_its_caption():
    svg = base64.b64encode(b"<svg xmlns='http://www.w3.org/2000/svg'/>").decode()
    result = mcp_types.CallToolResult(content=[mcp_types.ImageContent(type="image", data=svg, mime_type="image/svg+xml")])
    read = read_result(result, "d__draw result")
    assert read.images == () and read.text == "[image: d__draw result, SVG+XML, 1 KB]"


def test_image_sizes_from_their_headers():
    assert image_size(png(3, 7)) == (3, 7)
    gif = b"GIF89a" + (320).to_bytes(2, "little") + (200).to_bytes(2, "little") + b"\x00" * 8
    assert image_size(gif) == (320, 200)
    jpeg = b"\xff\xd8\xff\xe0\x00\x04ab\xff\xc0\x00\x11\x08" + (240).to_bytes(2, "big") + (320).to_bytes(2, "big") + b"\x03" + b"\x00" * 12
    assert image_size(jpeg) == (320, 240)
    assert image_size(b"not an image") is None
    assert caption("x", "image/jpeg", b"not an image") == "[image: x, JPEG, 1 KB]"


def test_the_mcp_package_is_not_imported_until_a_server_starts(tmp_path):
    """The SDK's client imports cost more than a second here; a run with no server pays nothing."""
    code = (
        "import sys, anyio; from pathlib import Path; from totem_engine.config import Config;"
        "from totem_engine.runtime import Runtime; from totem_engine.mcp.servers import McpServers;"
        f"s = McpServers(Path({str(tmp_path)!r}), Config(), trusted=True); s.tools(set()); anyio.run(s.aclose);"
        "print(sorted(m for m in sys.modules if m == 'mcp' or m.startswith(('mcp.', 'mcp_types'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
