"""Catching a model in the act (seed 003): a model with tools that answers a request for a change
with prose describing the change, and no call, is not nudged again and again; the rest of the
request is in code mode (turn/scripts.py), and the whole files its prose held are applied first
(``CatchingPolicy``, the turn's policy for a capable model).

``whole_files`` reads those files out of the prose with the small-model path's file-block reader
(textcalls/fileblocks.py): a block that names a project file and keeps most of its lines
(``WHOLE_SHARE``) is the file's new content; a shorter one is a fragment, which only the model can
place. A new file counts when the request names it.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import anyio

from totem_engine.providers.capabilities import detect_prose_edit
from totem_engine.textcalls import text_tool_calls
from totem_engine.turn.host import PolicyHost
from totem_engine.turn.policy import AfterAnswer, DefaultPolicy, Finish, SwitchToScripts
from totem_engine.turn.unmade import asks_for_a_change
from totem_engine.vocab.chat import FinishChunk, StreamChunk, TextChunk, ToolCallChunk
from totem_engine.vocab.tools import ToolCall

# A block naming an existing file is taken for all of it when it has at least this share of the
# file's lines: a rewritten file keeps nearly all of them, a quoted function few.
WHOLE_SHARE = 0.8


class CatchingPolicy(DefaultPolicy):
    """``DefaultPolicy`` for ``turn``, which an answer describing the change the request asks
    for, or holding its whole files, none made, switches to code mode
    (``SwitchToScripts``), unless the config says never. Not in plan mode, where
    describing the change is the answer."""

    def __init__(self, turn: PolicyHost):
        self.turn = turn

    async def after_answer(self, reply: str, message_id: str, *, changed: bool, malformed: bool) -> AfterAnswer:
        turn = self.turn
        if changed or turn.options.mode == "plan" or turn.agent.config.code_mode == "never":
            return Finish()
        if not asks_for_a_change(turn.text):
            return Finish()
        files = await whole_files(reply, turn.agent.root, turn.text)
        if not files and not detect_prose_edit(reply):
            return Finish()
        return SwitchToScripts(message_id, tuple(files))


async def whole_files(reply: str, root: Path, request: str) -> list[ToolCall]:
    """The ``write`` calls of the whole files ``reply`` holds (see the module's docstring), in
    the order it wrote them; only project-relative paths inside ``root``."""

    async def once() -> AsyncIterator[StreamChunk]:
        yield TextChunk(reply)
        yield FinishChunk(reason="stop")

    calls: list[ToolCall] = []
    async for chunk in text_tool_calls(once(), {"write"}, file_blocks=True):
        if isinstance(chunk, ToolCallChunk) and chunk.call.name == "write":
            arguments = json.loads(chunk.call.arguments)
            if await anyio.to_thread.run_sync(_is_whole, root, arguments["path"], arguments["content"], request):
                calls.append(chunk.call)
    return calls


def _is_whole(root: Path, rel: str, content: str, request: str) -> bool:
    path = (root / rel).resolve()
    if not path.is_relative_to(root.resolve()):
        return False
    if not path.is_file():
        return rel.rsplit("/", 1)[-1] in request
    try:
        old = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return False
    return len(content.splitlines()) >= WHOLE_SHARE * len(old)
