"""The conversation's own methods: ``totem/session`` (its messages, branches marked),
``totem/rewind``, ``totem/variant`` and ``totem/fork`` (docs/protocol.md), each the engine's
(``History.conversation``, ``Engine.rewind``, ``switch_variant``, ``fork``) in the protocol's
shape. Turns that answer again (retry, regenerate) are chat.py's.
"""

from __future__ import annotations

from typing import Any

from totem_engine.api.engine import Engine
from totem_engine.api.history import Conversation, History, StoredMessage
from totem_lsp.messages import (
    FileOutcome,
    ForkParams,
    RewindParams,
    SessionParams,
    VariantParams,
)


async def session_payload(history: History, params: SessionParams) -> dict[str, Any]:
    """``totem/session``: the conversation as it stands (or, with ``all``, every message of every
    branch), each message with its id, turn, and the variant it is of its request."""
    conversation = await history.conversation(params.session_id, every=params.all)
    session = conversation.session
    return {
        "sessionId": session.id,
        "title": session.title or "",
        "model": session.model,
        "mode": session.mode,
        "messages": [_message(m, conversation, every=params.all) for m in conversation.shown],
    }


def _message(message: StoredMessage, conversation: Conversation, *, every: bool) -> dict[str, Any]:
    tree = conversation.tree
    out: dict[str, Any] = {
        "id": message.id,
        "turnId": message.turn_id,
        "role": message.role,
        "parts": [part.to_dict() for part in message.parts],
    }
    if every:
        out.update(parentId=message.parent_id, active=tree.on_path(message.id), rewound=message.rewound)
    parent = tree.parent(message)
    if message.role == "assistant" and parent is not None and parent.role == "user" and tree.starts_turn(parent):
        variants = [v.id for v in tree.variants(parent)]
        if len(variants) > 1 and message.id in variants:
            out["variant"] = {"request": parent.id, "index": variants.index(message.id), "count": len(variants)}
    return out


async def rewind(engine: Engine, params: RewindParams) -> dict[str, Any]:
    """``totem/rewind``: the conversation back to before the message, and with ``files`` the files."""
    confirmed = set(params.overwrite)
    done = await engine.rewind(
        params.session_id, params.message_id, files=params.files,
        overwrite=lambda path: params.force or path in confirmed, dry_run=params.dry_run,
    )
    return {
        "rewound": done.messages,
        "files": [FileOutcome(path=o.path, action=o.action, reason=o.reason).wire() for o in done.files],
    }


async def variant(engine: Engine, params: VariantParams) -> dict[str, Any]:
    """``totem/variant``: the conversation follows another answer of a request."""
    request, count = await engine.switch_variant(params.session_id, params.message_id, params.index)
    return {"request": request, "index": params.index, "count": count}


async def fork(engine: Engine, params: ForkParams) -> dict[str, Any]:
    """``totem/fork``: a new session from a message (default: the conversation as it stands)."""
    reply = await engine.fork(params.session_id, params.message_id)
    return {"sessionId": reply.forked}
