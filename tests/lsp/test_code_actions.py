"""Code actions on Totem diagnostics and selections, and the totem.server.ask command they run."""

from __future__ import annotations

import asyncio

from lsprotocol import types

from tests.lsp.conftest import to_dict
from tests.support.model_server import Reply, chunk, text_reply
from tests.support.reminder import sent_messages

WAIT = 15.0
SOURCE = "def add(a, b):\n    return a + b\n\n\nprint(add(1, 2))  # TODO\n"


def rng(a: int, b: int, c: int, d: int) -> types.Range:
    return types.Range(start=types.Position(line=a, character=b), end=types.Position(line=c, character=d))


def wire_range(a: int, b: int, c: int, d: int) -> dict:
    return {"start": {"line": a, "character": b}, "end": {"line": c, "character": d}}


async def code_actions(editor, uri: str, selection: types.Range, diagnostics: list[types.Diagnostic]) -> list[dict]:
    """The actions as JSON: lsprotocol's client converter reads a CodeAction that has a command
    and no edit as a bare Command (its union hook), so the typed result cannot be trusted here."""
    protocol = editor.client.protocol
    typed = protocol.get_result_type
    protocol.get_result_type = lambda method: None if method == types.TEXT_DOCUMENT_CODE_ACTION else typed(method)
    params = types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=selection,
        context=types.CodeActionContext(diagnostics=diagnostics),
    )
    result = await asyncio.wait_for(editor.request(types.TEXT_DOCUMENT_CODE_ACTION, params), WAIT)
    return to_dict(result) or []


async def wait_for(condition) -> None:
    async def poll():
        while not condition():
            await asyncio.sleep(0.02)

    await asyncio.wait_for(poll(), WAIT)


def totem_diagnostic() -> types.Diagnostic:
    return types.Diagnostic(
        range=rng(4, 18, 4, 24),
        message="TODO left in the code",
        severity=types.DiagnosticSeverity.Warning,
        code="todo",
        source="todo",
        data={"totem": True, "fix": {"title": "Remove the TODO", "range": wire_range(4, 16, 4, 24), "newText": ""}},
    )


async def test_actions_for_a_totem_diagnostic(editor):
    uri = await editor.open("a.py", SOURCE)
    diagnostic = totem_diagnostic()
    foreign = types.Diagnostic(range=rng(0, 0, 0, 3), message="not ours", source="pyright")

    actions = await code_actions(editor, uri, rng(4, 20, 4, 20), [diagnostic, foreign])

    assert [a["title"] for a in actions] == ["Remove the TODO", "Ask Totem to fix"]
    fix, ask = actions
    assert fix["kind"] == "quickfix"
    assert fix["isPreferred"] is True
    assert fix["edit"] == {"changes": {uri: [{"range": wire_range(4, 16, 4, 24), "newText": ""}]}}
    assert "command" not in fix
    assert [d["message"] for d in fix["diagnostics"]] == ["TODO left in the code"]

    assert ask["kind"] == "quickfix"
    assert "edit" not in ask
    assert ask["command"]["command"] == "totem.server.ask"
    [argument] = ask["command"]["arguments"]
    assert argument["uri"] == uri
    assert argument["range"] == wire_range(4, 18, 4, 24)
    assert argument["diagnostic"]["message"] == "TODO left in the code"
    assert argument["diagnostic"]["code"] == "todo"
    assert argument["diagnostic"]["range"] == wire_range(4, 18, 4, 24)


async def test_a_totem_diagnostic_without_fix_offers_only_ask(editor):
    uri = await editor.open("a.py", SOURCE)
    diagnostic = totem_diagnostic()
    diagnostic.data = {"totem": True, "fix": None}
    actions = await code_actions(editor, uri, rng(4, 20, 4, 20), [diagnostic])
    assert [a["title"] for a in actions] == ["Ask Totem to fix"]


async def test_actions_for_a_selection_and_for_nothing(editor):
    uri = await editor.open("a.py", SOURCE)

    [ask] = await code_actions(editor, uri, rng(0, 0, 2, 0), [])
    assert ask["title"] == "Ask Totem about this selection"
    assert "diagnostics" not in ask
    assert ask["command"]["command"] == "totem.server.ask"
    assert ask["command"]["arguments"] == [{"uri": uri, "range": wire_range(0, 0, 2, 0)}]

    assert await code_actions(editor, uri, rng(1, 4, 1, 4), []) == []
    # A diagnostic that is not Totem's gets nothing either.
    foreign = types.Diagnostic(range=rng(1, 0, 1, 5), message="not ours", source="pyright", data={"x": 1})
    assert await code_actions(editor, uri, rng(1, 4, 1, 4), [foreign]) == []


def last_user_text(request: dict) -> str:
    content = [m for m in sent_messages(request) if m["role"] == "user"][-1]["content"]
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content)
    return content


async def test_ask_command_answers_at_once_and_runs_a_turn(editor):
    (editor.project / "a.py").write_text(SOURCE)
    uri = editor.uri("a.py")
    # The model holds its answer: the command must answer before the turn can end.
    editor.model.enqueue(Reply(events=[chunk({"role": "assistant", "content": ""}), chunk({"content": "It adds."})], hold=30))

    result = await asyncio.wait_for(
        editor.client.workspace_execute_command_async(
            types.ExecuteCommandParams(
                command="totem.server.ask",
                arguments=[{"uri": uri, "range": wire_range(0, 0, 2, 0), "text": "what does this do?"}],
            )
        ),
        WAIT,
    )
    session_id = to_dict(result)["sessionId"]
    assert session_id
    assert not [e for e in editor.of("turnEnd") if e["sessionId"] == session_id]

    await wait_for(lambda: len(editor.model.requests) == 1)
    text = last_user_text(editor.model.requests[0])
    assert '<context file="a.py" lines="1-2">\ndef add(a, b):\n    return a + b\n</context>' in text
    assert text.endswith("what does this do?")
    assert "print(add" not in text

    aborted = await asyncio.wait_for(
        editor.client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="totem.server.abort", arguments=[{"sessionId": session_id}])
        ),
        WAIT,
    )
    assert to_dict(aborted) == {"aborted": True}
    await wait_for(lambda: any(e["sessionId"] == session_id for e in editor.of("turnEnd")))
    [end] = [e for e in editor.of("turnEnd") if e["sessionId"] == session_id]
    assert end["stopReason"] == "aborted"


async def test_ask_command_turn_finishes(editor):
    uri = await editor.open("a.py", SOURCE)  # an open document: the buffer gives the excerpt
    editor.model.enqueue(text_reply("It prints 3."))

    result = await asyncio.wait_for(
        editor.client.workspace_execute_command_async(
            types.ExecuteCommandParams(
                command="totem.server.ask",
                arguments=[{"uri": uri, "range": wire_range(4, 0, 4, 10), "diagnostic": {"message": "TODO left", "code": "todo", "range": wire_range(4, 18, 4, 24)}}],
            )
        ),
        WAIT,
    )
    session_id = to_dict(result)["sessionId"]
    await wait_for(lambda: any(e["sessionId"] == session_id for e in editor.of("turnEnd")))
    [end] = [e for e in editor.of("turnEnd") if e["sessionId"] == session_id]
    assert end["stopReason"] == "finished"
    text = last_user_text(editor.model.requests[0])
    assert '<context file="a.py" lines="5-5">\nprint(add(1, 2))  # TODO\n</context>' in text
    assert text.endswith("Fix this problem reported at line 5: TODO left (todo)")
