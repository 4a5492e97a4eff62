"""LocalServerError apart from server.py, so a front end catches it without loading the server's
process and HTTP code (a run of a hosted model never starts it)."""


from totem_engine.api.errors import EngineError


class LocalServerError(EngineError):
    """The local server could not be started or reached; worded for the user."""

    kind = "unavailable"
