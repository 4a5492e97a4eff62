"""Totem's MCP client against servers of either protocol era, through the real ``totem run``
(issue 35): the ``mcp`` package's own server speaking only the 2026-07-28 revision
(``server/discover``, no ``initialize``) and only the ``initialize`` handshake, each asking the
user during a call (an ``input_required`` result; an ``elicitation/create`` request), and
results that are structured content alone or carry a resource link."""

from __future__ import annotations

import json
import os
import subprocess

from tests.support.model_server import text_reply, tool_reply
from tests.support.processes import none_left
from tests.support.real_mcp import HttpServer, sdk_server, write_mcp_json


def both_eras(totem) -> None:
    write_mcp_json(totem.home / "config" / "totem" / "mcp.json", {"new": sdk_server("modern"), "old": sdk_server("legacy")})


def tool_results(request: dict) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


def test_a_server_of_each_era_starts_and_its_structured_content_and_links_reach_the_model_compactly(totem):
    both_eras(totem)
    totem.server.enqueue(tool_reply([("new__measure", {"word": "totem"})]))
    totem.server.enqueue(tool_reply([("old__find", {"word": "forge"})]))
    totem.server.enqueue(tool_reply([("new__find", {"word": "totem"})]))
    totem.server.enqueue(text_reply("Five letters, and two pages."))
    result = totem.agent("measure and find", extra=("--yes",))

    assert result.code == 0, result.stderr
    first, second, third, fourth = totem.server.requests
    # Both servers started (the 2026-only one answers server/discover and refuses initialize;
    # the handshake-only one refuses server/discover), and both offer their tools.
    starts = {e["callId"]: e["input"]["server"] for e in result.of("toolStart") if e["tool"] == "mcp-start"}
    ends = {starts[e["callId"]]: e for e in result.of("toolEnd") if e["callId"] in starts}
    assert {name: (e["status"], e["summary"]) for name, e in ends.items()} == {
        "new": ("ok", "started, 4 tools"), "old": ("ok", "started, 4 tools"),
    }
    assert "(painter, protocol 2026-07-28)" in ends["new"]["output"] and "(painter, protocol 2025-11-25)" in ends["old"]["output"]
    names = {t["function"]["name"] for t in first["tools"]}
    assert {"new__paint", "new__measure", "new__find", "old__paint", "old__measure", "old__find"} <= names
    # Data alone (no text block) is its compact JSON; a resource link is one line after the text.
    assert tool_results(second)[-1] == '{"word":"totem","letters":5,"vowels":2}'
    assert tool_results(third)[-1] == "One page about forge.\n[resource link: file:///dictionary/forge.md (forge.md, text/markdown)]"
    assert tool_results(fourth)[-1] == "One page about totem.\n[resource link: file:///dictionary/totem.md (totem.md, text/markdown)]"
    assert none_left(totem.project) == []


def test_a_servers_question_with_nobody_to_answer_reaches_it_as_a_decline_in_both_eras(totem):
    both_eras(totem)
    totem.server.enqueue(tool_reply([("new__paint", {})]))
    totem.server.enqueue(tool_reply([("old__paint", {})]))
    totem.server.enqueue(text_reply("Nobody chose a colour."))
    result = totem.agent("paint the button", extra=("--yes",))  # no terminal: nobody to ask

    assert result.code == 0, result.stderr
    _, second, third = totem.server.requests
    # The 2026 server's input_required and the old one's elicitation/create both got a decline,
    # and the call ended normally with what the server made of it.
    assert tool_results(second)[-1] == "not painted: decline"
    assert tool_results(third)[-1] == "not painted: decline"
    ends = [e for e in result.of("toolEnd") if e["tool"] in ("new__paint", "old__paint")]
    assert [(e["tool"], e["status"]) for e in ends] == [("new__paint", "ok"), ("old__paint", "ok")]
    assert none_left(totem.project) == []


def test_a_servers_questions_are_asked_at_the_terminal_and_the_answers_reach_it_in_both_eras(totem):
    both_eras(totem)
    totem.server.enqueue(tool_reply([("new__paint", {})]))
    totem.server.enqueue(tool_reply([("old__pick", {})]))
    totem.server.enqueue(tool_reply([("new__pick", {})]))
    totem.server.enqueue(text_reply("Teal, and two orders."))
    # A terminal on stdin (a pty), with the user's answers typed ahead: the colour, then for each
    # order the size (by its number among the choices, or its name) and whether to hurry.
    primary, secondary = os.openpty()
    os.write(primary, b"teal\n2\nyes\nLarge\nno\n")
    command = totem.command("run", "--cwd", str(totem.project), "--config", str(totem.config), "--json", "--yes", "paint and order")
    try:
        proc = subprocess.run(command, stdin=secondary, capture_output=True, text=True, env=totem.env, timeout=120, check=False)
    finally:
        os.close(secondary)
        os.close(primary)

    assert proc.returncode == 0, proc.stderr
    _, second, third, fourth = totem.server.requests
    assert tool_results(second)[-1] == "painted teal"  # the 2026 server's input_required, answered
    assert tool_results(third)[-1] == "ordered medium, hurry=True"  # the old one's elicitation/create
    assert tool_results(fourth)[-1] == "ordered large, hurry=False"
    # Each question said which server asks and what, its choices listed.
    asked = proc.stderr
    assert "MCP server new asks: Which colour should the button be?\nColour: The button's colour\n> " in asked
    assert "MCP server old asks: How should the order go?\nSize: The size\n  1. small\n  2. medium\n  3. large\n> " in asked
    assert "Hurry: Whether to hurry\n  1. yes\n  2. no\n> " in asked
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    ends = {e["tool"]: e["status"] for e in events if e["kind"] == "toolEnd"}
    assert ends["new__paint"] == ends["old__pick"] == ends["new__pick"] == "ok"
    assert none_left(totem.project) == []


def test_an_http_server_of_either_era_starts_and_answers_with_its_header(totem):
    both = HttpServer()  # the SDK's server: answers server/discover, so 2026-07-28
    old = HttpServer(handshake_only=True)  # refuses the probe with HTTP 400, as a 2025 server does
    try:
        write_mcp_json(totem.home / "config" / "totem" / "mcp.json", {"both": both.entry(), "old": old.entry()})
        totem.server.enqueue(tool_reply([("both__lookup", {"word": "totem"})]))
        totem.server.enqueue(tool_reply([("old__lookup", {"word": "forge"})]))
        totem.server.enqueue(text_reply("Two words."))
        result = totem.agent("look both up", extra=("--yes",))
    finally:
        both.close()
        old.close()

    assert result.code == 0, result.stderr
    starts = {e["callId"]: e["input"]["server"] for e in result.of("toolStart") if e["tool"] == "mcp-start"}
    said = {starts[e["callId"]]: e["output"] for e in result.of("toolEnd") if e["callId"] in starts}
    assert said == {
        "both": "MCP server both (dictionary, protocol 2026-07-28) started, 2 tools, 1 prompts.",
        "old": "MCP server old (dictionary, protocol 2025-11-25) started, 2 tools, 1 prompts.",
    }
    _, second, third = totem.server.requests
    assert "A carved pole that tells a story." in tool_results(second)[-1]
    assert "A workshop where metal is shaped." in tool_results(third)[-1]
