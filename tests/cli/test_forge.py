"""Forge in a Total.js project through the real ``totem run`` (issue 24 "Forge for Total.js
projects"): the built-in ``forge`` server pointed by ``forge_url`` to a loopback stand-in of ours
(tests/support/forge_standin.py; these machines reach no outside address, and no test tries).
What the stand-in is asked, what reaches the model's first request, and what turns it off."""

from __future__ import annotations

import socket

import pytest

from tests.support.forge_standin import PAGES, ForgeStandin
from tests.support.model_server import text_reply, tool_reply
from tests.support.real_mcp import standin, write_mcp_json
from tests.support.reminder import sent_messages

RECIPE = "https://forge.totaljs.es/docs/jcomponent/recipes/component/"
SETTER = "https://forge.totaljs.es/docs/jcomponent/api/setter/"
MAKE = "https://forge.totaljs.es/docs/jcomponent/api/make/"


@pytest.fixture
def forge(tmp_path):
    server = ForgeStandin(tmp_path)
    yield server
    server.close()


def use_forge(totem, url: str, *, allow: bool = True, extra: str = "") -> None:
    """The test config with Forge on at ``url``; ``allow``: its start allowed by ``mcp_allow``
    (the run has no terminal, and ``--yes`` does not answer it)."""
    allowed = f'mcp_allow = ["{url}"]\n' if allow else ""
    totem.config.write_text(totem.config.read_text().replace("forge = false\n", f'forge_url = "{url}"\n{allowed}{extra}'))


def first_user_text(request: dict) -> str:
    return next(m["content"] for m in sent_messages(request) if m["role"] == "user")


def offered(request: dict) -> list[str]:
    return sorted(t["function"]["name"] for t in request.get("tools", []))


def test_a_component_request_searches_the_recipe_and_its_two_best_pages_reach_the_first_request(totem, forge):
    use_forge(totem, forge.url)
    totem.server.enqueue(text_reply("COMPONENT('counter', ...) as the recipe shows."))
    result = totem.agent("Hola, por favor quiero que me hagas un componente jComponent para un contador", extra=("--yes",))

    assert result.code == 0, result.stderr
    (search,) = forge.calls("Forge_search")
    query = search["arguments"]
    # The query itself: the filler of both languages gone, the topic in English, the product as
    # the filter (not in the words), and the recipe that writes a component asked for.
    assert query["query"] == "recipe component counter"
    assert query["product"] == "jcomponent" and query["kind"] == "recipe"
    # The stand-in's two best (by score, the recipe raised by the kind): opened, and beside the request.
    assert sorted(c["arguments"]["url"] for c in forge.calls("Forge_page")) == sorted([RECIPE, SETTER])
    first = totem.server.requests[0]
    text = first_user_text(first)
    assert PAGES[RECIPE][1].strip() in text and PAGES[SETTER][1].strip() in text
    assert text.rstrip().endswith("quiero que me hagas un componente jComponent para un contador")
    # The others are listed for the page tool, not opened.
    assert f"jComponent: self.make: {MAKE}" in text and "forge__Forge_page" in text
    assert PAGES[MAKE][1].strip() not in text
    # The system prompt (the stable start) does not carry them.
    system = first["messages"][0]
    assert system["role"] == "system" and "self.find('span')" not in system["content"]
    # Only the whitelist of Forge's tools is offered.
    assert [n for n in offered(first) if n.startswith("forge__")] == [
        "forge__Forge_page", "forge__Forge_search", "forge__Forge_source", "forge__Forge_verify_api",
    ]
    # The conversation shows which pages were used.
    (event,) = result.of("forge")
    assert [p["url"] for p in event["pages"]] == [RECIPE, SETTER]
    assert event["pages"][0]["title"] == "Recipe: writing a jComponent"
    assert event["query"] == "recipe component counter" and event["product"] == "jcomponent"
    assert MAKE in [p["url"] for p in event["others"]]
    kinds = result.kinds()
    assert kinds.index("forge") < kinds.index("context")  # before the first step
    # The start was asked as every server's and says where the searches go.
    start = next(e for e in result.of("toolStart") if e["tool"] == "mcp-start")
    assert start["input"] == {"server": "forge", "url": forge.url}
    assert "Forge" in start["title"] and "outside this machine" in start["title"] and "every project" in start["title"]


def test_a_total_js_question_in_english_is_searched_in_total_js_5_and_printed_without_json(totem, forge):
    use_forge(totem, forge.url, extra="forge_pages = 1\nforge_chars = 200\n")
    totem.server.enqueue(text_reply("Use ROUTE."))
    result = totem.run("run", "--cwd", str(totem.project), "--config", str(totem.config), "Could you please show me how I add a route that returns the users?")

    assert result.code == 0, result.stderr
    (search,) = forge.calls("Forge_search")
    assert search["arguments"]["query"] == "route returns users" and search["arguments"]["product"] == "totaljs5"
    assert search["arguments"]["kind"] == "any"  # not a component to make
    (page,) = forge.calls("Forge_page")
    assert page["arguments"]["url"] == "https://forge.totaljs.es/docs/total5/routing/"
    assert "Forge: Total.js 5: routing (https://forge.totaljs.es/docs/total5/routing/); 3 more listed" in result.stderr
    assert "ROUTE('GET /api/users/" in first_user_text(totem.server.requests[0])


