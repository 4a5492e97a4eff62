"""The ACP methods the SDK's router (``agent-client-protocol`` 0.12) leaves out, routed to the agent.

The SDK routes ``session/resume`` and ``session/close`` only in its unstable mode (stable in
schema v1), and not ``session/delete``, ``logout`` or ``$/cancel_request`` at all; a
notification it does not route is logged with a traceback. CodeCompanion.nvim still sends the
unstable ``session/set_model`` of earlier schemas: it is the ``model`` option's alias here.
"""

from __future__ import annotations

from typing import Annotated, Any

from acp.meta import AGENT_METHODS
from acp.router import MessageRouter
from acp.schema import CancelRequestNotification, CloseSessionRequest, DeleteSessionRequest, LogoutRequest, ResumeSessionRequest
from acp.utils import normalize_result
from pydantic import BaseModel, ConfigDict, Field

CANCEL_REQUEST = "$/cancel_request"
SET_MODEL = "session/set_model"


class SetSessionModelRequest(BaseModel):
    """``session/set_model`` as CodeCompanion sends it (the unstable request of schema 1.x)."""

    model_config = ConfigDict(populate_by_name=True, extra="allow")
    session_id: Annotated[str, Field(alias="sessionId")]
    model_id: Annotated[str, Field(alias="modelId")]


def route_the_rest(router: MessageRouter, agent: Any) -> None:
    """``router`` (the connection's) given the methods above, each to the agent's method."""
    router.route_request(AGENT_METHODS["session_resume"], ResumeSessionRequest, agent, "resume_session")
    router.route_request(AGENT_METHODS["session_close"], CloseSessionRequest, agent, "close_session", adapt_result=normalize_result)
    router.route_request(AGENT_METHODS["session_delete"], DeleteSessionRequest, agent, "delete_session", adapt_result=normalize_result)
    router.route_request(AGENT_METHODS["logout"], LogoutRequest, agent, "logout", adapt_result=normalize_result)
    router.route_request(SET_MODEL, SetSessionModelRequest, agent, "set_session_model", adapt_result=normalize_result)
    router.route_notification(CANCEL_REQUEST, CancelRequestNotification, agent, "cancel_request")
