"""The engine's refusals as JSON-RPC errors: one table from ``EngineError.kind`` to an error code
(docs/protocol.md "Errors"), so every ``totem/*`` request answers a refusal the same way, with
the engine's own message and never a stack trace."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams

from totem_engine.api.errors import EngineError, Kind
from totem_lsp import protocol


class SessionBusy(JsonRpcException):
    CODE = protocol.SESSION_BUSY


class ConfigProblem(JsonRpcException):
    CODE = protocol.CONFIG_ERROR


class Unavailable(JsonRpcException):
    CODE = protocol.UNAVAILABLE


WIRE: dict[Kind, type[JsonRpcException]] = {
    "config": ConfigProblem,
    "busy": SessionBusy,  # here or in another process (totem run, totem mcp serve: its lease)
    "not_found": JsonRpcInvalidParams,
    "invalid": JsonRpcInvalidParams,
    "unavailable": Unavailable,  # the local model's server cannot be started now
}


@contextlib.contextmanager
def engine_errors() -> Iterator[None]:
    """An ``EngineError`` raised in the block, as the JSON-RPC error of its kind."""
    try:
        yield
    except EngineError as exc:
        raise WIRE[exc.kind](str(exc)) from None
