"""The ``ask`` tool's question answered through the client: as a form (``elicitation/create``)
when the client takes one, else as ``session/request_permission`` whose options are the
question's; a decline or a cancel is no answer, and the model is told nobody answered."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from acp.schema import AcceptElicitationResponse, CancelElicitationResponse, DeclineElicitationResponse

from tests.acp.conftest import Client, running_acp
from tests.support.model_server import text_reply, tool_reply
from tests.support.reminder import sent_messages

QUESTION = {"question": "Which database?", "options": ["sqlite", "postgres"]}
NOBODY = "The user could not be asked"


@dataclass
class FormClient(Client):
    """A client that takes form elicitation; ``forms``: its answers in order, an answer's text
    (accepted), ``"decline"`` or ``"cancel"``."""

    forms: list[str] = field(default_factory=list)
    asked: list[tuple[str, Any]] = field(default_factory=list)

    async def create_elicitation(self, message: str, mode: Any, **_: Any) -> Any:
        self.asked.append((message, mode))
        answer = self.forms.pop(0)
        if answer == "decline":
            return DeclineElicitationResponse(action="decline")
        if answer == "cancel":
            return CancelElicitationResponse(action="cancel")
        return AcceptElicitationResponse(action="accept", content={"answer": answer})


async def asked(acp, arguments: dict, **initialize: Any) -> str:
    """One turn whose model asks ``arguments``; what the ``ask`` call gave the model."""
    await acp.initialize(**initialize)
    session_id = await acp.new_session()
    acp.model.enqueue(tool_reply([("ask", arguments)]), text_reply("Noted."))
    response = await acp.conn.prompt(session_id=session_id, prompt=[{"type": "text", "text": "set it up"}])
    assert response.stop_reason == "end_turn"
    return sent_messages(acp.model.requests[1])[-1]["content"]


async def test_a_client_that_takes_forms_answers_in_one_with_the_options_as_its_choices(tmp_path, model):
    client = FormClient(forms=["postgres"])
    async with running_acp(tmp_path, model, client) as acp:
        answered = await asked(acp, QUESTION, forms=True)
    assert answered == "The user answered: postgres"
    [(message, mode)] = client.asked
    [call] = client.of("tool_call")
    assert message == "Which database?" and mode.tool_call_id == call.tool_call_id
    field_ = mode.requested_schema.properties["answer"]
    assert [(o.const, o.title) for o in field_.one_of] == [("sqlite", "sqlite"), ("postgres", "postgres")]
    assert mode.requested_schema.required == ["answer"]
    assert client.permissions == []


async def test_a_form_without_options_is_free_text(tmp_path, model):
    client = FormClient(forms=["the one on port 5433"])
    async with running_acp(tmp_path, model, client) as acp:
        answered = await asked(acp, {"question": "Which server?"}, forms=True)
    assert answered == "The user answered: the one on port 5433"
    [(_, mode)] = client.asked
    assert mode.requested_schema.properties["answer"].one_of is None


async def test_a_declined_or_cancelled_form_is_no_answer(tmp_path, model):
    client = FormClient(forms=["decline", "cancel"])
    async with running_acp(tmp_path, model, client) as acp:
        assert (await asked(acp, QUESTION, forms=True)).startswith(NOBODY)
        acp.model.requests.clear()
        assert (await asked(acp, QUESTION, forms=True)).startswith(NOBODY)


async def test_without_forms_the_question_is_a_permission_request_whose_chosen_option_is_the_answer(acp):
    acp.client.answers.append("1")
    answered = await asked(acp, QUESTION)
    assert answered == "The user answered: postgres"
    [(call, options)] = acp.client.permissions
    assert call.title == "Which database?" and call.tool_call_id == acp.client.of("tool_call")[0].tool_call_id
    assert [(o.option_id, o.name, o.kind) for o in options] == [
        ("0", "sqlite", "allow_once"), ("1", "postgres", "allow_once"), ("decline", "Decline to answer", "reject_once"),
    ]


async def test_a_declined_or_cancelled_permission_question_is_no_answer(acp):
    acp.client.answers.append("decline")
    assert (await asked(acp, QUESTION)).startswith(NOBODY)

    acp.model.requests.clear()
    acp.client.answers.append("hold")  # answered cancelled once the client is told to
    acp.client.cancelled.set()
    assert (await asked(acp, QUESTION)).startswith(NOBODY)


async def test_without_forms_a_question_without_options_is_not_put(acp):
    assert (await asyncio.wait_for(asked(acp, {"question": "Which server?"}), 30)).startswith(NOBODY)
    assert acp.client.permissions == []
