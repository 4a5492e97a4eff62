"""The request a turn answers, in the session: stored with what was attached to it, or a stored
one taken up again; and the files Totem's undo or redo changed since, told beside it."""

from __future__ import annotations

from totem_engine.attachments import Attachment
from totem_engine.images import CAPTIONED, FRESH, IMAGE_PART, part_data
from totem_engine.prompt_files import prompt
from totem_engine.session_state import SessionState
from totem_engine.store import Store
from totem_engine.tools.freshness import mark_seen_in
from totem_engine.vocab.messages import Image


async def store_request(
    store: Store, state: SessionState, *, session_id: str, turn_id: str, text: str, typed: str | None,
    attached: list[Attachment], images: tuple[Image, ...],
) -> str:
    """The request as a user message of its own, its id: ``text`` (with ``typed`` when the user
    typed something else, a slash command), the ``attached`` blocks and the ``images``. A whole
    file shown with the request counts as read (``state``)."""
    message = await store.add_message(session_id, "user", turn_id=turn_id)
    shown = {"typed": typed} if typed is not None and typed != text else {}
    if attached:
        shown["attachments"] = [a.wire() for a in attached]
    await store.add_part(message, "text", {"text": text, **shown})
    for image in images:
        await store.add_part(message, IMAGE_PART, part_data(image), status=FRESH)
    for attachment in attached:
        if attachment.seen is not None:
            mark_seen_in(state.reads, attachment.path, attachment.seen)
    return message


async def images_again(store: Store, session_id: str, request: str) -> None:
    """A regenerated answer looks at the request's own images again: they are fresh for its
    first step, as they were for the answer it replaces (images.py)."""
    for message in await store.messages(session_id):
        if message.id == request:
            for part in message.parts:
                if part.type == IMAGE_PART and part.status == CAPTIONED:
                    await store.update_part(part.id, status=FRESH)


async def say_restored(store: Store, state: SessionState, request: str) -> None:
    """The files Totem's undo or redo changed since the last turn, told to the model beside
    the request (a ``context`` part: the model reads it, the chat does not show it), so it
    reads them again rather than trust what it saw before."""
    if not state.restored:
        return
    files = ", ".join(path if action == "restored" else f"{path} ({action})" for path, action in sorted(state.restored.items()))
    await store.add_part(
        request, "context", {"text": prompt("restored_files.txt").format(files=files), "restored": sorted(state.restored)}
    )
    state.restored = {}
