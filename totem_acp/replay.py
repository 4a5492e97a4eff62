"""A stored session as the ``session/update`` notifications that ``session/load`` replays.

After https://agentclientprotocol.com/protocol/session-setup#loading-sessions: the whole
conversation as it stands, in order, before the load is answered: each user message as
``user_message_chunk`` (what the user typed, not a slash command's expansion), the assistant's
text and reasoning as ``agent_message_chunk`` and ``agent_thought_chunk``, each tool call as a
``tool_call`` in its final status with its output (and an applied edit's diff, from the files
its stored part keeps), a turn's visible end (a guard, an error) and
a warning notice (an MCP server that did not start) as an agent message, an info notice (an MCP
server started) as a thought, as they came live (frontend.py), and the session's task list as
a ``plan``. Hidden parts (context shown to
the model, provider state, steps, checkpoints) are not replayed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    PlanEntry,
    TextContentBlock,
    UserMessageChunk,
)

from totem_acp import tool_calls
from totem_engine.api.history import StoredMessage
from totem_engine.api.kept_files import proposed_files


def replayed(messages: list[StoredMessage], todos: list[dict[str, Any]], root: Path) -> list[Any]:
    """The updates for the conversation (``History.messages``) and the task list (``History.todos``)."""
    updates: list[Any] = []
    for message in messages:
        for part in message.parts:
            updates.extend(_part(message.role, part.type, part.data, part.status, root))
    plans = [u for u in updates if isinstance(u, AgentPlanUpdate)]
    last = plans[-1] if plans else AgentPlanUpdate(session_update="plan", entries=[])
    if todos and _plan(todos) != last:
        updates.append(_plan(todos))
    return updates


def _plan(todos: list[Any]) -> AgentPlanUpdate:
    entries = [
        PlanEntry(content=str(t.get("content", "")), priority="medium", status=t.get("status", "pending"))
        for t in todos if isinstance(t, dict)
    ]
    return AgentPlanUpdate(session_update="plan", entries=entries)


def _part(role: str, kind: str, data: dict[str, Any], status: str | None, root: Path) -> list[Any]:
    if kind == "text" and role == "user":
        return [UserMessageChunk(session_update="user_message_chunk", content=_text(data.get("typed") or data.get("text", "")))]
    if kind == "text":
        return [AgentMessageChunk(session_update="agent_message_chunk", content=_text(data.get("text", "")))]
    if kind == "reasoning":
        return [AgentThoughtChunk(session_update="agent_thought_chunk", content=_text(data.get("text", "")))]
    if kind == "notice" and data.get("text") and not data.get("stopReason") and data.get("level", "info") == "info":
        return [AgentThoughtChunk(session_update="agent_thought_chunk", content=_text(f"{data['text']}\n"))]
    if kind in ("notice", "error") and data.get("text"):
        return [AgentMessageChunk(session_update="agent_message_chunk", content=_text(f"\n\n{data['text']}\n\n"))]
    if kind == "tool":
        return _tool(data, status, root)
    return []


def _tool(data: dict[str, Any], status: str | None, root: Path, agent: str | None = None) -> list[Any]:
    """A call opened and ended; ``agent``: the sub-agent that made it (None: the session's own)."""
    arguments = data.get("input") if isinstance(data.get("input"), dict) else {}
    call_id, tool = str(data.get("callId", "")), str(data.get("tool", ""))
    title = str(data.get("title") or tool)
    final = status if status in ("ok", "error", "denied", "interrupted") else "interrupted"  # a killed run left it open
    thread = data.get("thread") if isinstance(data.get("thread"), dict) else {}
    plan = [_plan(arguments.get("todos") or [])] if tool == "todo" and final == "ok" and agent is None else []
    return [
        tool_calls.opened(root, call_id, tool, f"[{agent}] {title}" if agent else title, arguments),
        *_thread(thread, root),
        tool_calls.ended(
            root, call_id, final, str(data.get("output") or ""), summary=str(data.get("summary") or ""),
            changed=list(data.get("changed") or []), diffs=tool_calls.diff_blocks(root, proposed_files(data)),
        ),
        *plan,
    ]


def _thread(thread: dict[str, Any], root: Path) -> list[Any]:
    """A sub-agent's calls from its stored thread (``task``'s part), as they were shown live: its
    text was not (only its answer, the task's output)."""
    agent = str(thread.get("agent") or "agent")
    updates: list[Any] = []
    for message in thread.get("messages") or []:
        for part in message.get("parts") or [] if isinstance(message, dict) else []:
            if isinstance(part, dict) and part.get("type") == "tool" and isinstance(part.get("data"), dict):
                updates += _tool(part["data"], part.get("status"), root, agent)
    return updates


def _text(text: str) -> TextContentBlock:
    return TextContentBlock(type="text", text=text)
