"""The environment a command (``bash``, a job, a terminal) runs with: credentials left out when unasked.

A command the user did not allow (only the read-only default let it run: ``echo``, ``printenv``
is not one, ``cat``...) gets Totem's environment without the variables that look like
credentials, so ``echo $DATABASE_URL`` prints nothing; a command the user allowed (a question
answered, a rule) gets them all, since the program it runs may need them (``npm test`` reading
``DATABASE_URL``). ``command_env_pass`` (docs/config.md) names variables an unasked command
keeps all the same.

What looks like a credential, by name: a word (between ``_``) such as ``KEY``, ``PAT``,
``PWD`` (not ``PWD`` or ``OLDPWD`` themselves, the shell's folders), ``AUTH``, ``CREDS``, or a
name that holds ``PASS``, ``TOKEN``, ``SECRET``, ``CREDENTIAL``, ``APIKEY`` or ``PRIVATE``
anywhere (``PGPASSWORD``, ``GITHUBTOKEN``); by value: a URL with a user and password in it
(``postgres://user:pw@host/db``) under any name. A name list cannot know every program's
variables; a name not matched is passed (docs/decisions.md).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping

__all__ = ["command_environ", "is_credential", "left_out"]

_WORDS = frozenset({"KEY", "KEYS", "PAT", "PWD", "PW", "AUTH", "CREDS", "COOKIE", "DSN"})
_INSIDE = re.compile(r"PASS|TOKEN|SECRET|CREDENTIAL|APIKEY|PRIVATE", re.IGNORECASE)
_SHELL_FOLDERS = frozenset({"PWD", "OLDPWD"})
_URL_WITH_PASSWORD = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/@\s:]*:[^/@\s]+@")


def is_credential(name: str, value: str = "") -> bool:
    """Whether the variable ``name`` (with ``value``) looks like it holds a credential."""
    if name.upper() in _SHELL_FOLDERS:
        return False
    words = set(name.upper().split("_"))
    return bool(words & _WORDS) or _INSIDE.search(name) is not None or _URL_WITH_PASSWORD.search(value) is not None


def command_environ(*, unasked: bool, passed: Iterable[str] = (), base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a command: ``base`` (Totem's own), less its credentials when
    ``unasked``, but for the names in ``passed``."""
    env = dict(os.environ if base is None else base)
    if not unasked:
        return env
    kept = set(passed)
    return {name: value for name, value in env.items() if name in kept or not is_credential(name, value)}


def left_out(*, unasked: bool, passed: Iterable[str] = ()) -> list[str]:
    """The names of Totem's environment an unasked command goes without (for ``env -u``, where
    the command runs in another program's environment: an ACP client's terminal)."""
    if not unasked:
        return []
    kept = command_environ(unasked=True, passed=passed)
    return sorted(name for name in os.environ if name not in kept)
