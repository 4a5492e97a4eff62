"""AGENTS.md files of sub-folders, attached to a read's result the first time the agent enters them.

The root AGENTS.md is part of the system prompt (prompt.py). A nested one joins the conversation
at the point where the agent first reads a file under its folder, once per session, so the
system prompt stays byte-identical across steps and a prefix cache keeps working.
"""

from __future__ import annotations

from pathlib import Path

import anyio

from totem_engine.tools.base import ToolContext
from totem_engine.workspace.paths import relative

FILENAME = "AGENTS.md"


async def attach_for(ctx: ToolContext, target: Path) -> str:
    """The text of AGENTS.md files between ``target``'s folder and the root (root excluded) not yet attached."""
    if ctx.reads is None:
        return ""
    root = ctx.root.resolve()
    found: list[str] = []
    folder = target.parent
    while folder != root and root in folder.parents:
        candidate = folder / FILENAME
        rel = relative(root, candidate)
        if rel not in ctx.reads.instructions and await anyio.Path(candidate).is_file():
            ctx.reads.instructions.add(rel)
            text = (await anyio.Path(candidate).read_text(encoding="utf-8", errors="replace")).strip()
            found.append(f"<instructions from=\"{rel}\">\n{text}\n</instructions>")
        folder = folder.parent
    return "\n".join(reversed(found))
