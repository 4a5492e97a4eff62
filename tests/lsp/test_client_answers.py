"""Answers from the client are parsed strictly: anything but a well-formed answer is the safe outcome.

Regression tests for issue 16, item 3 (``{"trusted": "yes"}`` made the project trusted and
remembered; an error response to ``totem/trust`` failed the whole ``totem/chat``), and
properties over arbitrary JSON answers to every question Totem asks the client.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lsprotocol import types
from pygls.exceptions import JsonRpcInternalError

from tests.lsp.conftest import start_editor
from tests.support.model_server import text_reply
from totem_engine.api.events import RuleRef
from totem_engine.api.frontend import PermissionRequest, QuestionRequest
from totem_engine.vocab.tools import ToolError
from totem_lsp.edits import EditorWorkspace
from totem_lsp.permission import Asker

PROPERTY = settings(max_examples=150, deadline=None)

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=10), inner, max_size=3),
    max_leaves=8,
)


class FakeClient:
    """The bits of a LanguageServer that Asker and EditorWorkspace use; ``answer`` is what the
    client sends back (an exception: an error response)."""

    def __init__(self, answer: Any):
        self.answer = answer
        self.shown: list[types.ShowMessageParams] = []
        self.client_capabilities = types.ClientCapabilities(
            experimental={"totem": {"permission": True, "question": True, "trust": True}}
        )
        self.protocol = SimpleNamespace(send_request_async=self._send, notify=lambda *a: None)

    async def _send(self, method: str, params: Any, msg_id: str | None = None) -> Any:
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer

    async def workspace_apply_edit_async(self, params: Any) -> Any:
        return await self._send("workspace/applyEdit", params)

    def window_show_message(self, params: types.ShowMessageParams) -> None:
        self.shown.append(params)


def _permission_request() -> PermissionRequest:
    return PermissionRequest(
        session_id="s", call_id="c", tool="bash", permission="bash", title="$ rm x", input={"command": "rm x"},
        rule=RuleRef(source="default", permission="bash", pattern="*", action="ask"), always_pattern="rm",
        paths=[],
    )


def _run(coroutine):
    return asyncio.run(coroutine)


@pytest.mark.parametrize("answer", [{"trusted": "yes"}, {"trusted": 1}, {"trusted": "true"}, {"trusted": [True]}])
def test_a_malformed_trust_answer_is_not_trusted(answer):
    assert _run(Asker(FakeClient(answer), 5).trust(Path("/p"), ["bash = allow"])) is False


def test_an_error_response_to_trust_is_not_trusted_with_a_notice():
    client = FakeClient(JsonRpcInternalError("boom"))
    assert _run(Asker(client, 5).trust(Path("/p"), ["bash = allow"])) is False
    assert client.shown and "untrusted" in client.shown[0].message


@PROPERTY
@given(_JSON | st.dictionaries(st.just("trusted"), _JSON, min_size=1))
def test_only_a_json_true_trusts(answer):
    trusted = _run(Asker(FakeClient(answer), 5).trust(Path("/p"), ["x"]))
    assert trusted is (isinstance(answer, dict) and answer.get("trusted") is True)


_OUTCOMES = ["allow_once", "allow_always", "reject_once", "reject_always"]


@PROPERTY
@given(_JSON | st.fixed_dictionaries({"outcome": _JSON | st.sampled_from(_OUTCOMES)}, optional={"feedback": _JSON}))
def test_a_permission_is_granted_only_by_a_well_formed_allow(answer):
    reply = _run(Asker(FakeClient(answer), 5).permission(_permission_request(), Path("/p")))
    well_formed = (
        isinstance(answer, dict) and answer.get("outcome") in _OUTCOMES and type(answer.get("outcome")) is str
        and isinstance(answer.get("feedback"), str | None)
    )
    assert reply.outcome == (answer["outcome"] if well_formed else "reject_once")


def test_an_error_response_to_a_permission_is_a_reject_with_a_reason():
    reply = _run(Asker(FakeClient(JsonRpcInternalError("boom")), 5).permission(_permission_request(), Path("/p")))
    assert reply.outcome == "reject_once" and "error" in reply.reason


@PROPERTY
@given(_JSON | st.dictionaries(st.just("answer"), _JSON, min_size=1) | st.just(JsonRpcInternalError("x")))
def test_a_question_gets_a_string_answer_or_none(answer):
    got = _run(Asker(FakeClient(answer), 5).question(QuestionRequest(session_id="s", call_id="c", question="?")))
    expected = answer.get("answer") if isinstance(answer, dict) and isinstance(answer.get("answer"), str) else None
    assert got == expected


@PROPERTY
@given(_JSON | st.fixed_dictionaries({"applied": _JSON}) | st.just(JsonRpcInternalError("x")))
def test_an_edit_counts_as_applied_only_for_a_json_true(answer):
    workspace = EditorWorkspace(FakeClient(answer))
    edit = types.WorkspaceEdit(changes={})
    applied = isinstance(answer, dict) and answer.get("applied") is True and isinstance(answer.get("failureReason"), str | None)
    if applied:
        _run(workspace._apply(edit, "x"))
    else:
        with pytest.raises(ToolError):
            _run(workspace._apply(edit, "x"))


# --- through the real server ------------------------------------------------------------------


async def _chat_in_a_project_that_asks_for_trust(tmp_path, model, answer_trust) -> tuple[Any, list[str], Path]:
    editor = await start_editor(tmp_path, model, totem={"permission": True, "trust": True, "events": True})
    (editor.project / ".totem").mkdir()
    (editor.project / ".totem" / "config.toml").write_text('[permission]\nbash = "allow"\n')
    editor.client.feature("totem/trust")(answer_trust)
    model.enqueue(text_reply("Hello."))
    try:
        result = await editor.request("totem/chat", {"text": "hi"})
    finally:
        await editor.client.shutdown_session()
    shown = [m.message for m in editor.client.messages]
    return result, shown, tmp_path / "home" / "data" / "totem" / "trusted.json"


def _trusted_roots(trust_file: Path) -> list[str]:
    return json.loads(trust_file.read_text())["roots"] if trust_file.exists() else []


async def test_trusted_yes_neither_trusts_nor_is_remembered(tmp_path, model):
    result, _, trust_file = await _chat_in_a_project_that_asks_for_trust(tmp_path, model, lambda params: {"trusted": "yes"})
    assert result.stopReason == "finished"
    assert _trusted_roots(trust_file) == []


async def test_an_error_answer_to_trust_does_not_fail_the_chat(tmp_path, model):
    def refuse(params):
        raise RuntimeError("the client broke")

    result, shown, trust_file = await _chat_in_a_project_that_asks_for_trust(tmp_path, model, refuse)
    assert result.stopReason == "finished" and result.text == "Hello."
    assert _trusted_roots(trust_file) == []
    assert any("stays untrusted" in message for message in shown)
