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
    """The conversation of a request recorded on a model wire, without the reminder: ``messages``
    (OpenAI, Ollama, Anthropic) or Gemini's ``contents``. A wire that merges a user message into
    the one before (Anthropic after tool results, Gemini) has it as a text part of that message;
    a request without the reminder is returned as it is."""
    key = "contents" if "contents" in body else "messages"
    *before, last = body[key]
    if last["role"] != "user":
        return body[key]
    if "parts" in last:
        return before + _with_parts(last, "parts", _parts_without(last["parts"]))
    content = last["content"]
    if isinstance(content, list):
        return before + _with_parts(last, "content", _parts_without(content))
    if content == REMINDER:
        return before
    return [*before, {**last, "content": content.removesuffix(JOINED)}]


def _parts_without(parts: list[dict]) -> list[dict]:
    return [{**p, "text": p["text"].removesuffix(JOINED)} if "text" in p else p for p in parts if p.get("text") != REMINDER]


def _with_parts(message: dict, key: str, parts: list[dict]) -> list[dict]:
    return [{**message, key: parts}] if parts else []


def request_messages(request: ChatRequest) -> tuple[Message, ...]:
    """The messages of a request as the engine built it (a scripted provider's), without the
    reminder; a request without one is returned as it is."""
    *before, last = request.messages
    if last.role != "user":
        return request.messages
    if last.text == REMINDER:
        return tuple(before)
    return (*before, last.with_text(last.text.removesuffix(JOINED)))
