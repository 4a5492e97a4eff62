"""Names: lowercase file names, PascalCase schemas, ``Namespace|action`` action ids."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import PurePosixPath

from totem_engine.checks.totaljs.engine import ACTIONS_URL, STYLE_URL, Hit, Rule, Source, rule

RULES: list[Rule] = []

_PASCAL = re.compile(r"@?[A-Z][A-Za-z0-9]*(/[A-Z][A-Za-z0-9]*)*")
_ACTION = re.compile(r"[A-Z][A-Za-z0-9]*\|[a-z][A-Za-z0-9_]*(/.*)?")
_WORDS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


def _words(name: str) -> list[str]:
    return _WORDS.findall(name)


def kebab(name: str) -> str:
    """``OrderItems.js`` -> ``order-items.js``; ``my_file.js`` -> ``my-file.js``."""
    stem, dot, ext = name.partition(".")
    return "-".join(w.lower() for w in _words(stem)) + dot + ext


def pascal(name: str) -> str:
    """``orders`` -> ``Orders``; ``order_items`` -> ``OrderItems``."""
    return "".join(w[:1].upper() + w[1:] for w in _words(name))


@rule(RULES, "TJS060", "warning", "lowercase file names", STYLE_URL)
def file_names(src: Source) -> Iterator[Hit]:
    """A file name with capital letters.

    Source: Total.js coding style, "Files: Lowercase filenames; Kebab-case only when a module
    name is several words: ai-engine.js" (totaljs/aicontext totaljs/style.md); Total.js Guide,
    "filenames should be all lowercase" (totaljs/guidelines). Only the file's own name is
    checked (folders are the project's). Range: the start of the file; no fix (a rename is not
    an edit of the text).
    """
    name = PurePosixPath(src.rel).name
    if name != name.lower():
        yield Hit(0, 0, f"File names are lowercase (kebab-case for several words): rename `{name}` to `{kebab(name)}`.")


def _first_string(src: Source, name: str) -> Iterator[tuple[object, str]]:
    for call in src.nodes("call_expression"):
        if src.call_name(call) == name:
            args = src.arguments(call)
            value = src.string_value(args[0]) if args else None
            if value is not None:
                yield args[0], value


@rule(RULES, "TJS061", "warning", "schema names in PascalCase", STYLE_URL)
def schema_names(src: Source) -> Iterator[Hit]:
    """``NEWSCHEMA('orders', ...)``: a schema name that is not PascalCase.

    Source: Total.js coding style, "Plugin schema names are PascalCase: NEWSCHEMA('Orders', ...)"
    (totaljs/aicontext totaljs/style.md). ``@Name`` (a schema linked from another) is allowed.
    No fix: other files call the schema by its name.
    """
    for node, value in _first_string(src, "NEWSCHEMA"):
        if not _PASCAL.fullmatch(value):
            at = "@" if value.startswith("@") else ""
            yield Hit(node.start_byte, node.end_byte, f"Schema names are PascalCase: NEWSCHEMA('{at}{pascal(value)}', ...).")


@rule(RULES, "TJS062", "warning", "action ids Namespace|action", ACTIONS_URL)
def action_ids(src: Source) -> Iterator[Hit]:
    """``NEWACTION('list_orders', ...)``: an action id not of the form ``Namespace|action``.

    Source: Total.js actions, "id: action name without spaces, the best practice name should
    look Namespace|action" and coding style "Public action IDs use Namespace|action:
    Orders|list" (totaljs/aicontext totaljs/actions.md, totaljs/style.md). The namespace is
    PascalCase, the action starts with a lowercase letter. No fix: clients call the id.
    """
    for node, value in _first_string(src, "NEWACTION"):
        if _ACTION.fullmatch(value):
            continue
        namespace, bar, action = value.partition("|")
        if bar:
            better = f"{pascal(namespace) or 'Namespace'}|{action[:1].lower() + action[1:] or 'action'}"
        else:
            better = f"Namespace|{value[:1].lower() + value[1:]}"
        yield Hit(node.start_byte, node.end_byte, f"Action ids are `Namespace|action`, e.g. NEWACTION('{better}', ...).")
