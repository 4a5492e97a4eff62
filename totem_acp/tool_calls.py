"""Totem's tool calls as ACP tool calls: their kind, locations, content and status.

After https://agentclientprotocol.com/protocol/tool-calls: a ``tool_call`` update opens a call
(``toolCallId``, ``title``, ``kind``, ``status``, ``rawInput``, ``locations``), and
``tool_call_update`` updates change it; an edit's content is a diff block
``{type: "diff", path, oldText, newText}`` with an absolute path, a command's is its text.
Pure functions: the front end (frontend.py) and the replay of a stored session (replay.py)
build the same calls from them.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from acp.schema import (
    ContentToolCallContent,
    FileEditToolCallContent,
    TerminalToolCallContent,
    TextContentBlock,
    ToolCallLocation,
    ToolCallProgress,
    ToolCallStart,
)

from totem_engine.api.workspace import ProposedFile

Kind = Literal["read", "edit", "delete", "move", "search", "execute", "think", "fetch", "other"]
Status = Literal["pending", "in_progress", "completed", "failed"]

_KINDS: dict[str, Kind] = {
    "read": "read", "skill": "read",
    "glob": "search", "grep": "search",
    "write": "edit", "edit": "edit", "patch": "edit", "run_script": "edit",
    "bash": "execute", "job": "execute", "terminal": "execute", "mcp-start": "execute",
    "fetch": "fetch",
    "todo": "think", "task": "think",
}
# Totem's end states of a call -> ACP's: only "ok" completed; a denied, failed or interrupted
# call did not do what it set out to.
_STATUSES: dict[str, Status] = {"ok": "completed", "error": "failed", "denied": "failed", "interrupted": "failed"}
OUTPUT_LIMIT = 20_000  # characters of a call's output shown in its content (the model gets it all)


def tool_kind(tool: str, arguments: dict[str, Any]) -> Kind:
    """The ACP kind of a call of ``tool``: a patch that only deletes files is ``delete``, one
    that only renames them ``move``; an MCP server's tool (``server__tool``) and ``ask`` are ``other``."""
    if tool == "patch":
        return _patch_kind(str(arguments.get("patch", "")))
    return _KINDS.get(tool, "other")


def _patch_kind(patch: str) -> Kind:
    sources = re.findall(r"^--- (\S+)", patch, re.MULTILINE)
    targets = re.findall(r"^\+\+\+ (\S+)", patch, re.MULTILINE)
    changes = [line for line in patch.splitlines() if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    if targets and all(t == "/dev/null" for t in targets):
        return "delete"
    if sources and not changes and [_bare(s) for s in sources] != [_bare(t) for t in targets]:
        return "move"
    return "edit"


def _bare(path: str) -> str:
    return path[2:] if path.startswith(("a/", "b/")) else path


def locations(root: Path, tool: str, arguments: dict[str, Any]) -> list[ToolCallLocation]:
    """Where the call works (an absolute path, and a line when the call names one), so the
    editor can follow the agent: a path argument, or the files a patch names."""
    if tool == "patch":
        paths = [_bare(p) for p in re.findall(r"^\+\+\+ (\S+)", str(arguments.get("patch", "")), re.MULTILINE)]
        return [ToolCallLocation(path=str(root / p)) for p in dict.fromkeys(paths) if p != "/dev/null"]
    path = arguments.get("path")
    if not isinstance(path, str) or not path:
        return []
    line = arguments.get("offset") if tool == "read" else None
    return [ToolCallLocation(path=str((root / path).resolve()), line=line if isinstance(line, int) and line > 0 else None)]


def diff_blocks(root: Path, proposed: list[ProposedFile]) -> list[FileEditToolCallContent]:
    """Each proposed file as a diff block; a deleted file's new text is empty."""
    return [
        FileEditToolCallContent(type="diff", path=str(root / f.path), old_text=f.old_text, new_text=f.new_text or "")
        for f in proposed
    ]


def text_content(text: str) -> ContentToolCallContent:
    if len(text) > OUTPUT_LIMIT:
        text = text[:OUTPUT_LIMIT] + f"\n… ({len(text) - OUTPUT_LIMIT} more characters)"
    return ContentToolCallContent(type="content", content=TextContentBlock(type="text", text=text))


def command_content(tool: str, arguments: dict[str, Any]) -> list[ContentToolCallContent]:
    """What a command would run, for the permission request of ``bash``, ``job`` or ``terminal``."""
    command = arguments.get("command")
    if tool in ("bash", "job", "terminal") and isinstance(command, str) and command:
        return [text_content(f"$ {command}")]
    return []


def opened(
    root: Path, call_id: str, tool: str, title: str, arguments: dict[str, Any], *, status: Status = "pending"
) -> ToolCallStart:
    """The ``tool_call`` update that opens a call."""
    return ToolCallStart(
        session_update="tool_call", tool_call_id=call_id, title=title, kind=tool_kind(tool, arguments), status=status,
        raw_input=arguments, locations=locations(root, tool, arguments) or None,
    )


def running(call_id: str) -> ToolCallProgress:
    return ToolCallProgress(session_update="tool_call_update", tool_call_id=call_id, status="in_progress")


def ended(
    root: Path, call_id: str, status: str, output: str, *, summary: str, changed: list[str],
    diffs: list[FileEditToolCallContent] | None = None, terminal: str | None = None,
) -> ToolCallProgress:
    """The ``tool_call_update`` that closes a call: its status, its diff (when it changed files
    and the diff is known) and its output, and the files it changed as locations. A command run
    in the client's ``terminal`` (its id) shows that terminal instead of its output, which the
    client keeps showing after Totem released it; ``rawOutput`` has the output either way."""
    shown: Any = TerminalToolCallContent(type="terminal", terminal_id=terminal) if terminal else text_content(output or summary)
    content: list[Any] = [*(diffs if status == "ok" and diffs else []), shown]
    return ToolCallProgress(
        session_update="tool_call_update", tool_call_id=call_id, status=_STATUSES.get(status, "failed"),
        content=content, raw_output={"status": status, "summary": summary, "output": output},
        locations=[ToolCallLocation(path=str(root / p)) for p in changed] or None,
    )
