"""Whether to trust an untrusted project, asked once through ``session/request_permission``.

ACP has no question outside a tool call, and ``session/new`` cannot ask: a request naming the
session before its answer names one the client does not know. So the session's first prompt
asks, before its turn, as the pseudo call ``trust-project`` (kind ``other``): a ``tool_call``,
the request with what the restriction dropped as its content and two options, "Trust this
project" (``allow_always``: remembered as ``totem trust`` does) and "Keep it restricted"
(``reject_once``), then the call's closing update. After
https://agentclientprotocol.com/protocol/tool-calls#requesting-permission.
"""

from __future__ import annotations

import logging
import secrets

import anyio
from acp import RequestError
from acp.schema import (
    AllowedOutcome,
    PermissionOption,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
)

from totem_acp.frontend import AcpFrontEnd
from totem_acp.tool_calls import text_content
from totem_engine.api.engine import Engine

log = logging.getLogger(__name__)
TRUST, RESTRICTED = "trust", "restricted"  # the option ids


async def ask_trust(frontend: AcpFrontEnd, engine: Engine, notice: str) -> bool | None:
    """Asks whether to trust the project of ``engine``; ``notice`` says what its config lost untrusted.

    True: trusted and remembered (``trusted.json``, ``Engine.trust_project``); False: it stays restricted (also when no
    answer comes within the permission timeout or the client answers with an error); None: the
    client answered ``cancelled`` (it is cancelling the prompt)."""
    root = engine.root
    call_id = f"trust-project-{secrets.token_hex(4)}"
    title = f"Trust the project {root}?"
    await frontend.send(ToolCallStart(
        session_update="tool_call", tool_call_id=call_id, title=title, kind="other", status="pending",
        raw_input={"root": str(root)},
    ))
    call = ToolCallUpdate(tool_call_id=call_id, title=title, kind="other", status="pending", content=[text_content(notice)])
    options = [
        PermissionOption(option_id=TRUST, name="Trust this project", kind="allow_always"),
        PermissionOption(option_id=RESTRICTED, name="Keep it restricted", kind="reject_once"),
    ]
    answer: bool | None
    try:
        with anyio.fail_after(frontend.timeout):
            response = await frontend.client.request_permission(session_id=frontend.session_id, tool_call=call, options=options)
    except (TimeoutError, RequestError, ConnectionError) as exc:
        log.info("the trust question got no answer: %r", exc)
        answer = False
    else:
        outcome = response.outcome
        answer = outcome.option_id == TRUST if isinstance(outcome, AllowedOutcome) else None
    if answer:
        await engine.trust_project()
    said = {True: "Trusted: its whole config applies.", False: "Kept restricted.", None: "Not answered: the prompt was cancelled."}
    await frontend.send(ToolCallProgress(
        session_update="tool_call_update", tool_call_id=call_id, status="completed" if answer else "failed",
        content=[text_content(said[answer])],
    ))
    return answer
