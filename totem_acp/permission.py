"""The engine's permission question as ACP's ``session/request_permission``, and the answer back.

After https://agentclientprotocol.com/protocol/tool-calls#requesting-permission: the request
carries the tool call (its diff for an edit, its command for a command) and four options, one
per Totem answer; the option ids are Totem's outcomes, so the answer maps one to one. The
request's more choices (a job's ports forwarded to loopback) follow allow once, each an
``allow_once`` option whose id is the choice's. The
``cancelled`` outcome is not an answer: the client sends it for a request still open when it
cancels the prompt turn, so it is part of the abort (``Cancelled``), never a reject.
"""

from __future__ import annotations

from pathlib import Path
from typing import get_args

from acp.schema import (
    AllowedOutcome,
    PermissionOption,
    RequestPermissionResponse,
    ToolCallUpdate,
)

from totem_acp import tool_calls
from totem_engine.api.frontend import Outcome, PermissionReply, PermissionRequest

OUTCOMES: tuple[Outcome, ...] = get_args(Outcome)


class Cancelled(Exception):
    """The client answered ``cancelled``: the prompt turn is being cancelled."""


def options(request: PermissionRequest) -> list[PermissionOption]:
    """Allow once, the request's more choices, allow always (what the answer stores), reject
    once, reject always."""
    pattern = f"{request.permission} {request.always_pattern}".strip()
    return [
        PermissionOption(option_id="allow_once", name="Allow once", kind="allow_once"),
        *(PermissionOption(option_id=c.id, name=c.label, kind="allow_once") for c in request.choices),
        PermissionOption(option_id="allow_always", name=f"Always allow {pattern}", kind="allow_always"),
        PermissionOption(option_id="reject_once", name="Reject", kind="reject_once"),
        PermissionOption(option_id="reject_always", name=f"Always reject {pattern}", kind="reject_always"),
    ]


def tool_call(request: PermissionRequest, root: Path) -> ToolCallUpdate:
    """The call being asked about, with what it would do: the diff of each file it changes, or
    the command it runs."""
    content = tool_calls.diff_blocks(root, request.proposed) or tool_calls.command_content(request.tool, request.input)
    if not content and request.diff:
        content = [tool_calls.text_content(request.diff)]
    return ToolCallUpdate(
        tool_call_id=request.call_id, title=request.title, kind=tool_calls.tool_kind(request.tool, request.input),
        status="pending", raw_input=request.input, content=content or None,
        locations=tool_calls.locations(root, request.tool, request.input) or None,
    )


def reply(response: RequestPermissionResponse, request: PermissionRequest) -> PermissionReply:
    """Totem's answer for the client's; ``Cancelled`` for the ``cancelled`` outcome. An option id
    that was not offered is a reject, the safe answer."""
    outcome = response.outcome
    if not isinstance(outcome, AllowedOutcome):
        raise Cancelled
    if outcome.option_id in {c.id for c in request.choices}:
        return PermissionReply("allow_once", choice=outcome.option_id)
    if outcome.option_id not in OUTCOMES:
        return PermissionReply("reject_once", reason=f"the client chose an option that was not offered ({outcome.option_id!r})")
    return PermissionReply(outcome.option_id)  # type: ignore[arg-type]
