"""The built-in actions' replies, worded once: what ``/undo``, ``/redo``, ``/compact``,
``/rewind``, ``/fork`` and ``/diff`` (``commands.ACTIONS``) say at every door: the chat of either editor,
``totem run``, an ACP client's thread, an MCP tool's result."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from totem_engine.api.running import Reply

if TYPE_CHECKING:
    from totem_engine.compaction.checkpoints import Checkpoint
    from totem_engine.session_diff import FileDiff
    from totem_engine.snapshots import FileOutcome


def file_lines(files: Sequence["FileOutcome"]) -> list[str]:
    return [f"{f.action} {f.path}" + (f" ({f.reason})" if f.reason else "") for f in files]


def undone(files: list["FileOutcome"], *, redo: bool = False) -> Reply:
    action = "redo" if redo else "undo"
    text = "\n".join(file_lines(files)) or f"Nothing to {action}."
    return Reply(action, text, files=files)


def compacted(checkpoint: "Checkpoint | None") -> Reply:
    if checkpoint is None:
        return Reply("compact", "Nothing new to compact.", compacted=0)
    count = checkpoint.messages
    text = (
        f"Compacted: {count} message{'s are' if count != 1 else ' is'} summarised; the next turn starts from the summary."
    )
    return Reply("compact", text, compacted=count)


def rewound(turns: int, messages: int, files: list["FileOutcome"]) -> Reply:
    head = (
        f"Rewound {turns} turn{'s' if turns != 1 else ''} ({messages} message{'s' if messages != 1 else ''} set aside;"
        " they stay in the session's history)."
    )
    lines = file_lines(files)
    return Reply("rewind", "\n".join([head, *lines]), files=files)


def forked(session_id: str, new_id: str) -> Reply:
    return Reply("fork", f"Forked session {session_id} into {new_id}; continue there to leave this one as it is.", forked=new_id)


def rewound_to(message_id: str, messages: int, files: list["FileOutcome"]) -> Reply:
    """A rewind to a message named by its id (``Engine.rewind``), not counted in turns."""
    head = (
        f"Rewound to before {message_id} ({messages} message{'s' if messages != 1 else ''} set aside;"
        " they stay in the session's history)."
    )
    return Reply("rewind", "\n".join([head, *file_lines(files)]), files=files)


def diffed(diffs: list["FileDiff"]) -> Reply:
    """The session's net change, one unified diff per file (a binary or pruned file named)."""
    if not diffs:
        return Reply("diff", "This session changed no file.")
    blocks = []
    for d in diffs:
        note = " (binary)" if d.binary else " (its earlier state was pruned)" if d.missing else ""
        since = " (changed since by someone else)" if d.changed_since else ""
        blocks.append(d.diff.rstrip("\n") if d.diff else f"{d.change} {d.path}{note}")
        if since:
            blocks[-1] += f"\n{d.path}{since}"
    return Reply("diff", "\n".join(blocks))
