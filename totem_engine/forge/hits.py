"""What Forge's search and page tools answer, read whatever form it takes.

A search result (``mcp_types.CallToolResult``) is read from its structured content, else from
its text as JSON, else from the Markdown links or bare addresses in its text: a list of results
(under ``results``, ``items``, ``hits``, ``pages``, ``documents`` or ``data``, or the list
itself), each with a title (``title``, ``name``) and an address (``url``, ``link``, ``href``,
``path``, ``id``, ``slug``). With a numeric ``score`` on every result they are ranked by it,
else kept in the server's order. A page is its text (results.py), or the ``content`` /
``markdown`` / ``text`` of a JSON object, cut to ``forge_chars`` characters at a line end.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from totem_engine import json_in
from totem_engine.mcp.results import read_result

LIST_KEYS = ("results", "items", "hits", "pages", "documents", "data", "result")
TITLE_KEYS = ("title", "name", "heading")
URL_KEYS = ("url", "link", "href", "path", "id", "slug")
TEXT_KEYS = ("content", "markdown", "text", "body", "page")
_LINK = re.compile(r"\[([^\]]+)\]\((\S+?)\)|(https?://\S+)")


@dataclass(frozen=True)
class Hit:
    """One search result: ``title``, ``url`` and the result as the server gave it (``raw``)."""

    title: str
    url: str
    raw: dict[str, Any] = field(default_factory=dict, compare=False)


def read_hits(result: Any) -> list[Hit]:
    """The results of a ``Forge_search`` call, best first (an error result has none)."""
    if getattr(result, "is_error", False):
        return []
    structured = getattr(result, "structured_content", None)
    items = _items(structured) if structured is not None else None
    text = read_result(result, "Forge_search result").text
    if items is None:
        try:
            items = _items(json_in.loads(text, what="the Forge result"))
        except ValueError:
            items = None
    hits = [hit for hit in (_hit(item) for item in items or []) if hit is not None] if items else _linked(text)
    scores = [h.raw.get("score") for h in hits]
    if hits and all(isinstance(s, (int, float)) and not isinstance(s, bool) for s in scores):
        hits.sort(key=lambda h: -h.raw["score"])
    unique: dict[str, Hit] = {}
    for hit in hits:
        unique.setdefault(hit.url, hit)
    return list(unique.values())


def page_text(result: Any, limit: int) -> str:
    """A ``Forge_page`` answer as text, cut to ``limit`` characters at a line end."""
    text = read_result(result, "Forge_page result").text
    structured = getattr(result, "structured_content", None)
    for source in (structured, _json(text)):
        if isinstance(source, dict):
            inner = next((source[k] for k in TEXT_KEYS if isinstance(source.get(k), str)), None)
            if inner is not None:
                text = inner
                break
    return cut(text.strip(), limit)


def cut(text: str, limit: int) -> str:
    """``text`` within ``limit`` characters: cut at the last line end before it (or at the limit
    when the first line is longer), with a line saying it was cut."""
    if len(text) <= limit:
        return text
    kept = text[:limit]
    end = kept.rfind("\n")
    kept = kept[:end] if end > limit // 2 else kept
    return f"{kept.rstrip()}\n[… cut at {len(kept)} of {len(text)} characters; the page tool gives the rest]"


def _items(data: Any) -> list | None:
    if isinstance(data, list):
        return data
    if isinstance(data, dict):
        for key in LIST_KEYS:
            inner = data.get(key)
            if isinstance(inner, list):
                return inner
            if isinstance(inner, dict):
                found = _items(inner)
                if found is not None:
                    return found
    return None


def _hit(item: Any) -> Hit | None:
    if not isinstance(item, dict):
        return None
    url = next((str(item[k]) for k in URL_KEYS if isinstance(item.get(k), (str, int)) and item.get(k) != ""), None)
    if url is None:
        return None
    title = next((item[k] for k in TITLE_KEYS if isinstance(item.get(k), str) and item[k].strip()), url)
    return Hit(title=title.strip(), url=url, raw=item)


def _linked(text: str) -> list[Hit]:
    hits = []
    for match in _LINK.finditer(text):
        title, url, bare = match.groups()
        address = (url or bare).rstrip(").,;")
        hits.append(Hit(title=(title or address).strip(), url=address, raw={}))
    return hits


def _json(text: str) -> Any:
    try:
        return json_in.loads(text, what="the Forge result")
    except ValueError:
        return None
