"""The real ``totem lsp`` subprocess, driven by pytest-lsp's client, against a loopback model server."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.support.model_server import ModelServer

SERVER = [sys.executable, "-m", "totem_cli.main", "lsp"]


@dataclass
class Editor:
    """A test editor: the LSP client, the project folder, the model server, and what the server sent."""

    client: LanguageClient
    project: Path
    model: ModelServer
    events: list[dict] = field(default_factory=list)
    permissions: list[dict] = field(default_factory=list)
    permission_answers: list[dict] = field(default_factory=list)
    questions: list[dict] = field(default_factory=list)
    applied: list[Any] = field(default_factory=list)
    shown: list[Any] = field(default_factory=list)
    show_answer: str | None = None
    apply_edits: bool = True
    init_result: types.InitializeResult | None = None

    def uri(self, name: str) -> str:
        return (self.project / name).as_uri()

    async def request(self, method: str, params: Any) -> Any:
        return await self.client.protocol.send_request_async(method, params)

    def of(self, kind: str) -> list[dict]:
        return [e for e in self.events if e["kind"] == kind]

    async def open(self, name: str, text: str | None = None, version: int = 1) -> str:
        path = self.project / name
        if text is None:
            text = path.read_text()
        uri = path.as_uri()
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(uri=uri, language_id="python", version=version, text=text)
            )
        )
        self.documents[uri] = text
        return uri

    documents: dict[str, str] = field(default_factory=dict)
    versions: dict[str, int] = field(default_factory=dict)


def to_dict(value: Any) -> Any:
    if hasattr(value, "_asdict"):
        return {k: to_dict(v) for k, v in value._asdict().items()}
    if isinstance(value, (list, tuple)):
        return [to_dict(v) for v in value]
    return value


def apply_text_edits(text: str, edits: list[types.TextEdit]) -> str:
    lines = text.split("\n")
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)

    def offset(position: types.Position) -> int:
        if position.line >= len(lines):
            return len(text)
        return offsets[position.line] + position.character

    for edit in sorted(edits, key=lambda e: offset(e.range.start), reverse=True):
        text = text[: offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end) :]
    return text


def client_capabilities(*, totem: dict | None, apply_edit: bool = True) -> types.ClientCapabilities:
    return types.ClientCapabilities(
        workspace=types.WorkspaceClientCapabilities(
            apply_edit=apply_edit,
            workspace_edit=types.WorkspaceEditClientCapabilities(
                document_changes=True,
                resource_operations=[types.ResourceOperationKind.Create, types.ResourceOperationKind.Delete],
            ),
        ),
        window=types.WindowClientCapabilities(work_done_progress=True, show_document=types.ShowDocumentClientCapabilities(support=True)),
        experimental={"totem": totem} if totem is not None else None,
    )


async def start_editor(
    tmp_path: Path,
    model: ModelServer,
    *,
    totem: dict | None = None,
    apply_edit: bool = True,
    init_options: dict | None = None,
    extra_config: str = "",
    forge_url: str | None = None,
) -> Editor:
    """``forge_url``: Forge on, at that address (tests/lsp/test_forge.py); else ``forge = false``:
    the empty project is a Total.js one, whose built-in Forge would ask to start."""
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    home = tmp_path / "home"
    (home / "config" / "totem").mkdir(parents=True, exist_ok=True)
    forge = "forge = false\n" if forge_url is None else f'forge_url = "{forge_url}"\n'
    (home / "config" / "totem" / "config.toml").write_text(
        'model = "sim/test-model"\nretry_max_wait = 1.0\npermission_timeout = 5.0\n'
        f'{forge}{extra_config}\n'
        f'[providers.sim]\nkind = "openai"\nbase_url = "{model.base_url}"\n'
    )
    env = dict(os.environ, XDG_DATA_HOME=str(home / "data"), XDG_CONFIG_HOME=str(home / "config"))
    client = await ClientServerConfig(server_command=SERVER, server_env=env).start()
    editor = Editor(client=client, project=project, model=model)

    @client.feature("totem/event")
    def on_event(params):
        editor.events.append(to_dict(params))

    @client.feature("totem/permission")
    def on_permission(params):
        editor.permissions.append(to_dict(params))
        return editor.permission_answers.pop(0) if editor.permission_answers else {"outcome": "reject_once"}

    @client.feature("totem/question")
    def on_question(params):
        editor.questions.append(to_dict(params))
        return {"answer": "blue"}

    @client.feature(types.WORKSPACE_APPLY_EDIT)
    def on_apply_edit(params: types.ApplyWorkspaceEditParams):
        editor.applied.append(params)
        if not editor.apply_edits:
            return types.ApplyWorkspaceEditResult(applied=False, failure_reason="the user said no")
        for change in params.edit.document_changes or []:
            if isinstance(change, types.TextDocumentEdit):
                uri = change.text_document.uri
                editor.documents[uri] = apply_text_edits(editor.documents[uri], change.edits)
                # As a real editor does: the applied edit comes back as a didChange.
                editor.versions[uri] = editor.versions.get(uri, 1) + 1
                client.text_document_did_change(
                    types.DidChangeTextDocumentParams(
                        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=editor.versions[uri]),
                        content_changes=[types.TextDocumentContentChangeWholeDocument(text=editor.documents[uri])],
                    )
                )
        return types.ApplyWorkspaceEditResult(applied=True)

    @client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
    def on_show_message_request(params: types.ShowMessageRequestParams):
        editor.shown.append(params)
        if editor.show_answer is None:
            return None
        return types.MessageActionItem(title=editor.show_answer)

    editor.init_result = await client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities(totem=totem, apply_edit=apply_edit),
            workspace_folders=[types.WorkspaceFolder(uri=project.as_uri(), name="project")],
            initialization_options=init_options,
        )
    )
    return editor


@pytest.fixture
def model():
    with ModelServer() as server:
        yield server


@pytest_asyncio.fixture
async def editor(tmp_path, model):
    editor = await start_editor(tmp_path, model, totem={"permission": True, "question": True, "trust": True, "events": True})
    yield editor
    await editor.client.shutdown_session()


@pytest_asyncio.fixture
async def plain_editor(tmp_path, model):
    """A client that declared none of Totem's requests: it gets window/showMessageRequest."""
    editor = await start_editor(tmp_path, model, totem=None)
    yield editor
    await editor.client.shutdown_session()
