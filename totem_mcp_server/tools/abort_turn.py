"""``abort_turn``: stop the turn running in a session, here or in another process.

A turn this server runs is aborted at once (``Engines.abort``); one another process runs
(``totem run``, ``totem lsp``) is asked through the store (``History.request_abort``), and its
next heartbeat reads the flag. The tool waits until the turn has let go of the session's lease,
``WAIT`` seconds at most.
"""

from typing import Annotated

import anyio
from mcp_types import ToolAnnotations
from pydantic import BaseModel, Field

from totem_mcp_server.service import Service

NAME = "abort_turn"
ANNOTATIONS = ToolAnnotations(title="Abort a turn", read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
WAIT = 30.0  # seconds it waits for the turn to end


class Aborted(BaseModel):
    session_id: str
    running: bool  # a turn was running when the tool was called
    holder: str | None  # the front end that ran it ("totem run", "totem lsp", "totem mcp serve")
    pid: int | None
    stopped: bool  # the turn has ended (False: asked, and still ending after WAIT seconds)


def tool(service: Service):
    async def abort_turn(
        session_id: Annotated[str, Field(description="The session whose running turn to stop.")],
    ) -> Aborted:
        history = service.engines.history
        await history.session(session_id)  # SessionNotFound
        lease = await history.lease(session_id)
        here = service.engines.abort(session_id)
        if not here and lease is not None:
            lease = await history.request_abort(session_id)
        if lease is None:
            return Aborted(session_id=session_id, running=here, holder=None, pid=None, stopped=True)
        with anyio.move_on_after(WAIT):
            while await _still_held(service, session_id, lease.token):
                await anyio.sleep(0.1)
        stopped = not await _still_held(service, session_id, lease.token)
        return Aborted(session_id=session_id, running=True, holder=lease.holder, pid=lease.pid, stopped=stopped)

    return abort_turn


async def _still_held(service: Service, session_id: str, token: str) -> bool:
    held = await service.engines.history.lease(session_id)
    return held is not None and held.token == token
