"""The user's "always" answers to starting a server, kept per project and bound to what it runs.

``<user data dir>/mcp_starts.json``::

    {"projects": {"/home/me/app": {"fs": {"target": "node /srv/fs.js .", "action": "allow"}}}}

An answer holds only while the server's command line (or URL) is exactly the one it was given
for: a project that changes ``"command"`` of a server the user allowed is asked again. A built-in
server's answer (Forge, mcp/forge.py) holds for every project: it is kept under ``"*"`` (``root``
None), since what it reaches is the user's choice (``forge_url``), not the project's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

import platformdirs

from totem_engine import json_in
from totem_engine.workspace.files import write_atomically

Answer = Literal["allow", "deny"]


def answers_file() -> Path:
    return Path(platformdirs.user_data_dir("totem")) / "mcp_starts.json"


def _read() -> dict:
    try:
        data = json_in.loads(answers_file().read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return {"projects": {}}
    return data if isinstance(data, dict) and isinstance(data.get("projects"), dict) else {"projects": {}}


EVERY_PROJECT = "*"


def _key(root: Path | None) -> str:
    return EVERY_PROJECT if root is None else str(root.resolve())


def stored_answer(root: Path | None, name: str, target: str) -> Answer | None:
    """The stored answer for server ``name`` of the project at ``root`` (None: of every project),
    when it was given for this very ``target``; None otherwise."""
    entry = _read()["projects"].get(_key(root), {}).get(name)
    if isinstance(entry, dict) and entry.get("target") == target and entry.get("action") in ("allow", "deny"):
        return entry["action"]
    return None


def store_answer(root: Path | None, name: str, target: str, action: Answer) -> None:
    data = _read()
    data["projects"].setdefault(_key(root), {})[name] = {"target": target, "action": action}
    write_atomically(answers_file(), json.dumps(data, indent=2, sort_keys=True).encode("utf-8"))
