"""Totem's Total.js reminder (``prompts/totaljs_reminder.txt``) taken back out of a model request,
so a test reads the conversation the request carried. The harnesses' projects are empty folders,
which are Total.js projects (``totaljs = "auto"``), so each of their requests ends with the
reminder: a user message of its own after a tool result, joined to a last user message
(``turn/fitting.py`` ``with_reminder``). Whether and where it is added is tested in
tests/cli/test_totaljs_reminder.py; here it is only taken out."""

from __future__ import annotations

from totem_engine.prompt_files import prompt
from totem_engine.vocab.chat import ChatRequest
from totem_engine.vocab.messages import Message

REMINDER = prompt("totaljs_reminder.txt")
JOINED = f"\n\n{REMINDER}"


def sent_messages(body: dict) -> list[dict]:
    """The messages of a request recorded on the OpenAI wire (``ModelServer.requests``), without
    the reminder; a request without one is returned as it is."""
    *before, last = body["messages"]
    content = last.get("content")
    if last["role"] != "user":
        return body["messages"]
    if content == REMINDER:
        return before
    if isinstance(content, str) and content.endswith(JOINED):
        return [*before, {**last, "content": content.removesuffix(JOINED)}]
    if isinstance(content, list):  # a user message with images: the reminder joined its text part
        parts = [{**p, "text": p["text"].removesuffix(JOINED)} if p.get("type") == "text" else p for p in content]
        return [*before, {**last, "content": parts}]
    return body["messages"]


def request_messages(request: ChatRequest) -> tuple[Message, ...]:
    """The messages of a request as the engine built it (a scripted provider's), without the
    reminder; a request without one is returned as it is."""
    *before, last = request.messages
    if last.role != "user":
        return request.messages
    if last.text == REMINDER:
        return tuple(before)
    return (*before, last.with_text(last.text.removesuffix(JOINED)))
