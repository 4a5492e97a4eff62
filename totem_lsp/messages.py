"""Payloads of the ``totem/*`` methods, validated on the way in (docs/protocol.md).

Field names on the wire are camelCase. pygls hands custom params over as nested namedtuples;
``protocol.plain`` turns them back into dicts before validation.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

from totem_lsp.protocol import plain

__all__ = ["plain"]


class Payload(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")

    def wire(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")


class Position(Payload):
    line: int
    character: int


class Range(Payload):
    start: Position
    end: Position


class ChatContext(Payload):
    uri: str
    range: Range | None = None


class EditorDiagnostic(Payload):
    """An LSP ``Diagnostic`` the editor shows, as ``#diagnostics`` reads it."""

    range: Range
    message: str
    severity: int | None = None
    code: str | int | None = None
    source: str | None = None


class EditorState(ChatContext):
    """The document the editor shows and its selection: what ``#buffer``, ``#selection`` and
    ``#diagnostics`` name; ``diagnostics``: those it shows for the document (absent: Totem's own)."""

    diagnostics: list[EditorDiagnostic] | None = None


class ChatAttachment(Payload):
    """One attached image: its bytes as base64 ``data``, or a ``uri`` (``file:`` or ``data:``)."""

    type: Literal["image"]
    mime_type: str
    data: str | None = None
    uri: str | None = None
    name: str | None = None

    @model_validator(mode="after")
    def _one_source(self) -> ChatAttachment:
        if (self.data is None) == (self.uri is None):
            raise ValueError("give either data (base64) or uri, not both and not neither")
        return self


class ChatParams(Payload):
    text: str
    session_id: str | None = None
    mode: Literal["build", "plan"] | None = None
    model: str | None = None
    context: ChatContext | None = None
    editor: EditorState | None = None
    work_done_token: str | int | None = None
    attachments: list[ChatAttachment] = []


class RetryParams(Payload):
    session_id: str
    mode: Literal["build", "plan"] | None = None
    model: str | None = None
    work_done_token: str | int | None = None


class RegenerateParams(RetryParams):
    message_id: str


class VariantParams(Payload):
    session_id: str
    message_id: str
    index: int


class ForkParams(Payload):
    session_id: str
    message_id: str | None = None


class ChatResult(Payload):
    session_id: str
    stop_reason: str
    text: str


class SessionRef(Payload):
    session_id: str


class SessionParams(Payload):
    session_id: str
    all: bool = False


class RewindParams(Payload):
    session_id: str
    message_id: str
    files: bool = False
    force: bool = False
    overwrite: list[str] = []
    dry_run: bool = False


class McpLoginParams(Payload):
    uri: str | None = None  # a document of the project whose mcp.json declares the server
    name: str


class JobStopParams(Payload):
    session_id: str
    job_id: str


class SetModelParams(Payload):
    session_id: str | None = None
    model: str


class CompleteParams(Payload):
    """``totem/complete``: ``position`` is a UTF-16 offset into ``text``; the project is the
    session's (``sessionId``), else the folder holding ``uri``, else the first."""

    text: str
    position: int = Field(ge=0)
    session_id: str | None = None
    uri: str | None = None


class SetModeParams(Payload):
    session_id: str | None = None
    mode: Literal["build", "plan"]


class AskDiagnostic(Payload):
    """The LSP ``Diagnostic`` a code action hands back to ``totem.server.ask``: what the prompt
    reads of it, typed, so a malformed one is invalid params rather than a crash."""

    message: str | None = None
    code: str | int | None = None
    range: Range | None = None


class ProjectRef(Payload):
    """The project a request is about: the workspace folder holding ``uri`` (default: the first)."""

    uri: str | None = None


class AgentSaveParams(Payload):
    """``totem/agentSave``: one agent written into ``scope``'s folder (agents.py sources)."""

    uri: str | None = None
    name: str
    description: str
    prompt: str
    scope: Literal["user", "user-project", "project"] = "user-project"
    tools: list[str] | None = None
    max_steps: int | None = Field(default=None, ge=0)
    model: str | None = None
    allow: list[str] = []
    deny: list[str] = []


class AgentDeleteParams(Payload):
    uri: str | None = None
    name: str


class AskParams(Payload):
    """``totem.server.ask`` argument: ask about a place in a document."""

    uri: str
    range: Range | None = None
    diagnostic: AskDiagnostic | None = None
    text: str | None = None


class ClientAnswer(Payload):
    """An answer the client gives to a question Totem asked: strict types, no coercion, so
    ``{"trusted": "yes"}`` or ``{"outcome": 1}`` is malformed and gets the safe outcome."""

    model_config = ConfigDict(strict=True)


class AcceptedFile(ClientAnswer):
    """One file of a reviewed change: the whole text the user accepts for it."""

    uri: str
    text: str


class PermissionAnswer(ClientAnswer):
    outcome: Literal["allow_once", "allow_always", "reject_once", "reject_always"]
    feedback: str | None = None
    accepted: list[AcceptedFile] | None = None
    choice: str | None = None  # with allow_once: the id of one of the request's choices


class QuestionAnswer(ClientAnswer):
    answer: str | None = None


class TrustAnswer(ClientAnswer):
    trusted: bool


class ApplyEditAnswer(ClientAnswer):
    """The result of ``workspace/applyEdit`` (LSP ``ApplyWorkspaceEditResult``), kept raw by
    ``TotemProtocol`` so that ``{"applied": "no"}`` is malformed, not applied."""

    applied: bool
    failure_reason: str | None = None


class FileOutcome(Payload):
    path: str
    action: Literal["restored", "deleted", "conflict", "unrestorable"]
    reason: str | None = None
