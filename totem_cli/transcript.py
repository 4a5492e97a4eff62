"""A stored session as plain text, for ``totem sessions show``."""

from __future__ import annotations

from totem_engine.store import Session, StoredMessage


def render_session(session: Session, messages: list[StoredMessage]) -> str:
    lines = [f"session {session.id}  {session.title or ''}", f"model {session.model}  mode {session.mode}", ""]
    for message in messages:
        for part in message.parts:
            mark = " (discarded)" if part.discarded else ""
            data = part.data
            if part.type == "text":
                who = "user" if message.role == "user" else "assistant"
                lines.append(f"{who}{mark}: {data.get('text', '')}")
            elif part.type == "context" and data.get("nudge"):
                lines.append(f"(Totem asked again: {data.get('text', '')})")
            elif part.type == "context":
                lines.append(f"(shown with it: {', '.join(data.get('files', [])) or 'the project file list'})")
            elif part.type == "reasoning":
                lines.append(f"reasoning{mark}: {data.get('text', '')}")
            elif part.type == "tool":
                lines.append(f"→ {data.get('title') or data.get('tool')} [{part.status}]{mark}")
                if data.get("summary"):
                    lines.append(f"   {data['summary']}")
            elif part.type == "step":
                usage = data.get("usage", {})
                lines.append(f"(step {data.get('step')}: {data.get('model')}, {usage.get('inputTokens', 0)} in / {usage.get('outputTokens', 0)} out)")
            elif part.type in ("notice", "error"):
                lines.append(f"[{data.get('stopReason', part.type)}] {data.get('text', '')}")
    return "\n".join(lines)
