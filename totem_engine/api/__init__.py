"""The engine's API: the only part of ``totem_engine`` a front end imports (with ``config_error``).

A door (``totem lsp``, ``totem run``, ``totem acp``, ``totem mcp serve``) translates its protocol
to these calls and the engine's events back; it never assembles a turn, reads the store or
assigns to an engine object (tests/unit/test_layering.py). The modules, by job:

- ``engine``: ``open_project`` → ``Engine`` (one project's sessions, turns and actions),
  ``Engines`` (one engine per project root over one store), ``Running`` (the one handle on a turn).
- ``events``, ``frontend``: what the engine says (typed events) and asks (permission, question).
- ``errors``: ``EngineError`` and its ``kind``, which each door maps once to its wire.
- the rest: what a door shows or resolves for the user beside a turn (images, mentions, checks,
  workspaces, the local model, providers, keys, agents), each a small module of its own.

This file imports nothing, so ``from totem_engine.api import events`` loads only the events.
"""
