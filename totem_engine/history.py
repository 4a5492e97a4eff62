"""The stored session as the model's message list, never written back; each stored message is converted once per version of it (compaction/derived.py keeps the conversions)."""

from __future__ import annotations

from collections.abc import Iterable

from totem_engine.images import FRESH, IMAGE_PART, image_of
from totem_engine.store import StoredMessage, StoredPart
from totem_engine.vocab.messages import Image, Message
from totem_engine.vocab.tools import ToolCall

INTERRUPTED = "The call was interrupted before it finished; it may have done part of its work."


def to_messages(stored: Iterable[StoredMessage], *, provider: str | None = None, vision: bool = False) -> list[Message]:
    """User texts (after what Totem put beside them: the files shown, a nudge), assistant steps (text, reasoning, tool calls) and one tool message per call.

    Discarded parts (a retried step) are left out. A tool call with no stored result (a process
    killed mid-call) is replayed as interrupted, so every call the model made has its answer.
    A result stored as ``error`` or ``denied`` (calls.py) is a ``Message`` with ``is_error``.
    A step's replay state goes back only to the ``provider`` that wrote it.

    Images (``image`` parts, images.py): each one's caption is a line of the text of the
    user message or the tool result it came with, always; the image itself is in
    ``Message.images`` only for a model that sees images (``vision``) and while the part is
    ``fresh`` (no step has been answered with it yet).
    """
    out: list[Message] = []
    for message in stored:
        # One pass over the parts (this runs for every stored message of a session that is fitted).
        texts: list[str] = []
        reasoning_texts: list[str] = []
        contexts: list = []
        tools: list = []
        images: list[StoredPart] = []
        replay, replay_found = None, False
        for p in message.parts:
            if p.discarded:
                continue
            kind = p.type
            if kind == "text":
                texts.append(p.data.get("text", ""))
            elif kind == "tool":
                tools.append(p)
            elif kind == "reasoning":
                reasoning_texts.append(p.data.get("text", ""))
            elif kind == "context":
                contexts.append(p)
            elif kind == IMAGE_PART:
                images.append(p)
            elif kind == "state" and not replay_found and provider and p.data.get("provider") == provider:
                replay, replay_found = p.data.get("data"), True
        if message.role == "user":
            typed = "".join(texts)
            # What Totem shows goes before the request, so the request is what the model reads
            # last (as aider orders it): after the files, a small model echoed them.
            text = "\n\n".join(t for t in [*(p.data["text"] for p in contexts), typed] if t)
            captions, sent = _images(images, vision)
            text = "\n\n".join(t for t in (text, captions) if t)
            if text:
                out.append(Message(role="user", text=text, images=sent))
            continue
        text = "".join(texts)
        reasoning = "".join(reasoning_texts)
        if not text and not tools:
            continue
        calls = tuple([ToolCall(id=p.data["callId"], name=p.data["tool"], arguments=p.data.get("arguments", "{}")) for p in tools])
        out.append(Message(role="assistant", text=text, reasoning=reasoning, tool_calls=calls, replay=replay))
        for part in tools:
            output = part.data.get("output") if part.status in ("ok", "error", "denied", "interrupted") else None
            text = INTERRUPTED if output is None else output  # "" is a finished call's real (empty) result
            sent: tuple[Image, ...] = ()
            if images:  # most steps have none: this runs for every result of a session fitted
                captions, sent = _images([p for p in images if p.data.get("callId") == part.data["callId"]], vision)
                text = "\n".join(t for t in (text, captions) if t)
            out.append(
                Message(
                    role="tool",
                    text=text,
                    tool_call_id=part.data["callId"],
                    name=part.data["tool"],
                    is_error=part.status in ("error", "denied"),
                    images=sent,
                )
            )
    return out


def _images(parts: list[StoredPart], vision: bool) -> tuple[str, tuple[Image, ...]]:
    """The captions of ``parts`` (one line each) and the images sent with them: the fresh ones,
    to a model that sees images."""
    if not parts:
        return "", ()
    images = [(image_of(p.data), p.status == FRESH) for p in parts]
    sent = tuple(image for image, fresh in images if fresh and vision and image.data)
    return "\n".join(image.caption for image, _ in images), sent
