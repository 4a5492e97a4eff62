"""The wording files under ``prompts/`` a door shows its client (the MCP server's tool
descriptions and instructions): ``prompt_files.prompt``, named here for the doors."""

from totem_engine.prompt_files import prompt

__all__ = ["prompt"]
