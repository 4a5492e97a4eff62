"""Is this a Total.js project? Decided once when a session starts (config key ``totaljs``)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal
from totem_engine import json_in

Setting = Literal["auto", "always", "never"]

_DOCS = ("readme", "license", "licence")


def is_totaljs_project(root: Path, setting: Setting = "auto") -> bool:
    """``always``/``never`` decide; ``auto``: package.json depends on ``total5`` (dependencies or
    devDependencies), or the folder is new: empty, or holding nothing but dotfiles (``.git``,
    ``.totem``...), README and LICENSE files. A folder that does not exist yet is new."""
    if setting == "always":
        return True
    if setting == "never":
        return False
    root = Path(root)
    package = root / "package.json"
    if package.is_file():
        return _depends_on_total5(package)
    try:
        entries = list(root.iterdir())
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return all(_ignorable(entry) for entry in entries)


def _depends_on_total5(package: Path) -> bool:
    try:
        data = json_in.loads(package.read_text(encoding="utf-8"), what=str(package))
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    if not isinstance(data, dict):
        return False
    for key in ("dependencies", "devDependencies"):
        deps = data.get(key)
        if isinstance(deps, dict) and "total5" in deps:
            return True
    return False


def _ignorable(entry: Path) -> bool:
    name = entry.name
    if name.startswith("."):
        return True
    return entry.is_file() and name.lower().startswith(_DOCS)
