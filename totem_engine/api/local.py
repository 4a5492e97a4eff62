"""Totem's own local model (docs/local.md) for a door: setting it up, starting and stopping its
server, what is installed and how fast it ran, and the model servers found on this computer
(``totem local``, the local part of ``totem models``): the engine's own functions, named here."""

from totem_engine.local import PROVIDER_NAME
from totem_engine.local.benchmark import BenchmarkError, benchmark, last_speed
from totem_engine.local.build import Setup
from totem_engine.local.errors import LocalServerError
from totem_engine.local.model import (
    LocalPaths,
    SetupError,
    disk_use,
    human_size,
    installed,
    local_dir_from,
)
from totem_engine.local.server import adopt, live_leases, start, status, stop
from totem_engine.providers.local import find_local_servers

__all__ = [
    "PROVIDER_NAME", "BenchmarkError", "LocalPaths", "LocalServerError", "Setup", "SetupError", "adopt", "benchmark",
    "disk_use", "find_local_servers", "human_size", "installed", "last_speed", "live_leases", "local_dir_from", "start",
    "status", "stop",
]
