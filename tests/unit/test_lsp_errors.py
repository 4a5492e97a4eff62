"""totem_lsp/errors.py: every kind of engine refusal answers with its JSON-RPC code and the
engine's own message, the one table docs/protocol.md "Errors" describes."""

from __future__ import annotations

import pytest
from pygls.exceptions import JsonRpcException

from totem_engine.api.errors import KINDS, EngineError, SessionBusy
from totem_engine.config_error import ConfigError
from totem_engine.local.errors import LocalServerError
from totem_engine.store import SessionNotFound
from totem_lsp import protocol
from totem_lsp.errors import engine_errors

CODES = {
    "config": protocol.CONFIG_ERROR,
    "busy": protocol.SESSION_BUSY,
    "not_found": -32602,
    "invalid": -32602,
    "unavailable": protocol.UNAVAILABLE,
}


def test_the_codes_are_the_documented_ones():
    assert (protocol.SESSION_BUSY, protocol.CONFIG_ERROR, protocol.UNAVAILABLE) == (-32001, -32003, -32004)
    assert set(CODES) == set(KINDS)


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_answers_with_its_code_and_the_engines_message(kind):
    refusal = type("Refusal", (EngineError,), {"kind": kind})(f"refused as {kind}")
    with pytest.raises(JsonRpcException) as caught, engine_errors():
        raise refusal
    assert caught.value.code == CODES[kind]
    assert caught.value.message == f"refused as {kind}"


@pytest.mark.parametrize(
    ("refusal", "code"),
    [
        (ConfigError("model: provider 'zz' is not configured"), -32003),
        (SessionBusy("ses_1"), -32001),
        (SessionNotFound("ses_nope"), -32602),
        (LocalServerError("llama-server did not start"), -32004),
    ],
)
def test_the_engines_own_refusals_take_their_kinds_code(refusal, code):
    with pytest.raises(JsonRpcException) as caught, engine_errors():
        raise refusal
    assert caught.value.code == code


def test_anything_else_is_left_alone():
    with pytest.raises(KeyError), engine_errors():
        raise KeyError("a bug, answered as an internal error by pygls")
