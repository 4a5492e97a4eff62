"""A running server's tools and prompts as the agent's tools.

``McpTool``: one server tool under its joined name (naming.py), with the server's own
description and input schema; its calls are permission ``mcp``, pattern the joined name (default
ask, permissions.py); what its server asks the user during a call is asked through the call's
question (elicitation.py). ``PromptsTool`` (``mcp_prompts``): the running servers' prompts, listed from
what they said at start (permission ``mcp-prompts``, allowed: nothing is sent) or one fetched with
its arguments (permission ``mcp``, pattern ``NAME__prompts``). MCP prompts are a tool, not slash
commands (seed 001): a server only starts inside a run, after the user allowed it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import ConfigDict, Field

from totem_engine.mcp.connection import CallFailed, ServerConnection
from totem_engine.mcp.results import block_text, read_result
from totem_engine.tools.base import Action, Tool, ToolContext, ToolInput, ToolResult
from totem_engine.vocab.accounts import cut_lines, plain_cut_note, short
from totem_engine.vocab.tools import ToolError


class McpArguments(ToolInput):
    """Whatever the server's schema asks for: the server validates its own arguments."""

    model_config = ConfigDict(extra="allow")


@dataclass
class _CallAction(Action):
    connection: ServerConnection | None = None
    tool: str = ""
    arguments: dict[str, Any] | None = None
    label: str = ""
    timeout: float = 300.0

    async def apply(self, ctx: ToolContext) -> ToolResult:
        assert self.connection is not None
        try:
            result = await self.connection.call_tool(self.tool, self.arguments or {}, self.timeout, ask=ctx.question)
        except CallFailed as exc:
            raise ToolError(str(exc)) from None
        read = read_result(result, f"{self.label} result")
        output = cut_lines(read.text, ctx.output_budget, lambda kept: plain_cut_note(kept, len(read.text)))
        first = next((line for line in read.text.splitlines() if line.strip()), "")
        summary = short(first or (read.images[0].caption if read.images else ""), 100)
        return ToolResult(output=output, summary=summary, is_error=read.is_error, attachments=list(read.images))


class McpTool(Tool):
    """Server ``connection``'s tool ``tool`` (an ``mcp_types.Tool``) offered as ``name``."""

    Input = McpArguments

    def __init__(self, name: str, connection: ServerConnection, tool: Any, *, call_timeout: float):
        self.name = name  # type: ignore[misc]  # per instance: each server tool has its own
        self.hook_name = f"mcp__{name}"  # type: ignore[misc]  # Claude Code's mcp__<server>__<tool>
        self.connection = connection
        self.tool = tool
        self.call_timeout = call_timeout

    @property
    def can_change(self) -> bool:
        """Unless its server says it only reads (the tool's ``readOnlyHint`` annotation, MCP
        2025-03-26 "Tool annotations"), it may change anything its server can reach."""
        annotations = getattr(self.tool, "annotations", None)
        return getattr(annotations, "read_only_hint", None) is not True

    @property
    def description(self) -> str:
        own = (self.tool.description or "").strip()
        return own or f"The tool {self.tool.name} of the MCP server {self.connection.spec.name}."

    def parameters(self) -> dict[str, Any]:
        schema = {k: v for k, v in (self.tool.input_schema or {}).items() if k != "$schema"}
        schema.setdefault("type", "object")
        return schema

    async def prepare(self, args: ToolInput, ctx: ToolContext) -> Action:
        arguments = args.model_dump()
        shown = ", ".join(f"{k}={short(v, 40)}" for k, v in list(arguments.items())[:3])
        return _CallAction(
            title=f"{self.name}({shown})", permission="mcp", patterns=[self.name], always_pattern=self.name,
            connection=self.connection, tool=self.tool.name, arguments=arguments, label=self.name, timeout=self.call_timeout,
        )


class PromptsInput(ToolInput):
    server: str | None = Field(default=None, description="The MCP server whose prompts to list or get (default: every running one).")
    prompt: str | None = Field(default=None, description="The prompt to get; leave it out to list the prompts.")
    arguments: dict[str, str] | None = Field(default=None, description="The prompt's arguments, by name.")


@dataclass
class _ListPrompts(Action):
    listing: str = ""

    async def apply(self, ctx: ToolContext) -> ToolResult:
        count = sum(line.startswith("- ") for line in self.listing.splitlines())
        return ToolResult(output=self.listing, summary=f"{count} prompt{'s' if count != 1 else ''}")


@dataclass
class _GetPrompt(Action):
    connection: ServerConnection | None = None
    prompt: str = ""
    arguments: dict[str, str] | None = None
    timeout: float = 300.0

    async def apply(self, ctx: ToolContext) -> ToolResult:
        assert self.connection is not None
        try:
            result = await self.connection.get_prompt(self.prompt, self.arguments or {}, self.timeout, ask=ctx.question)
        except CallFailed as exc:
            raise ToolError(str(exc)) from None
        lines = [result.description] if result.description else []
        for message in result.messages:
            lines.append(f"[{message.role}]\n{block_text(message.content, f'{self.prompt} prompt')}")
        output = "\n\n".join(lines) or "(an empty prompt)"
        return ToolResult(output=cut_lines(output, ctx.output_budget, lambda kept: plain_cut_note(kept, len(output))),
                          summary=f"prompt {self.prompt}: {len(result.messages)} messages")


class PromptsTool(Tool):
    """The prompts of ``connections`` (the running servers that have any), by server name."""

    name = "mcp_prompts"
    Input = PromptsInput
    can_change = False  # a prompt is a template the server fills in (MCP "Prompts")

    def __init__(self, connections: dict[str, ServerConnection], *, call_timeout: float):
        self.connections = connections
        self.call_timeout = call_timeout

    @property
    def description(self) -> str:
        return f"{super().description}\n\nServers with prompts: {', '.join(sorted(self.connections))}."

    async def prepare(self, args: ToolInput, ctx: ToolContext) -> Action:
        assert isinstance(args, PromptsInput)
        if args.server is not None and args.server not in self.connections:
            raise ToolError(f"No running MCP server {args.server!r} has prompts; these do: {', '.join(sorted(self.connections))}.")
        chosen = {args.server: self.connections[args.server]} if args.server else self.connections
        if args.prompt is None:
            return _ListPrompts(title=f"mcp_prompts list {args.server or ''}".rstrip(), permission="mcp-prompts",
                                patterns=[args.server or "*"], always_pattern="*", listing=_listing(chosen))
        if args.server is None:
            raise ToolError("Say which server's prompt to get (server).")
        connection = chosen[args.server]
        if not any(p.name == args.prompt for p in connection.prompts):
            raise ToolError(f"MCP server {args.server} has no prompt {args.prompt!r}; it has: {', '.join(p.name for p in connection.prompts)}.")
        pattern = f"{args.server}__prompts"
        return _GetPrompt(title=f"mcp_prompts {args.server} {args.prompt}", permission="mcp", patterns=[pattern], always_pattern=pattern,
                          connection=connection, prompt=args.prompt, arguments=args.arguments, timeout=self.call_timeout)


def _listing(connections: dict[str, ServerConnection]) -> str:
    """One line per prompt: ``- server/prompt(arg*, arg): description`` (``*``: required)."""
    lines = []
    for server, connection in sorted(connections.items()):
        for prompt in connection.prompts:
            params = ", ".join(f"{a.name}{'*' if a.required else ''}" for a in prompt.arguments or [])
            lines.append(f"- {server}/{prompt.name}({params}): {(prompt.description or '').strip()}".rstrip(": "))
    return "\n".join(lines) or "No prompts."

