"""What a server's tool is called among the agent's tools: ``NAME__tool``.

Every provider accepts names of ``^[a-zA-Z0-9_-]{1,64}$`` (OpenAI's and Anthropic's rule; Gemini's
is looser), so the server's name and the tool's are each kept to those characters (anything else
becomes ``_``) and the joined name is cut to 64. Two tools that come out with the same name, or a
name a built-in tool has, are a clash: an error naming both, never one silently shadowing the
other.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

MAX_NAME = 64
SEPARATOR = "__"
_OUTSIDE = re.compile(r"[^a-zA-Z0-9_-]")
VALID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


class ToolNameClash(Exception):
    """Two tools would be offered under one name. ``first`` and ``second``: each as
    ``server/tool`` (a built-in tool as its name alone)."""

    def __init__(self, name: str, first: str, second: str):
        super().__init__(f"two tools would both be called {name}: {first} and {second}; {second} is not offered")
        self.name, self.first, self.second = name, first, second


def sanitized(text: str) -> str:
    """``text`` with every character providers refuse in a tool name replaced by ``_``."""
    return _OUTSIDE.sub("_", text) or "_"


def joined_name(server: str, tool: str) -> str:
    """``server__tool``, sanitized and cut to 64 characters."""
    return f"{sanitized(server)}{SEPARATOR}{sanitized(tool)}"[:MAX_NAME]


def join_tools(
    servers: Iterable[tuple[str, Iterable[str]]], taken: Iterable[str] = ()
) -> tuple[dict[str, tuple[str, str]], list[ToolNameClash]]:
    """The joined name of each server's tools (``servers``: ``(server, tool names)`` in a stable
    order) → ``(server, tool)``, and the clashes: a name already ``taken`` (the built-in tools)
    or given to an earlier tool keeps its first owner."""
    owners: dict[str, str] = {name: name for name in taken}
    joined: dict[str, tuple[str, str]] = {}
    clashes: list[ToolNameClash] = []
    for server, tools in servers:
        for tool in tools:
            name = joined_name(server, tool)
            if name in owners:
                clashes.append(ToolNameClash(name, owners[name], f"{server}/{tool}"))
                continue
            owners[name] = f"{server}/{tool}"
            joined[name] = (server, tool)
    return joined, clashes
