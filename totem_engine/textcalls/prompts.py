"""The system-prompt sections that teach a model without native tools to call them as text:
the Hermes form for any such model (``tool_prompt``), file blocks and fenced JSON for a small one
(``small_tool_prompt``). The wording is in prompts/text_tools.txt and prompts/small_tools.txt."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from totem_engine.prompt_files import prompt
from totem_engine.vocab.tools import ToolSpec


def tool_prompt(specs: Iterable[ToolSpec]) -> str:
    """The system-prompt section that tells a model without native tools how to call them (in
    the Hermes form, which ``text_tool_calls`` reads): ``prompts/text_tools.txt``, then the tools."""
    lines = [prompt("text_tools.txt"), "", "Available tools:"]
    for spec in specs:
        description = spec.description.strip().split("\n\n", 1)[0].replace("\n", " ")
        lines.append(f"- {spec.name}: {description}")
        lines.append(f"  arguments: {json.dumps(spec.parameters, ensure_ascii=False, separators=(',', ':'))}")
    return "\n".join(lines)


# A file block replaces them for a small model: a whole file is what a 1.5B model writes
# reliably (aider's finding), while its edits drop or garble lines. They stay callable.
FILE_BLOCK_TOOLS = frozenset({"write", "edit"})


def small_tool_prompt(specs: Iterable[ToolSpec]) -> str:
    """The same section for a small model (``prompts/small_tools.txt``): files written as a path
    line and a fenced block (``text_tool_calls(..., file_blocks=True)``), other calls as fenced
    JSON, each tool on one line as ``name(argument, optional?: type): first sentence``. Short
    and the same on every step, so a local server keeps the prompt prefix cached."""
    lines = [prompt("small_tools.txt")]
    for spec in specs:
        if spec.name in FILE_BLOCK_TOOLS:
            continue
        sentence = spec.description.strip().split(". ", 1)[0].rstrip(".")
        lines.append(f"- {spec.name}({_signature(spec.parameters)}): {sentence}.")
    return "\n".join(lines)


def _signature(schema: Mapping[str, Any]) -> str:
    required = set(schema.get("required") or ())
    shown = []
    for name, field in (schema.get("properties") or {}).items():
        kind = field.get("type") if isinstance(field, Mapping) else None
        shown.append(f"{name}{'' if name in required else '?'}" + (f": {kind}" if isinstance(kind, str) else ""))
    return ", ".join(shown)
