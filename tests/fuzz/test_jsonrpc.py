"""What Totem itself parses of JSON-RPC messages: the ``totem/*`` params (totem_lsp/messages.py,
validated by ``service.parse``) and the client's answers to Totem's own requests, under any JSON
value in the form pygls hands over (nested namedtuples, built by pygls' own converter hook). The
params give a JSON-RPC invalid-params error or a payload, the answers a payload or a
ValidationError (a ValueError the askers turn into the safe outcome), never another exception.
pygls' reading of the framing itself is pygls' (tests/lsp/test_transport.py covers the server)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, reject
from hypothesis import strategies as st
from pydantic import ValidationError
from pygls.exceptions import JsonRpcInvalidParams
from pygls.protocol import _dict_to_object

from tests.fuzz.support import json_values, keys, no_hang
from totem_lsp import messages
from totem_lsp.chat import ask_prompt
from totem_lsp.protocol import plain
from totem_lsp.service import parse

PARAMS = [messages.ChatParams, messages.SessionRef, messages.SetModelParams, messages.AskParams]
ANSWERS = [messages.PermissionAnswer, messages.QuestionAnswer, messages.TrustAnswer]

FIELDS = ("text", "sessionId", "mode", "model", "context", "uri", "range", "start", "end", "line", "character",
          "workDoneToken", "diagnostic", "outcome", "feedback", "answer", "trusted", "type_name")
objects = st.dictionaries(st.one_of(st.sampled_from(FIELDS), keys), json_values, max_size=6)


def as_pygls(value: Any) -> Any:
    """``value`` as pygls gives a request's params to a handler (a JSON round trip). Values pygls
    itself cannot convert (a ``type_name`` that is no identifier) never reach Totem: pygls answers
    them with an internal error before any handler runs."""
    try:
        return _dict_to_object(json.loads(json.dumps(value)))
    except ValueError:
        reject()


@pytest.mark.parametrize("model", PARAMS, ids=lambda m: m.__name__)
@given(value=st.one_of(objects, json_values))
def test_params_are_a_payload_or_invalid_params(model, value):
    try:
        with no_hang():
            payload = parse(model, as_pygls(value))
    except JsonRpcInvalidParams:
        return
    assert isinstance(payload, model)
    if model is messages.AskParams:
        assert isinstance(ask_prompt(payload), str)


@pytest.mark.parametrize("model", ANSWERS, ids=lambda m: m.__name__)
@given(value=st.one_of(objects, json_values))
def test_client_answers_are_a_payload_or_a_validation_error(model, value):
    try:
        with no_hang():
            model.model_validate(plain(as_pygls(value)))
    except ValidationError:
        pass


def test_a_diagnostic_of_the_wrong_shape_is_invalid_params():
    # Found by the property above: a diagnostic whose range is a list crashed ask_prompt.
    with pytest.raises(JsonRpcInvalidParams, match="diagnostic.range"):
        parse(messages.AskParams, as_pygls({"uri": "file:///a.py", "diagnostic": {"message": "m", "range": []}}))
    ask = parse(messages.AskParams, as_pygls({"uri": "file:///a.py", "diagnostic": {"message": "bad", "code": "E1", "range": {"start": {"line": 4, "character": 0}, "end": {"line": 4, "character": 3}}}}))
    assert ask_prompt(ask) == "Fix this problem reported at line 5: bad (E1)"


def test_params_nested_500_deep_convert_without_running_out_of_stack():
    # Found probing this layer with deep params: protocol.plain recursed twice per level.
    nested = json.loads("[" * 500 + "]" * 500)
    params = parse(messages.ChatParams, as_pygls({"text": "hi", "context": {"uri": "file:///a", "extra": nested}}))
    assert params.text == "hi"
