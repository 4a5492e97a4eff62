"""The user's prompt as a Forge search (seed 000 "Forge in front of the prompt").

``shape(prompt)`` keeps the topic and drops the rest: filler words of Spanish and English are
dropped, the Spanish words of the topic put in English (Forge's pages are written in it), and
the product the prompt is about chosen (``jcomponent`` or ``total5``), whose own name is then
not searched: the product filter says it. A request to make a component asks for the recipe
that writes one (``recipe``: the query starts with ``recipe``). ``None``: not worth a search (a
slash command, a greeting, a prompt with no topic word left).

The words are in words.py. The product: the one the prompt names (the first named, when it names
both); else jComponent when more of its words (UI, component, form...) than Total.js 5's
(route, schema, action...) appear; else Total.js 5, the framework a Total.js project is built on.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Literal

from totem_engine.forge import words

Product = Literal["jcomponent", "total5"]
MAX_TERMS = 12  # a long prompt's first topic words; a search engine ranks worse on a paragraph
_WORD = re.compile(r"[^\W_][\w.\-]*", re.UNICODE)


@dataclass(frozen=True)
class ForgeQuery:
    """``terms``: the words searched, in order; ``product``: the filter; ``recipe``: a request to
    make a component."""

    terms: tuple[str, ...]
    product: Product
    recipe: bool = False

    @property
    def text(self) -> str:
        """The query as sent: ``recipe component counter`` for a component to make."""
        return " ".join(("recipe", *self.terms) if self.recipe else self.terms)


def shape(prompt: str) -> ForgeQuery | None:
    """The search for ``prompt`` (what the user typed, a slash command as typed); None when it is
    not searched."""
    if prompt.lstrip().startswith("/"):
        return None
    found = [plain(w).strip(".-") for w in _WORD.findall(prompt)]
    found = [w for w in found if w]
    product = _product(found)
    component = any(w in words.COMPONENT for w in found)
    making = any(w in words.MAKING for w in found)
    names = words.NAMES["jcomponent"] | words.NAMES["total5"]
    terms: list[str] = []
    for word in found:
        if len(word) < 2 or word in words.FILLER or word in words.MAKING or word in names or word.isdigit():
            continue
        english = words.GLOSSARY.get(word, word)
        if english not in terms:
            terms.append(english)
    recipe = product == "jcomponent" and component and making
    if not terms:
        return None
    return ForgeQuery(terms=tuple(terms[:MAX_TERMS]), product=product, recipe=recipe)


def plain(word: str) -> str:
    """``word`` in lower case without accents: ``Acción`` -> ``accion``, ``añade`` -> ``anade``."""
    decomposed = unicodedata.normalize("NFKD", word.lower())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def _product(found: list[str]) -> Product:
    for word in found:
        for product, names in words.NAMES.items():
            if word in names:
                return product  # type: ignore[return-value]
    ui = sum(w in words.JCOMPONENT for w in found)
    server = sum(w in words.TOTAL5 for w in found)
    return "jcomponent" if ui > server else "total5"
