"""The agent files of a project (``totem agents``): found as ``task`` finds them, shown, written
and removed, without opening the project (a broken config must not hide them)."""

from __future__ import annotations

from pathlib import Path

from totem_engine.agents import (
    AgentDefinition,
    Agents,
    discover_agents,
    folder,
    remove_agent,
    render_agent,
    save_agent,
)
from totem_engine.config import ConfigError, load_config
from totem_engine.trust import is_trusted

__all__ = ["AgentDefinition", "Agents", "folder", "project_agents", "remove_agent", "render_agent", "save_agent"]

DEFAULT_MAX_STEPS = 50  # the config's own default, for a config that cannot be read


async def project_agents(root: Path) -> Agents:
    """The agents of the project at ``root`` (four sources, the last wins by name; an untrusted
    project's own files restricted to the user's step cap), with what their files lost."""
    try:
        max_steps = load_config(root).config.max_steps
    except ConfigError:
        max_steps = DEFAULT_MAX_STEPS
    return discover_agents(root, trusted=await is_trusted(root), max_steps=max_steps)
