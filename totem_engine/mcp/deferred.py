"""Servers' schemas that would cost too much of the window, offered by name and one line.

A server can bring thousands of tokens of tool schemas (the filesystem server's 14 tools, about
1,900), which a small window cannot afford. When the MCP tools' specs of a request would take
more than ``mcp_schema_share`` of the model's window, or the model is small (a window under 64K
tokens, seed 003), each is offered by its name and the first sentence of its description with an
open schema, and one more tool, ``mcp_schema``, returns a chosen tool's full description and
input schema on demand (the way ``skill`` loads a skill's body); the model then calls the tool by
its name as usual, and the server checks the arguments against its own schema. Under the
minimal surface (a window under 8K tokens) a deferred tool is its name alone: the three servers
of the tests bring 28 tools, whose one lines cost about 400 tokens, a tenth of a 4K window, and
``mcp_schema`` gives the description with the schema. The specs stay the same from step to
step, so a provider's prompt-prefix cache keeps working.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from pydantic import Field

from totem_engine.context import CHARS_PER_TOKEN, tool_spec_chars
from totem_engine.mcp.tools import McpTool
from totem_engine.tools.base import Action, Tool, ToolContext, ToolInput, ToolResult
from totem_engine.tools.registry import TINY_WINDOW
from totem_engine.vocab.tools import ToolError, ToolSpec

SCHEMA_TOOL = "mcp_schema"
OPEN_SCHEMA: dict[str, Any] = {"type": "object"}  # any arguments: the server checks them
ONE_LINE = 100  # characters of a deferred tool's description at most


def schema_tokens(tools: list[Tool]) -> int:
    """What the tools' full specs cost in a request, in the context estimate's tokens."""
    chars = sum(tool_spec_chars(ToolSpec(name=t.name, description=t.description, parameters=t.parameters())) for t in tools)
    return -(-chars // CHARS_PER_TOKEN)


def fit_schemas(tools: dict[str, Tool], *, window: int | None, share: float, small: bool) -> dict[str, Tool]:
    """``tools`` as offered: the MCP tools deferred (and ``mcp_schema`` added) when the model is
    ``small`` or their specs would take more than ``share`` of a known ``window``; by name alone
    under the minimal surface."""
    served = [tool for tool in tools.values() if isinstance(tool, McpTool)]
    if not served:
        return tools
    if not small and (window is None or schema_tokens(served) <= share * window):
        return tools
    named_only = window is not None and window < TINY_WINDOW
    offered = {
        name: (DeferredTool(tool, named_only=named_only) if isinstance(tool, McpTool) else tool) for name, tool in tools.items()
    }
    offered[SCHEMA_TOOL] = SchemaTool({tool.name: tool for tool in served})
    return offered


def one_line(text: str) -> str:
    """The first sentence of a description, on one line, at most ``ONE_LINE`` characters."""
    line = " ".join(text.split())
    sentence = line.split(". ", 1)[0].rstrip(".") + "." if line else ""
    return sentence if len(sentence) <= ONE_LINE else sentence[: ONE_LINE - 1] + "…"


class DeferredTool(Tool):
    """An MCP tool offered by name and one line (or by name alone); called as the tool itself."""

    surface = "minimal"  # one line: every surface has room for it

    def __init__(self, tool: McpTool, *, named_only: bool = False):
        self.tool = tool
        self.named_only = named_only
        self.name = tool.name  # type: ignore[misc]
        self.Input = tool.Input  # type: ignore[misc]

    @property
    def description(self) -> str:
        return "" if self.named_only else one_line(self.tool.description)

    @property
    def can_change(self) -> bool:
        return self.tool.can_change

    def may_change(self, action: Action) -> bool:
        return self.tool.may_change(action)

    def parameters(self) -> dict[str, Any]:
        return dict(OPEN_SCHEMA)

    async def prepare(self, args: ToolInput, ctx: ToolContext) -> Action:
        return await self.tool.prepare(args, ctx)


class SchemaInput(ToolInput):
    tool: str = Field(description="The name of the tool whose arguments you need, as listed.")


@dataclass
class _ShowSchema(Action):
    text: str = ""

    async def apply(self, ctx: ToolContext) -> ToolResult:
        return ToolResult(output=self.text, summary="schema")


class SchemaTool(Tool):
    """``mcp_schema(tool)``: a deferred tool's full description and input schema."""

    name = SCHEMA_TOOL
    Input = SchemaInput
    read_only = True
    surface = "minimal"
    kept_on_compaction = True  # the schema is what the model needs for its next call

    def __init__(self, tools: dict[str, McpTool]):
        self.tools = tools

    async def prepare(self, args: ToolInput, ctx: ToolContext) -> Action:
        assert isinstance(args, SchemaInput)
        tool = self.tools.get(args.tool)
        if tool is None:
            raise ToolError(f"There is no MCP tool {args.tool!r}. These have schemas here: {', '.join(sorted(self.tools))}.")
        text = f"{tool.name}: {tool.description.strip()}\n\nArguments (JSON schema):\n{json.dumps(tool.parameters(), ensure_ascii=False)}"
        return _ShowSchema(title=f"mcp_schema {tool.name}", permission="mcp-schema", patterns=[tool.name], always_pattern="*", text=text)
