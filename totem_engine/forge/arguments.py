"""The arguments of Forge's search and page tools, read from the input schemas they list.

Forge's own tools (``Forge_search``, ``Forge_page``) describe their arguments in JSON Schema
(https://modelcontextprotocol.io/specification/2025-11-25/server/tools#tool), and nothing else
pins their names, so each argument is found by the names such a tool gives it: the query
(``query``, ``q``, ...), the product filter (``product``, ...; a value of its ``enum`` when it has
one), the kind of page (``recipe`` when the schema offers it), how many results. A search whose
schema has no product filter carries the product's name in the query instead.
"""

from __future__ import annotations

import re
from typing import Any

from totem_engine.forge.query import ForgeQuery

QUERY_KEYS = ("query", "q", "search", "text", "terms", "keywords")
PRODUCT_KEYS = ("product", "products", "framework", "library", "scope", "project")
KIND_KEYS = ("kind", "type", "category", "section")
LIMIT_KEYS = ("limit", "max_results", "maxResults", "count", "top_k", "k")
PAGE_KEYS = ("url", "id", "slug", "path", "page", "name")
# What each product is called in a filter's enum, compared without case or punctuation.
PRODUCT_NAMES = {"jcomponent": ("jcomponent", "jcomponent20", "jc"), "total5": ("total5", "totaljs5", "totaljs", "total")}
SPOKEN = {"jcomponent": "jComponent", "total5": "Total.js 5"}
RESULTS = 8  # asked of a search: the pages put in the request and the others listed


def search_arguments(schema: dict[str, Any] | None, query: ForgeQuery) -> dict[str, Any]:
    """``Forge_search``'s arguments for ``query`` under its input ``schema``."""
    properties = _properties(schema)
    text = query.text
    arguments: dict[str, Any] = {}
    product_key = _first(properties, PRODUCT_KEYS)
    if product_key is None:
        text = f"{text} {SPOKEN[query.product]}"
    else:
        arguments[product_key] = _product_value(properties[product_key], query.product)
    arguments[_first(properties, QUERY_KEYS) or _first_string(schema) or "query"] = text
    kind_key = _first(properties, KIND_KEYS)
    if query.recipe and kind_key is not None:
        recipe = _enum_match(properties[kind_key], ("recipe", "recipes"))
        if recipe is not None:
            arguments[kind_key] = recipe
    limit_key = _first(properties, LIMIT_KEYS)
    if limit_key is not None:
        most = properties[limit_key].get("maximum")
        arguments[limit_key] = min(RESULTS, most) if isinstance(most, int) else RESULTS
    return arguments


def page_arguments(schema: dict[str, Any] | None, hit: dict[str, Any], url: str) -> dict[str, Any]:
    """``Forge_page``'s arguments for one search result (``hit``, as the search gave it; ``url``:
    the address read from it)."""
    properties = _properties(schema)
    key = _first(properties, PAGE_KEYS) or _first_string(schema) or "url"
    value = hit.get(key)
    return {key: value if isinstance(value, (str, int)) and value != "" else url}


def _properties(schema: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    properties = (schema or {}).get("properties")
    return {k: v for k, v in properties.items() if isinstance(v, dict)} if isinstance(properties, dict) else {}


def _first(properties: dict[str, dict[str, Any]], names: tuple[str, ...]) -> str | None:
    return next((name for name in names if name in properties), None)


def _first_string(schema: dict[str, Any] | None) -> str | None:
    """The first required string argument, else the first string one."""
    properties = _properties(schema)
    required = [k for k in (schema or {}).get("required", []) if k in properties]
    strings = [k for k in [*required, *properties] if properties[k].get("type") == "string"]
    return strings[0] if strings else None


def _product_value(prop: dict[str, Any], product: str) -> Any:
    """The filter's value for ``product``: its enum's spelling of it when it has one; a list when
    the filter is an array."""
    value = _enum_match(prop, PRODUCT_NAMES[product]) or product
    arrays = [v for v in _variants(prop) if v.get("type") == "array"]
    return [value] if arrays and not any(v.get("type") == "string" for v in _variants(prop)) else value


def _variants(prop: dict[str, Any]) -> list[dict[str, Any]]:
    """``prop`` and the members of its ``anyOf``/``oneOf`` (an optional argument's schema is
    ``anyOf: [{enum...}, {type: null}]``)."""
    members = [m for key in ("anyOf", "oneOf") for m in prop.get(key) or [] if isinstance(m, dict)]
    return [prop, *members]


def _enum_match(prop: dict[str, Any], names: tuple[str, ...]) -> Any:
    """The value of ``prop``'s enum (or its items' enum) that is one of ``names``, compared
    without case or punctuation, the earlier name first; None when there is none."""
    enum = [
        value for variant in _variants(prop)
        for value in [*(variant.get("enum") or []), *((variant.get("items") or {}).get("enum") or [])]
    ]
    for name in names:
        for value in enum:
            if isinstance(value, str) and _bare(value) == name:
                return value
    return None


def _bare(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())
