"""The ``ask`` tool's question put to the ACP client, and its answer back.

A client that advertises form elicitation (``clientCapabilities.elicitation.form``, unstable in
schema 1.19: https://agentclientprotocol.com/rfds/elicitation) gets ``elicitation/create`` in
form mode, tied to the session and the ``ask`` call: one field, ``answer``, a string whose
choices are the question's options (a titled enum), free text when it has none. Any other
client gets ``session/request_permission`` on the ``ask`` call, one option per choice (the
chosen option's text is the answer) and "Decline to answer"; a question without choices cannot
be put that way. A decline, a cancel, an error, no answer within the permission timeout: None,
and the model is told nobody answered.
"""

from __future__ import annotations

import logging
from typing import Any

import anyio
from acp import RequestError
from acp.schema import (
    AcceptElicitationResponse,
    AllowedOutcome,
    ElicitationFormSessionMode,
    ElicitationSchema,
    ElicitationStringPropertySchema,
    EnumOption,
    PermissionOption,
    ToolCallUpdate,
)

from totem_engine.api.frontend import QuestionRequest

log = logging.getLogger(__name__)
DECLINE = "decline"  # the option id of "Decline to answer"
FIELD = "answer"  # the form's one field


async def by_form(client: Any, request: QuestionRequest, timeout: float) -> str | None:
    """Asked with ``elicitation/create`` (form mode)."""
    choices = [EnumOption(const=option, title=option) for option in request.options]
    answer = ElicitationStringPropertySchema(type="string", title="Answer", one_of=choices or None)
    mode = ElicitationFormSessionMode(
        session_id=request.session_id, tool_call_id=request.call_id,
        requested_schema=ElicitationSchema(type="object", properties={FIELD: answer}, required=[FIELD]),
    )
    try:
        with anyio.fail_after(timeout):
            response = await client.create_elicitation(message=request.question, mode=mode)
    except (TimeoutError, RequestError, ConnectionError) as exc:
        log.info("elicitation/create got no answer: %r", exc)
        return None
    if not isinstance(response, AcceptElicitationResponse):
        return None  # declined or cancelled
    given = (response.content or {}).get(FIELD)
    return given if isinstance(given, str) else None


async def by_permission(client: Any, request: QuestionRequest, timeout: float) -> str | None:
    """Asked with ``session/request_permission``: the choices as its options."""
    if not request.options:
        return None
    options = [PermissionOption(option_id=str(n), name=text, kind="allow_once") for n, text in enumerate(request.options)]
    options.append(PermissionOption(option_id=DECLINE, name="Decline to answer", kind="reject_once"))
    call = ToolCallUpdate(tool_call_id=request.call_id, title=request.question, kind="other", status="pending")
    try:
        with anyio.fail_after(timeout):
            response = await client.request_permission(session_id=request.session_id, tool_call=call, options=options)
    except (TimeoutError, RequestError, ConnectionError) as exc:
        log.info("the question got no answer: %r", exc)
        return None
    outcome = response.outcome
    if not isinstance(outcome, AllowedOutcome) or not outcome.option_id.isdigit():
        return None  # declined, cancelled (the prompt is being cancelled) or not an option offered
    index = int(outcome.option_id)
    return request.options[index] if index < len(request.options) else None
