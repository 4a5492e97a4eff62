"""A stdio MCP server made with the ``mcp`` package, serving one protocol era only, for tests.

    python -m tests.support.mcp_sdk_stdio modern|legacy

``modern``: only the 2026-07-28 revision (https://modelcontextprotocol.io/specification/2026-07-28):
every request carries its own ``_meta`` envelope, ``server/discover`` answers, and ``initialize``
is refused with -32022 (the SDK's own modern stream loop). ``legacy``: only the ``initialize``
handshake (2025-11-25 and before; the SDK's handshake loop, which refuses ``server/discover``).
Its tools:

- ``paint()``: asks the user which colour (one string field, ``colour``) and says what came back:
  ``painted COLOUR``, or ``not painted: decline``. A legacy connection asks by an
  ``elicitation/create`` request during the call; a modern one by an ``input_required`` result.
- ``pick()``: asks one of three sizes (an enum) and whether to hurry (a boolean).
- ``measure(word)``: data only, as ``structuredContent`` with no text block.
- ``find(word)``: a text line and a ``resource_link`` to the word's page.
"""

from __future__ import annotations

import sys
from typing import Annotated, Literal

import anyio
from mcp.server.elicitation import ElicitationResult
from mcp.server.mcpserver import AcceptedElicitation, Elicit, MCPServer, Resolve
from mcp.server.runner import _serve_modern_stream, serve_loop
from mcp.server.stdio import stdio_server
from mcp_types import CallToolResult, ResourceLink, TextContent
from pydantic import BaseModel, Field


class Colour(BaseModel):
    colour: str = Field(description="The button's colour")


class Order(BaseModel):
    size: Literal["small", "medium", "large"] = Field(description="The size")
    hurry: bool = Field(description="Whether to hurry")


def ask_colour() -> Elicit[Colour]:
    return Elicit("Which colour should the button be?", Colour)


def ask_order() -> Elicit[Order]:
    return Elicit("How should the order go?", Order)


def build() -> MCPServer:
    server = MCPServer("painter")

    @server.tool(description="Paint the button in the colour the user chooses.")
    def paint(answer: Annotated[ElicitationResult[Colour], Resolve(ask_colour)]) -> str:
        if isinstance(answer, AcceptedElicitation):
            return f"painted {answer.data.colour}"
        return f"not painted: {answer.action}"

    @server.tool(description="Place an order the user shapes.")
    def pick(answer: Annotated[ElicitationResult[Order], Resolve(ask_order)]) -> str:
        if isinstance(answer, AcceptedElicitation):
            return f"ordered {answer.data.size}, hurry={answer.data.hurry}"
        return f"no order: {answer.action}"

    @server.tool(description="Measure a word.")
    def measure(word: str) -> CallToolResult:
        return CallToolResult(content=[], structured_content={"word": word, "letters": len(word), "vowels": sum(c in "aeiou" for c in word)})

    @server.tool(description="Find a word's page.")
    def find(word: str) -> CallToolResult:
        return CallToolResult(content=[
            TextContent(type="text", text=f"One page about {word}."),
            ResourceLink(type="resource_link", uri=f"file:///dictionary/{word}.md", name=f"{word}.md", mime_type="text/markdown"),
        ])

    return server


async def serve(era: str) -> None:
    lowlevel = build()._lowlevel_server
    async with stdio_server() as (read, write), lowlevel.lifespan(lowlevel) as state:
        if era == "modern":
            await _serve_modern_stream(lowlevel, read, write, lifespan_state=state, raise_exceptions=False)
        else:
            await serve_loop(lowlevel, read, write, lifespan_state=state, init_options=lowlevel.create_initialization_options())


if __name__ == "__main__":
    anyio.run(serve, sys.argv[1])
