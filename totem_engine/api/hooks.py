"""The hooks a project's config files declare (``totem hooks list``, ``totem/hooks``): found as
a turn finds them, without opening the project, each with its source and whether it runs."""

from __future__ import annotations

from pathlib import Path

from totem_engine.config import load_config
from totem_engine.hooks import EVENTS, Hook, Listed, listed_hooks
from totem_engine.trust import apply_trust, is_trusted

__all__ = ["EVENTS", "Hook", "Listed", "project_hooks"]


async def project_hooks(root: Path, *, config_file: Path | None = None) -> list[Listed]:
    """Every hook of the project at ``root`` (the user's config, the project's, ``config_file``),
    in the order they run; an untrusted project's own marked ignored. ConfigError when a config
    file does not load."""
    read = load_config(root, config_file=config_file)
    loaded, _notice = await apply_trust(root, read, None)
    return listed_hooks(read.layers, loaded.layers, trusted=await is_trusted(root))
