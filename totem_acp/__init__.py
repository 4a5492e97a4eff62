"""``totem acp``: Totem as an agent of the Agent Client Protocol (Zed's ACP) over stdio.

A front end beside ``totem_lsp`` and ``totem_cli``: it opens an engine per session through the
engine's API (``Engines.private``), shows the engine's events as ``session/update``
notifications and answers the engine's questions through ``session/request_permission`` (and
``elicitation/create``). docs/acp.md maps each
method; the wire types and the connection are the official SDK's (PyPI
``agent-client-protocol``), after https://agentclientprotocol.com/protocol/overview.
"""
