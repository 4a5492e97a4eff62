"""The turn in process (turn/loop.py): a scripted provider, a real store and tools, a recording
front end. A text answer finishes; a tool call runs and its result goes back; an abort stops
the stream and keeps the partial answer; the step limit ends a run; a provider error is retried."""

from __future__ import annotations


import anyio
import pytest

from tests.support.reminder import request_messages
from tests.support.turns import RecordingFrontEnd, Scene, answer, calls
from totem_engine.api import events as ev
from totem_engine.vocab.chat import TextChunk
from totem_engine.providers.errors import ServerError



@pytest.fixture
async def scene(tmp_path):
    scene = Scene(tmp_path)
    yield scene
    await scene.close()


async def test_a_text_answer_finishes_the_turn_and_is_stored(scene):
    scene.provider.enqueue(answer("Hello there.", pieces=3))
    front = RecordingFrontEnd()
    result = await scene.run("say hello", front)

    assert result.stop_reason == "finished" and result.text == "Hello there."
    assert "".join(e.text for e in front.of(ev.TextDelta)) == "Hello there."
    assert [type(e) for e in (front.events[0], front.events[-1])] == [ev.TurnStart, ev.TurnEnd]
    (request,) = scene.provider.requests
    (said,) = request_messages(request)
    assert said.role == "user" and said.text == "say hello"
    assert {spec.name for spec in request.tools} >= {"read", "write", "bash"}  # native tools offered
    stored = await scene.store.messages(scene.session_id)
    texts = [p.data["text"] for m in stored if m.role == "assistant" for p in m.parts if p.type == "text"]
    assert texts == ["Hello there."]
    session = await scene.store.get_session(scene.session_id)
    assert session.title is None  # a session is titled when it is made (Runtime.new_session), never by a turn
    assert session.meta["totaljs"] is not None  # the turn saved what it decided for the session


async def test_a_tool_call_runs_and_its_result_goes_back_with_the_next_request(scene):
    (scene.root / "data.txt").write_text("forty-two\n")
    scene.provider.enqueue(calls(("read", {"path": "data.txt"})), answer("It says forty-two."))
    front = RecordingFrontEnd()
    result = await scene.run("what is in data.txt?", front)

    assert result.stop_reason == "finished" and result.text == "It says forty-two."
    (end,) = front.of(ev.ToolEnd)
    assert end.tool == "read" and end.status == "ok" and "forty-two" in end.output
    assert front.asked == []  # a read inside the project is allowed without asking
    second = scene.provider.requests[1]
    assert second.messages[-2].role == "assistant" and second.messages[-2].tool_calls[0].name == "read"
    assert second.messages[-1].role == "tool" and "forty-two" in second.messages[-1].text
    assert [e.step for e in front.of(ev.StepEnd)] == [1, 2]


async def test_an_abort_stops_the_stream_and_keeps_what_was_written(scene):
    started = anyio.Event()

    class Hanging:
        kind, name = "openai", "scripted"

        def __init__(self):
            self.requests = []

        async def stream(self, request):
            self.requests.append(request)
            yield TextChunk("Partial answer")
            started.set()
            await anyio.sleep_forever()

        async def models(self):
            return []

        async def aclose(self):
            return None

    hanging = Hanging()
    scene.agent.provider_for = lambda name: hanging
    front = RecordingFrontEnd()
    turn = await scene.turn("write a long essay", front)
    results = []

    async def run():
        results.append(await turn.run())

    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(run)
            await started.wait()
            turn.abort()

    (result,) = results
    assert result.stop_reason == "aborted" and result.text == "Partial answer"
    assert front.of(ev.TurnEnd)[0].stop_reason == "aborted"
    stored = await scene.store.messages(scene.session_id)
    kept = [p.data["text"] for m in stored for p in m.parts if p.type == "text" and m.role == "assistant"]
    assert kept == ["Partial answer"]


async def test_the_step_limit_ends_a_run_that_changes_nothing(scene):
    for n in range(10):
        (scene.root / f"f{n}.txt").write_text(f"content {n}\n")
        scene.provider.enqueue(calls(("read", {"path": f"f{n}.txt"})))
    front = RecordingFrontEnd()
    result = await scene.run("read everything", front, max_steps=10)

    assert result.stop_reason == "step_limit"
    assert "Reached the step limit (10 steps)" in (result.reason or "")
    assert len(scene.provider.requests) == 10 and len(front.of(ev.ToolEnd)) == 10


async def test_a_provider_error_is_retried_and_the_failed_try_discarded(scene):
    scene.provider.enqueue([TextChunk("Half"), ServerError("the server broke")], answer("Whole answer."))
    front = RecordingFrontEnd()
    result = await scene.run("question", front)

    assert result.stop_reason == "finished" and result.text == "Whole answer."
    assert len(scene.provider.requests) == 2
    (discarded,) = front.of(ev.StepDiscarded)
    assert discarded.step == 1 and "the server broke" in discarded.reason
    assert any("Retrying in" in n.message for n in front.of(ev.Notice))
    stored = await scene.store.messages(scene.session_id, include_discarded=True)
    texts = [(p.data["text"], p.discarded) for m in stored for p in m.parts if p.type == "text" and m.role == "assistant"]
    assert texts == [("Half", True), ("Whole answer.", False)]  # the failed try kept, marked


async def test_an_error_that_is_not_transient_ends_the_turn(scene):
    from totem_engine.providers.errors import AuthenticationError

    scene.provider.enqueue([AuthenticationError("bad key")])
    front = RecordingFrontEnd()
    result = await scene.run("question", front)

    assert result.stop_reason == "error" and result.reason == "bad key"
    assert front.of(ev.Error)[0].error_class == "AuthenticationError"
    assert len(scene.provider.requests) == 1
