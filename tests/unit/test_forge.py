"""Forge's parts that need no server: the prompt shaped as a search (forge/query.py), the tools'
arguments from their schemas (forge/arguments.py), their answers read (forge/hits.py), the
built-in server's spec (mcp/forge.py) and its start's "always" for every project (start.py)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tests.support.turns import RecordingFrontEnd
from totem_engine.api import events as ev
from totem_engine.config import Config
from totem_engine.forge.arguments import page_arguments, search_arguments
from totem_engine.forge.hits import cut, page_text, read_hits
from totem_engine.forge.query import ForgeQuery, shape
from totem_engine.mcp.answers import stored_answer
from totem_engine.mcp.forge import TOOLS, builtin_specs, forge_spec
from totem_engine.mcp.start import ask_start
from totem_engine.permissions import Policy


@pytest.mark.parametrize(("prompt", "query", "product", "recipe"), [
    ("quiero hacer un componente jcomponent", "recipe component", "jcomponent", True),
    ("Please, could you create a new jComponent component that shows a counter?", "recipe component counter", "jcomponent", True),
    ("¿Cómo creo una ruta en Total.js que devuelva un esquema?", "route return schema", "total5", False),
    ("Necesito validar el formulario de usuarios", "validate form users", "jcomponent", False),
    ("how do I send an email with attachments", "send email attachments", "total5", False),
    ("explain the component's setter", "component setter", "jcomponent", False),  # no making verb: no recipe
    ("create a component for the server route", "component server route", "total5", False),  # not a jComponent
])
def test_a_prompt_becomes_its_topic_in_english_with_the_product_and_the_recipe(prompt, query, product, recipe):
    shaped = shape(prompt)
    assert shaped is not None
    assert (shaped.text, shaped.product, shaped.recipe) == (query, product, recipe)


@pytest.mark.parametrize("prompt", ["hola", "Hola, ¿qué tal?", "thanks!", "ok", "/review counter form", "  /init", "jComponent"])
def test_a_greeting_a_thank_you_and_a_slash_command_are_not_searched(prompt):
    assert shape(prompt) is None


def test_a_long_prompt_keeps_its_first_topic_words():
    shaped = shape(" ".join(f"word{n}x" for n in range(30)))
    assert shaped is not None and len(shaped.terms) == 12 and shaped.terms[0] == "word0x"


SEARCH_SCHEMA = {
    "type": "object", "required": ["query"],
    "properties": {
        "query": {"type": "string"},
        "product": {"anyOf": [{"enum": ["totaljs5", "jcomponent", "flow"], "type": "string"}, {"type": "null"}]},
        "kind": {"enum": ["any", "guide", "recipe"], "type": "string"},
        "limit": {"type": "integer", "maximum": 5},
    },
}


def test_the_search_arguments_follow_the_tools_schema():
    recipe = ForgeQuery(terms=("component", "counter"), product="jcomponent", recipe=True)
    assert search_arguments(SEARCH_SCHEMA, recipe) == {"product": "jcomponent", "query": "recipe component counter", "kind": "recipe", "limit": 5}
    plain = ForgeQuery(terms=("route",), product="total5")
    assert search_arguments(SEARCH_SCHEMA, plain) == {"product": "totaljs5", "query": "route", "limit": 5}
    # No product filter in the schema: the product's name goes into the query instead.
    bare = {"properties": {"q": {"type": "string"}}}
    assert search_arguments(bare, plain) == {"q": "route Total.js 5"}
    listed = {"properties": {"text": {"type": "string"}, "products": {"type": "array", "items": {"enum": ["jComponent", "Total.js"]}}}}
    assert search_arguments(listed, recipe) == {"products": ["jComponent"], "text": "recipe component counter"}


def test_the_page_arguments_name_the_result_as_the_page_tool_asks():
    hit = {"title": "Routing", "url": "https://forge/r/", "id": 42}
    assert page_arguments({"properties": {"url": {"type": "string"}}}, hit, "https://forge/r/") == {"url": "https://forge/r/"}
    assert page_arguments({"properties": {"id": {"type": "integer"}}}, hit, "https://forge/r/") == {"id": 42}
    assert page_arguments({"required": ["address"], "properties": {"address": {"type": "string"}}}, hit, "https://forge/r/") == {"address": "https://forge/r/"}


def _result(text: str = "", structured=None, is_error: bool = False):
    return SimpleNamespace(content=[SimpleNamespace(type="text", text=text)] if text else [], structured_content=structured, is_error=is_error)


def test_search_results_are_read_from_structure_json_or_links_best_first():
    rows = [{"title": "B", "url": "u/b", "score": 0.2}, {"title": "A", "url": "u/a", "score": 0.9}, {"title": "A again", "url": "u/a", "score": 0.1}]
    assert [h.url for h in read_hits(_result(structured={"results": rows}))] == ["u/a", "u/b"]
    assert [h.title for h in read_hits(_result(text='{"hits": [{"name": "One", "link": "u/1"}, {"name": "Two", "link": "u/2"}]}'))] == ["One", "Two"]
    listed = read_hits(_result(text="Found:\n1. [Routing](https://f/routing/)\n2. https://f/actions/."))
    assert [(h.title, h.url) for h in listed] == [("Routing", "https://f/routing/"), ("https://f/actions/", "https://f/actions/")]
    assert read_hits(_result(text="[x](u/x)", is_error=True)) == []


def test_a_page_is_its_text_cut_at_a_line_end():
    assert page_text(_result(text='{"content": "# Title\\nbody"}'), 100) == "# Title\nbody"
    text = "\n".join(f"line {n:03}" for n in range(100))
    kept = cut(text, 300)
    assert kept.startswith("line 000\n") and "line 032\n[… cut at 296 of 899 characters" in kept and kept.endswith("the page tool gives the rest]")
    assert len(kept.split("\n[…")[0]) <= 300
    assert cut("short", 300) == "short"


def test_forge_is_declared_in_a_total_js_project_only_and_never_when_off():
    spec = forge_spec(Config(forge_url="http://127.0.0.1:9/mcp/"), totaljs=True)
    assert spec is not None and spec.name == "forge" and spec.source == "builtin" and spec.url == "http://127.0.0.1:9/mcp/"
    assert spec.remote and spec.only_tools == TOOLS  # outside this machine whatever its address
    assert "your prompts" in spec.question and "every project" in spec.question
    assert builtin_specs(Config(), totaljs=False) == {} and builtin_specs(Config(forge=False), totaljs=True) == {}


class _Host:
    session_id = "ses_1"

    def __init__(self, frontend: RecordingFrontEnd):
        self.frontend = frontend

    async def emit(self, event: ev.Event) -> None:
        await self.frontend.emit(event)


async def test_always_for_forge_holds_for_every_project_and_only_for_its_address(tmp_path):
    # Asked, never started here: ask_start only decides.
    config = Config(forge_url="http://127.0.0.1:9/mcp/")
    spec = forge_spec(config, totaljs=True)
    assert spec is not None
    first = _Host(RecordingFrontEnd("allow_always"))
    call = await ask_start(spec, first, policy=Policy(), config=config, root=tmp_path / "one")
    (request,) = first.frontend.asked
    assert call.allowed and request.needs_person and request.title == spec.question
    assert stored_answer(None, "forge", spec.url) == "allow" and stored_answer(tmp_path / "one", "forge", spec.url) is None

    other = _Host(RecordingFrontEnd("reject_once"))
    call = await ask_start(spec, other, policy=Policy(), config=config, root=tmp_path / "two")
    assert call.allowed and not other.frontend.asked

    moved = forge_spec(Config(forge_url="http://127.0.0.1:10/mcp/"), totaljs=True)
    assert moved is not None
    again = _Host(RecordingFrontEnd("reject_once"))
    call = await ask_start(moved, again, policy=Policy(), config=config, root=tmp_path / "two")
    assert not call.allowed and len(again.frontend.asked) == 1
