"""The conversation's own methods: ``totem/session`` (its messages, branches marked),
``totem/rewind``, ``totem/variant`` and ``totem/fork`` (docs/protocol.md). Turns that answer
again (retry, regenerate) are chat.py's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from totem_engine.branches import Tree
from totem_engine.store import Store, StoredMessage
from totem_lsp.messages import (
    FileOutcome,
    ForkParams,
    RewindParams,
    SessionParams,
    VariantParams,
)
from totem_lsp.project import Projects


async def session_payload(store: Store, params: SessionParams) -> dict[str, Any]:
    """``totem/session``: the conversation as it stands (or, with ``all``, every message of every
    branch), each message with its id, turn, and the variant it is of its request."""
    session = await store.get_session(params.session_id)
    messages, head = await store.tree(params.session_id)
    tree = Tree(messages, head)
    shown = messages if params.all else await store.messages(params.session_id, include_discarded=True)
    return {
        "sessionId": session.id,
        "title": session.title or "",
        "model": session.model,
        "mode": session.mode,
        "messages": [_message(m, tree, every=params.all) for m in shown],
    }


def _message(message: StoredMessage, tree: Tree, *, every: bool) -> dict[str, Any]:
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


async def rewind(projects: Projects, params: RewindParams) -> dict[str, Any]:
    """``totem/rewind``: the conversation back to before the message, and with ``files`` the files."""
    session = await projects.store.get_session(params.session_id)
    runtime = await projects.runtime(Path(session.cwd))
    confirmed = set(params.overwrite)
    done = await runtime.rewind(
        params.session_id, params.message_id, files=params.files,
        overwrite=lambda path: params.force or path in confirmed, dry_run=params.dry_run,
    )
    return {
        "rewound": done.messages,
        "files": [FileOutcome(path=o.path, action=o.action, reason=o.reason).wire() for o in done.files],
    }


async def variant(projects: Projects, params: VariantParams) -> dict[str, Any]:
    """``totem/variant``: the conversation follows another answer of a request."""
    session = await projects.store.get_session(params.session_id)
    runtime = await projects.runtime(Path(session.cwd))
    request, count = await runtime.switch_variant(params.session_id, params.message_id, params.index)
    return {"request": request, "index": params.index, "count": count}


async def fork(projects: Projects, params: ForkParams) -> dict[str, Any]:
    """``totem/fork``: a new session from a message (default: the conversation as it stands)."""
    session = await projects.store.get_session(params.session_id)
    runtime = await projects.runtime(Path(session.cwd))
    forked = await runtime.fork(params.session_id, params.message_id)
    return {"sessionId": forked.id}
