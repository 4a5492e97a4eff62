"""LocalServerError apart from server.py, so a front end catches it without loading the server's
process and HTTP code (a run of a hosted model never starts it)."""


class LocalServerError(Exception):
    """The local server could not be started or reached; worded for the user."""