def test_a_greeting_and_a_slash_command_are_not_searched(totem, forge):
    use_forge(totem, forge.url)
    commands = totem.project / ".totem" / "commands"
    commands.mkdir(parents=True)
    (commands / "review.md").write_text("---\ndescription: Review\n---\nReview the jComponent component $ARGUMENTS carefully.\n")
    totem.server.enqueue(text_reply("¡Hola!"))
    result = totem.agent("hola", extra=("--yes",))
    assert result.code == 0, result.stderr
    totem.server.enqueue(text_reply("Reviewed."))
    command = totem.agent("/review counter form", extra=("--yes",))
    assert command.code == 0, command.stderr

    assert forge.calls("Forge_search") == []
    assert result.of("forge") == [] and command.of("forge") == []
    # Forge itself ran: its tools were offered, only the search in front of the prompt was skipped.
    assert "forge__Forge_search" in offered(totem.server.requests[0])


def test_forge_false_turns_it_all_off(totem, forge):
    use_forge(totem, forge.url, extra="forge = false\n")
    totem.server.enqueue(text_reply("Done."))
    result = totem.agent("quiero hacer un componente jcomponent", extra=("--yes",))

    assert result.code == 0, result.stderr
    assert forge.calls() == []
    assert not any(e["tool"] == "mcp-start" for e in result.of("toolStart"))
    assert result.of("forge") == [] and not any(n.startswith("forge__") for n in offered(totem.server.requests[0]))


def test_a_project_server_named_forge_replaces_the_built_in_one(totem, forge):
    use_forge(totem, forge.url)
    write_mcp_json(totem.project / ".totem" / "mcp.json", {"forge": standin()})
    trust = totem.run("trust", str(totem.project))
    assert trust.code == 0, trust.stderr
    totem.server.enqueue(tool_reply([("forge__echo", {"text": "hi"})]))
    totem.server.enqueue(text_reply("Echoed."))
    result = totem.agent("quiero hacer un componente jcomponent", extra=("--yes",))

    assert result.code == 0, result.stderr
    (start,) = [e for e in result.of("toolStart") if e["tool"] == "mcp-start"]
    assert "command" in start["input"] and "url" not in start["input"]
    assert "forge__echo" in offered(totem.server.requests[0])
    assert not any(n.startswith("forge__Forge_") for n in offered(totem.server.requests[0]))
    assert forge.calls() == [] and result.of("forge") == []


def test_yes_alone_does_not_start_forge(totem, forge):
    use_forge(totem, forge.url, allow=False)
    totem.server.enqueue(text_reply("Without Forge."))
    result = totem.agent("quiero hacer un componente jcomponent", extra=("--yes",))

    assert result.code == 0, result.stderr
    (end,) = [e for e in result.of("toolEnd") if e["tool"] == "mcp-start"]
    assert end["status"] == "denied" and "outside this machine" in end["output"] and "mcp_allow" in end["output"]
    assert forge.calls() == [] and result.of("forge") == []
    assert not any(n.startswith("forge__") for n in offered(totem.server.requests[0]))


def test_an_unreachable_forge_fails_its_start_with_one_notice_and_the_run_goes_on(totem):
    # A loopback port that accepts connections and never answers: the start timeout ends it.
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    url = f"http://127.0.0.1:{silent.getsockname()[1]}/mcp/"
    try:
        use_forge(totem, url, extra="mcp_start_timeout = 2\n")
        totem.server.enqueue(text_reply("Without Forge."))
        result = totem.agent("quiero hacer un componente jcomponent", extra=("--yes",))
    finally:
        silent.close()

    assert result.code == 0, result.stderr
    warnings = [e["message"] for e in result.of("notice") if "forge" in e["message"].lower()]
    assert len(warnings) == 1 and warnings[0].startswith("MCP server forge did not start"), warnings
    assert result.of("forge") == [] and result.of("turnEnd")[0]["stopReason"] == "finished"


def test_with_forge_pages_0_the_results_are_only_listed(totem, forge):
    use_forge(totem, forge.url, extra="forge_pages = 0\n")
    totem.server.enqueue(text_reply("Use ROUTE."))
    result = totem.run("run", "--cwd", str(totem.project), "--config", str(totem.config), "how do I add a route for the users?")

    assert result.code == 0, result.stderr
    assert forge.calls("Forge_page") == []
    text = first_user_text(totem.server.requests[0])
    assert "forge__Forge_page opens" in text and "- Total.js 5: routing: https://forge.totaljs.es/docs/total5/routing/" in text
    assert "ROUTE('GET" not in text
    assert "Forge ('route users'): 4 results listed, no page opened" in result.stderr
