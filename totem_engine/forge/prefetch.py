"""Forge searched with the prompt before a turn's first step (seed 000 "Forge in front of the
prompt"; docs/config.md "Forge").

With the built-in ``forge`` server running (mcp/forge.py), the prompt shaped as a search
(query.py) is sent to ``Forge_search``; the ``forge_pages`` best results are opened with
``Forge_page`` (together), each cut to ``forge_chars`` characters, and go beside the request as a
``context`` part of the turn's user message (prompts/forge_pages.txt), with the other results
listed for the page tool. The system prompt is left as it was, so a server's prompt-prefix cache
of it survives (docs/decisions.md). A ``forge`` event says what was searched and which pages
were used. Each call waits at most ``mcp_start_timeout`` seconds; a failed search is one warning
and the turn goes on without pages. Totem's own search is not a call of the model: the user
allowed it when they allowed Forge to start, whose question says that the searches go there.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import anyio

from totem_engine.api import events as ev
from totem_engine.config import Config
from totem_engine.forge.arguments import SPOKEN, page_arguments, search_arguments
from totem_engine.forge.hits import Hit, page_text, read_hits
from totem_engine.forge.query import ForgeQuery, shape
from totem_engine.mcp.connection import CallFailed, ServerConnection
from totem_engine.mcp.forge import NAME
from totem_engine.mcp.naming import joined_name
from totem_engine.prompt_files import prompt
from totem_engine.store import Store

log = logging.getLogger(__name__)

SEARCH, PAGE = "Forge_search", "Forge_page"


@dataclass(frozen=True)
class Used:
    """What the search put into the request: ``pages`` (hit, its cut text) and the ``others``."""

    query: ForgeQuery
    pages: list[tuple[Hit, str]]
    others: list[Hit]


async def put_forge_pages(
    connections: dict[str, ServerConnection], config: Config, *, typed: str, store: Store, message_id: str,
    session_id: str, emit: Callable[[ev.Event], Awaitable[None]],
) -> None:
    """Forge searched for ``typed`` (what the user typed) and its pages added to the message
    ``message_id``, unless there is no built-in Forge running or the prompt is not worth a search;
    a failed search is said as a warning."""
    connection = connections.get(NAME)
    if connection is None or not connection.alive or connection.spec.source != "builtin":
        return  # a server of the user's or the project's named forge is theirs: not searched here
    query = shape(typed)
    tools = {tool.name: tool for tool in connection.tools}
    if query is None or SEARCH not in tools:
        return
    wait = config.mcp_start_timeout
    try:
        found = await connection.call_tool(SEARCH, search_arguments(tools[SEARCH].input_schema, query), wait)
    except CallFailed as exc:
        await emit(ev.Notice(session_id=session_id, level="warning", message=f"Forge was not searched: {exc}."))
        return
    hits = read_hits(found)
    best, others = hits[: config.forge_pages], hits[config.forge_pages:]
    texts: dict[int, str] = {}
    if PAGE in tools and best:
        async with anyio.create_task_group() as group:
            for index, hit in enumerate(best):
                group.start_soon(_open, connection, tools[PAGE].input_schema, hit, config.forge_chars, wait, texts, index)
    pages = [(hit, texts[i]) for i, hit in enumerate(best) if i in texts]
    others = [hit for i, hit in enumerate(best) if i not in texts] + others
    used = Used(query=query, pages=pages, others=others)
    if pages or others:
        text = _context(used)
        await store.add_part(message_id, "context", {"text": text, "forge": _shown(used)})
    await emit(ev.Forge(
        session_id=session_id, query=query.text, product=query.product,
        pages=[ev.ForgePage(title=hit.title, url=hit.url) for hit, _ in pages],
        others=[ev.ForgePage(title=hit.title, url=hit.url) for hit in others],
    ))


async def _open(
    connection: ServerConnection, schema: Any, hit: Hit, chars: int, wait: float, texts: dict[int, str], index: int
) -> None:
    """One page's text into ``texts[index]``; a page that cannot be opened is left out (listed)."""
    try:
        result = await connection.call_tool(PAGE, page_arguments(schema, hit.raw, hit.url), wait)
    except CallFailed as exc:
        log.info("Forge page %s not opened: %s", hit.url, exc)
        return
    if getattr(result, "is_error", False):
        log.info("Forge page %s not opened: an error result", hit.url)
        return
    texts[index] = page_text(result, chars)


def _context(used: Used) -> str:
    """The part's text: the pages and the others listed (prompts/forge_pages.txt), or only the
    list when no page was opened (prompts/forge_listed.txt)."""
    query, product, page_tool = used.query.text, SPOKEN[used.query.product], joined_name(NAME, PAGE)
    listing = "\n".join(f"- {hit.title}: {hit.url}" for hit in used.others)
    if not used.pages:
        return prompt("forge_listed.txt").format(query=query, product=product, page_tool=page_tool, listing=listing)
    others = prompt("forge_others.txt").format(page_tool=page_tool, listing=listing) if used.others else ""
    pages = "\n\n".join(f"## {hit.title}\n{hit.url}\n\n{text}" for hit, text in used.pages)
    return prompt("forge_pages.txt").format(query=query, product=product, others=others, pages=pages).strip()


def _shown(used: Used) -> dict[str, Any]:
    """The part's record of the search, for a reopened session."""
    return {
        "query": used.query.text, "product": used.query.product,
        "pages": [{"title": hit.title, "url": hit.url} for hit, _ in used.pages],
        "others": [{"title": hit.title, "url": hit.url} for hit in used.others],
    }
