"""A stored session as plain text, for ``totem sessions show``."""

from __future__ import annotations

from totem_engine.api.history import Session, StoredMessage
from totem_engine.api.images import IMAGE_PART, image_of


def render_session(session: Session, messages: list[StoredMessage]) -> str:
    lines = [f"session {session.id}  {session.title or ''}", f"model {session.model}  mode {session.mode}", ""]
    for message in messages:
        for part in message.parts:
            mark = " (discarded)" if part.discarded else ""
            data = part.data
            if part.type == "text":
                who = "user" if message.role == "user" else "assistant"
                lines.append(f"{who}{mark}: {data.get('typed', data.get('text', ''))}")  # a command as typed
            elif part.type == "context" and data.get("nudge"):
                lines.append(f"(Totem asked again: {data.get('text', '')})")
            elif part.type == "context":
                lines.append(f"(shown with it: {', '.join(data.get('files', [])) or 'the project file list'})")
            elif part.type == "reasoning":
                lines.append(f"reasoning{mark}: {data.get('text', '')}")
            elif part.type == "tool":
                lines += _thread(data.get("thread"))
                lines.append(f"→ {data.get('title') or data.get('tool')} [{part.status}]{mark}")
                if data.get("summary"):
                    lines.append(f"   {data['summary']}")
            elif part.type == "step":
                usage = data.get("usage", {})
                lines.append(f"(step {data.get('step')}: {data.get('model')}, {usage.get('inputTokens', 0)} in / {usage.get('outputTokens', 0)} out)")
            elif part.type in ("notice", "error"):
                lines.append(f"[{data.get('stopReason', part.type)}] {data.get('text', '')}")
            elif part.type == IMAGE_PART:
                lines.append(f"   {image_of(data).caption}{mark}")  # under the request, or the call, it came with
    return "\n".join(lines)


def _thread(thread: dict | None) -> list[str]:
    """A sub-agent's thread (the ``task`` call's part), indented above the call's own line."""
    if not thread:
        return []
    lines = [f"  [{thread.get('agent')} on {thread.get('model')}]", *(f"  ! {note}" for note in thread.get("notes", []))]
    for message in thread.get("messages", []):
        for part in message.get("parts", []):
            data = part.get("data", {})
            if part.get("discarded"):
                continue
            if part.get("type") == "text":
                lines.append(f"  {'task' if message.get('role') == 'user' else 'agent'}: {data.get('text', '')}")
            elif part.get("type") == "tool":
                lines.append(f"  → {data.get('title') or data.get('tool')} [{part.get('status')}]")
                if data.get("summary"):
                    lines.append(f"     {data['summary']}")
            elif part.get("type") in ("notice", "error"):
                lines.append(f"  [{data.get('stopReason', part.get('type'))}] {data.get('text', '')}")
    return lines
