"""``rewind``: a session's conversation taken back before its last turns (or before one message),
and its files with it unless asked not to (``Engine.rewind_turns``, ``Engine.rewind``). The
messages set aside stay in the session's history (``read_session`` shows them, ``discarded``)."""

from typing import Annotated

from mcp_types import ToolAnnotations
from pydantic import BaseModel, Field

from totem_engine.api import replies
from totem_engine.api.errors import EngineError
from totem_mcp_server.file_outcomes import FileOutcome, file_outcomes
from totem_mcp_server.service import Service

NAME = "rewind"
ANNOTATIONS = ToolAnnotations(title="Rewind a session", read_only_hint=False, destructive_hint=True, open_world_hint=False)


class Rewound(BaseModel):
    session_id: str
    text: str  # what was done, in words
    files: list[FileOutcome]  # what became of each file (empty with files false)


def tool(service: Service):
    async def rewind(
        session_id: Annotated[str, Field(description="The session to rewind.")],
        turns: Annotated[
            int | None, Field(description="Rewind before the last this many turns, 1 or more (default: 1).")
        ] = None,
        message_id: Annotated[
            str | None,
            Field(description="Instead of turns: rewind to just before this message (msg_..., from read_session)."),
        ] = None,
        files: Annotated[
            bool, Field(description="Put the project's files back to that point too (false: the conversation only).")
        ] = True,
    ) -> Rewound:
        engine, session = await service.session(session_id)
        if message_id is None:
            reply = await engine.rewind_turns(session.id, 1 if turns is None else turns, files=files)
        elif turns is not None:
            raise EngineError("rewind takes turns or message_id, not both")
        else:
            done = await engine.rewind(session.id, message_id, files=files)
            reply = replies.rewound_to(message_id, len(done.messages), done.files)
        return Rewound(session_id=session.id, text=reply.text, files=file_outcomes(reply.files))

    return rewind
