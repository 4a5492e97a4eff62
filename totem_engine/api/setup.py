"""Setting Totem up from a door: the config files and their layers, the provider templates, the
stored API keys and the projects the user trusts (``totem providers``, ``totem auth``,
``totem trust``): the engine's own functions and types, named here."""

from totem_engine.config import (
    MIN_MAX_STEPS,
    ProviderConfig,
    load_config,
    user_config_path,
)
from totem_engine.keys import remove_key, store_key
from totem_engine.providers.templates import TEMPLATES, find_template
from totem_engine.trust import is_trusted, trust

__all__ = [
    "MIN_MAX_STEPS", "TEMPLATES", "ProviderConfig", "find_template", "is_trusted", "load_config", "remove_key",
    "store_key", "trust", "user_config_path",
]
