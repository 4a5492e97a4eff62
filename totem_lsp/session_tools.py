"""``totem/tools`` (docs/protocol.md): the tools a session's next turn offers its model, and why
fewer than all, as the engine says (``Engine.session_tools``), in the protocol's shape."""

from __future__ import annotations

from typing import Any

from totem_engine.api.engine import Engine


async def tools_payload(engine: Engine, session_id: str) -> dict[str, Any]:
    listed = await engine.session_tools(session_id)
    return {
        "sessionId": session_id,
        "model": listed.model,
        "mode": listed.mode,
        "contextWindow": listed.window,
        "tools": [{"name": t.name, "description": t.description, "refused": t.refused} for t in listed.tools],
        "leftOut": listed.left_out,
        "narrowed": listed.narrowed,
        "scripts": listed.scripts,
    }
