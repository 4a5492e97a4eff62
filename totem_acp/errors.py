"""The engine's refusals as JSON-RPC errors: one table from ``EngineError.kind`` to a code.

After https://www.jsonrpc.org/specification#error_object and the ACP SDK's ``RequestError``:
the message is always the engine's own, worded for the user, and ``data.errorClass`` names the
refusal (``SessionElsewhere``, ``ConfigError``, ...), so a client can tell them apart.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from acp import RequestError

from totem_engine.api.errors import EngineError, Kind

CODES: dict[Kind, int] = {
    "config": -32603,  # internal error: the user's configuration, not the request, is wrong
    "not_found": -32002,  # ACP's "resource not found" (RequestError.resource_not_found)
    "invalid": -32602,  # invalid params: the request does not fit the session as it stands
    "busy": -32600,  # invalid request: a turn of the session runs
    "unavailable": -32603,  # internal error: something the request needs cannot be had now
}


def request_error(exc: EngineError) -> RequestError:
    return RequestError(CODES[exc.kind], str(exc), {"errorClass": type(exc).__name__})


@contextlib.contextmanager
def engine_errors() -> Iterator[None]:
    """An ``EngineError`` raised in the block leaves it as its ``RequestError``."""
    try:
        yield
    except EngineError as exc:
        raise request_error(exc) from None
