"""Questions the engine asks the user, put to the editor.

Clients that declared ``capabilities.experimental.totem.{permission,question,trust}`` get the
``totem/permission``, ``totem/question`` and ``totem/trust`` requests (docs/protocol.md); others
get ``window/showMessageRequest`` with the same choices. No answer within ``permission_timeout``
seconds is a reject; so is an error response or an answer of the wrong shape (a trust answer is
"trusted" only for a JSON ``true``).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from pathlib import Path
from typing import Any, TypeVar

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path

from totem_engine.api.frontend import PermissionReply, PermissionRequest, QuestionRequest
from totem_lsp import protocol
from totem_lsp.messages import (
    AcceptedFile,
    ClientAnswer,
    PermissionAnswer,
    QuestionAnswer,
    TrustAnswer,
    plain,
)
from totem_lsp.uris import path_of

log = logging.getLogger(__name__)

_Answer = TypeVar("_Answer", bound=ClientAnswer)

_CHOICES = {
    "Allow once": "allow_once",
    "Allow always": "allow_always",
    "Reject": "reject_once",
    "Reject always": "reject_always",
}


def declared(server: LanguageServer, feature: str) -> bool:
    """Whether the client said, in ``capabilities.experimental.totem``, that it can show ``feature``."""
    experimental = plain(server.client_capabilities.experimental) or {}
    totem = experimental.get("totem") if isinstance(experimental, dict) else None
    return bool(isinstance(totem, dict) and totem.get(feature))


class Asker:
    """Puts the engine's questions to the client. Every answer is parsed strictly: anything
    but a well-formed answer (a wrong type, an error response, no answer in time) is the safe
    outcome: reject, no answer, not trusted."""

    def __init__(self, server: LanguageServer, timeout: float):
        self.server = server
        self.timeout = timeout

    async def permission(self, request: PermissionRequest, root: Path) -> PermissionReply:
        if declared(self.server, "permission"):
            answer = await self._answer(protocol.PERMISSION, permission_payload(request, root), PermissionAnswer)
            if isinstance(answer, str):
                return PermissionReply("reject_once", reason=answer)
            if answer.choice is not None:
                return PermissionReply(answer.outcome, answer.feedback, choice=answer.choice)  # the engine checks it was offered
            if answer.accepted is None or answer.outcome.startswith("reject"):
                return PermissionReply(answer.outcome, answer.feedback)
            accepted = accepted_paths(answer.accepted, request, root)
            if accepted is None:
                log.warning("totem/permission answer accepts a file that was not proposed: %r", answer.accepted)
                return PermissionReply("reject_once", reason="the editor's answer to totem/permission accepted a file that was not proposed")
            return PermissionReply(answer.outcome, answer.feedback, accepted=accepted)
        message = f"Totem wants to: {request.title}" + (f"\n\n{request.diff}" if request.diff else "")
        more = {c.label: c.id for c in request.choices}  # each an allow once with more
        choice = await self._show(message, [*list(_CHOICES)[:1], *more, *list(_CHOICES)[1:]])
        if choice in more:
            return PermissionReply("allow_once", choice=more[choice])
        return PermissionReply(_CHOICES.get(choice or "", "reject_once"))

    async def question(self, request: QuestionRequest) -> str | None:
        if declared(self.server, "question"):
            payload = {"sessionId": request.session_id, "callId": request.call_id, "question": request.question}
            if request.options:
                payload["options"] = request.options
            answer = await self._answer(protocol.QUESTION, payload, QuestionAnswer)
            return None if isinstance(answer, str) else answer.answer
        if not request.options:
            return None
        return await self._show(request.question, request.options)

    async def trust(self, root: Path, reasons: list[str]) -> bool:
        if declared(self.server, "trust"):
            answer = await self._answer(protocol.TRUST, {"root": str(root), "reasons": reasons}, TrustAnswer)
            if isinstance(answer, str):
                self.server.window_show_message(types.ShowMessageParams(
                    type=types.MessageType.Warning, message=f"Totem: {root} stays untrusted: {answer}."
                ))
                return False
            return answer.trusted is True
        message = f"Trust the project {root}? Its config sets: {', '.join(reasons)}."
        return await self._show(message, ["Trust", "Do not trust"]) == "Trust"

    async def _answer(self, method: str, params: dict[str, Any], model: type[_Answer]) -> _Answer | str:
        """The client's answer parsed as ``model``, or why there is none (no answer in time, an
        error response, a malformed answer), worded for the user."""
        try:
            raw = await self._request(method, params)
        except JsonRpcException as exc:
            log.warning("%s answered with an error: %s", method, exc)
            return f"the editor answered {method} with an error"
        if raw is None:
            return "no answer came in time"
        try:
            return model.model_validate(plain(raw))
        except ValueError:
            log.warning("malformed %s answer: %r", method, raw)
            return f"the editor's answer to {method} was malformed"

    async def _request(self, method: str, params: dict[str, Any]) -> Any:
        """The client's answer, or None after the timeout. A request given up on (timeout, or the
        turn aborted) is cancelled at the client too, so its prompt closes."""
        msg_id = str(uuid.uuid4())
        try:
            return await asyncio.wait_for(self.server.protocol.send_request_async(method, params, msg_id=msg_id), self.timeout)
        except TimeoutError:
            self.server.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=msg_id))
            return None
        except asyncio.CancelledError:
            self.server.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=msg_id))
            raise

    async def _show(self, message: str, choices: list[str]) -> str | None:
        """The title of the choice the user picked; None for no choice, an error response or an
        answer that is not one of ``choices``."""
        params = types.ShowMessageRequestParams(
            type=types.MessageType.Info, message=message, actions=[types.MessageActionItem(title=c) for c in choices]
        )
        try:
            item = await asyncio.wait_for(self.server.window_show_message_request_async(params), self.timeout)
        except TimeoutError:
            return None
        except JsonRpcException as exc:
            log.warning("window/showMessageRequest answered with an error: %s", exc)
            return None
        title = getattr(item, "title", None)
        return title if isinstance(title, str) and title in choices else None


def accepted_paths(accepted: list[AcceptedFile], request: PermissionRequest, root: Path) -> dict[str, str] | None:
    """The reviewed change by project-relative path; None when a file is not one of ``proposed``
    (or comes twice): such an answer is malformed, and the safe outcome is a reject."""
    proposed = {(root / f.path).resolve(): f.path for f in request.proposed if f.new_text is not None}
    by_path: dict[str, str] = {}
    for file in accepted:
        path = path_of(file.uri)
        rel = proposed.get(path) if path is not None else None
        if rel is None or rel in by_path:
            return None
        by_path[rel] = file.text
    return by_path


def permission_payload(request: PermissionRequest, root: Path) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "sessionId": request.session_id,
        "callId": request.call_id,
        "tool": request.tool,
        "permission": request.permission,
        "title": request.title,
        "input": request.input,
        "rule": request.rule.model_dump(by_alias=True) if request.rule else None,
        "alwaysPattern": request.always_pattern,
        "paths": request.paths,
    }
    if request.diff is not None:
        payload["diff"] = request.diff
    if request.choices:
        payload["choices"] = [{"id": c.id, "label": c.label} for c in request.choices]
    if request.proposed:
        payload["proposed"] = [
            {"uri": from_fs_path(str(root / f.path)), "text": f.new_text} for f in request.proposed if f.new_text is not None
        ]
    return payload
