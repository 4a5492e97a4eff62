"""An agent's definition, as a door lists it (``Engine.agents``) and writes one the user made
(``Engine.save_agent``): the engine's own type, named here for the doors."""

from totem_engine.agents import AgentDefinition

__all__ = ["AgentDefinition"]
