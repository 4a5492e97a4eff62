"""Forge, the Total.js documentation as a built-in MCP server (seed 000 "Knowledge for Total.js
projects"; docs/config.md "Forge").

In a Total.js project (checks/totaljs ``is_totaljs_project``, decided once per session) Totem
declares the streamable HTTP server ``forge`` at ``forge_url`` (read only, no account), unless
``forge = false``. A server named ``forge`` in the user's or the project's ``mcp.json`` replaces
it. Only the tools of ``TOOLS`` are offered (the rest of Forge's are for its own site). Its start
asks like every server's, says that the searches go to that site, and counts as reaching outside
this machine whatever its address, so ``--yes`` never answers it (only a person or ``mcp_allow``
does); "always" holds for every project (answers.py). The search before a turn's first step is
forge/prefetch.py.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from totem_engine.config import Config
from totem_engine.mcp.specs import ServerSpec, user_mcp_path

NAME = "forge"
TOOLS = frozenset({"Forge_search", "Forge_page", "Forge_verify_api", "Forge_source"})


def forge_spec(config: Config, *, totaljs: bool) -> ServerSpec | None:
    """The built-in ``forge`` server for a session whose project is a Total.js one (``totaljs``);
    None when it is not, or ``forge = false``."""
    if not (totaljs and config.forge):
        return None
    url = config.forge_url
    site = urlsplit(url).hostname or url
    question = (
        f"Connect to Forge, the Total.js documentation at {url} (Totem searches it with your prompts:"
        f" their words go to {site}, outside this machine; always: for every project)"
    )
    return ServerSpec(
        name=NAME, source="builtin", path=user_mcp_path(), url=url, outside=True, only_tools=TOOLS, question=question,
    )


def builtin_specs(config: Config, *, totaljs: bool) -> dict[str, ServerSpec]:
    """Totem's own servers by name, which the ``mcp.json`` files' servers of the same name replace."""
    spec = forge_spec(config, totaljs=totaljs)
    return {spec.name: spec} if spec is not None else {}
