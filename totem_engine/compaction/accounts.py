"""What compaction asks of the tools about one result: its one-line account, whether it is kept,
and the result cut to fit. The tools answer (``Tool.account``, ``kept_on_compaction``, ``cut``);
this module finds the call's tool, arguments and stored summary for a tool message. A result of a
tool the run does not have (one of an earlier run) gets ``plain_account`` and a plain cut.
``AccountedTool`` says what compaction needs of a tool, so compaction never imports the tools.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from totem_engine.store import StoredMessage
from totem_engine.vocab.accounts import cut_lines, plain_account, plain_cut_note
from totem_engine.vocab.messages import Message
from totem_engine.vocab.tools import ToolCall, arguments_object

ACCOUNT_PREFIX = "[compacted] "


class AccountedTool(Protocol):
    """What compaction asks of a tool (``tools.base.Tool`` declares and documents each)."""

    @property
    def kept_on_compaction(self) -> bool: ...

    def account(self, args: dict[str, Any], output: str, *, summary: str = "", is_error: bool = False) -> str: ...

    def cut(self, args: dict[str, Any], output: str, chars: int) -> str: ...


class Accounts:
    """The tool results of one ``fit``. ``tools``: the run's tools by name; ``messages``: the
    derived messages (their calls give each result its arguments); ``stored``: the stored messages
    (their tool parts give each result its ``summary``). Accounts are made once per call id."""

    def __init__(self, tools: Mapping[str, AccountedTool], messages: Iterable[Message], stored: Iterable[StoredMessage]):
        self.tools = tools
        self.calls: dict[str, ToolCall] = {call.id: call for m in messages for call in m.tool_calls}
        self.summaries: dict[str, str] = {
            str(p.data.get("callId")): str(p.data.get("summary") or "")
            for s in stored for p in s.parts if p.type == "tool"
        }
        self._lines: dict[str, str] = {}

    def line(self, message: Message) -> str:
        """One line saying what the call behind the tool ``message`` did."""
        key = message.tool_call_id or ""
        line = self._lines.get(key)
        if line is None:
            args, summary = self._args(message), self.summaries.get(key, "")
            tool = self.tools.get(message.name or "")
            if tool is None:
                line = plain_account(message.name or "", args, message.text, summary)
            else:
                line = tool.account(args, message.text, summary=summary, is_error=message.is_error)
            if key:
                self._lines[key] = line
        return line

    def kept(self, message: Message) -> bool:
        """Its tool's results are never replaced by an account (skill bodies, the user's answers)."""
        tool = self.tools.get(message.name or "")
        return tool is not None and tool.kept_on_compaction

    def cut(self, message: Message, chars: int) -> str:
        """The result's text cut to about ``chars`` characters, with its tool's note."""
        tool = self.tools.get(message.name or "")
        if tool is not None:
            return tool.cut(self._args(message), message.text, chars)
        return cut_lines(message.text, chars, lambda kept: plain_cut_note(kept, len(message.text)))

    def _args(self, message: Message) -> dict:
        call = self.calls.get(message.tool_call_id or "")
        return (arguments_object(call.arguments) if call else None) or {}
