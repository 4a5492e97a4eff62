"""The small-model policy (turn/small.py) in process: a model with a small window that writes
its calls as text. The files its request names go with the request; a change claimed and not
made is asked for again; a clean change ends the turn once the tests pass; a change that leaves
the tests failing is tried afresh, its files put back."""

from __future__ import annotations

import pytest

from tests.support.turns import SMALL, RecordingFrontEnd, Scene, answer
from totem_engine.api import events as ev
from totem_engine.config import Config
from totem_engine.turn.small import FRESH_TEMPERATURE

CALC = "def add(a, b):\n    return a + b\n"
WITH_MUL = CALC + "\n\ndef mul(a, b):\n    return a * b\n"
BLOCK = f"calc.py\n```python\n{WITH_MUL}```\n"


@pytest.fixture
async def make(tmp_path):
    """A scene of a small model with calc.py in its project and these config values."""
    scenes = []

    def make(**config) -> Scene:
        scene = Scene(tmp_path, record=SMALL, config=Config(**config))
        (scene.root / "calc.py").write_text(CALC)
        scenes.append(scene)
        return scene

    yield make
    for scene in scenes:
        await scene.close()


async def test_the_files_the_request_names_go_with_it_and_the_request_is_small_shaped(make):
    scene = make()
    scene.provider.enqueue(answer("It adds."))
    result = await scene.run("What does calc.py do?")

    assert result.stop_reason == "finished" and result.text == "It adds."
    (request,) = scene.provider.requests
    user = request.messages[-1].text
    assert f"calc.py\n```\n{CALC.rstrip()}\n```" in user and user.endswith("What does calc.py do?")
    assert request.tools == ()  # the calls are taught as text
    assert "alone on a line" in request.system  # ... in the small-model form
    assert request.max_tokens is not None and request.max_tokens < SMALL.context_window


async def test_a_change_claimed_and_not_made_is_asked_for_again(make):
    scene = make()
    scene.provider.enqueue(answer("I added mul to calc.py."), answer("Sorry, I cannot."))
    front = RecordingFrontEnd()
    result = await scene.run("Add mul(a, b) to calc.py", front)

    assert result.stop_reason == "finished" and result.text.endswith("Sorry, I cannot.")
    assert len(scene.provider.requests) == 2
    stored = await scene.store.messages(scene.session_id, include_discarded=True)
    claim = [p for m in stored for p in m.parts if p.type == "text" and p.data["text"] == "I added mul to calc.py."]
    assert [p.discarded for p in claim] == [True]  # kept in the store, out of the history
    asked = scene.provider.requests[1].messages[-1]
    assert asked.role == "user" and "No file has been changed yet. The request is: Add mul(a, b) to calc.py" in asked.text
    assert "The model changed no file; it is asked to make the change." in [n.message for n in front.of(ev.Notice)]
    assert (scene.root / "calc.py").read_text() == CALC


async def test_a_clean_change_ends_the_turn_once_the_tests_pass(make):
    scene = make(test_command="true")
    scene.provider.enqueue(answer(f"I add mul.\n\n{BLOCK}"))
    front = RecordingFrontEnd()
    result = await scene.run("Add mul(a, b) to calc.py", front)

    assert result.stop_reason == "finished"
    assert len(scene.provider.requests) == 1  # no round to restate the change
    assert (scene.root / "calc.py").read_text() == WITH_MUL
    write, tests = front.of(ev.ToolEnd)
    assert write.tool == "write" and write.status == "ok" and write.changed == ["calc.py"]
    assert tests.tool == "bash" and tests.status == "ok" and tests.call_id.startswith("testrun")


async def test_a_change_that_fails_the_tests_is_tried_afresh_with_its_files_put_back(make):
    scene = make(test_command="echo 'calc.py: mul is wrong'; exit 1", fresh_attempts=1)
    scene.provider.enqueue(answer(BLOCK), answer("Done."), answer("I do not know."), answer("Still no."))
    front = RecordingFrontEnd()
    result = await scene.run("Add mul(a, b) to calc.py", front)

    assert result.stop_reason == "finished" and result.text == "I do not know.\n\nStill no."  # the first attempt's is gone
    assert (scene.root / "calc.py").read_text() == CALC  # put back
    notices = [n.message for n in front.of(ev.Notice)]
    assert any("put calc.py back" in n and "attempt 2 of 2" in n for n in notices), notices
    first, told, fresh, _asked_again = scene.provider.requests
    assert "calc.py: mul is wrong" in told.messages[-1].text  # the failure went back to the model first
    assert fresh.temperature == FRESH_TEMPERATURE and fresh.seed == 2
    assert [m.role for m in fresh.messages] == ["user"] and "calc.py\n```" in fresh.messages[0].text  # the files shown again


async def test_the_step_limit_counts_the_models_change_not_the_test_run_after_it(make):
    """The tests Totem runs after a change are a round of their own, which changes nothing; the
    step limit must still see the model's round as the change it was, and extend the run."""
    scene = make(test_command="echo 'calc.py: still failing'; exit 1", fresh_attempts=0)
    scene.provider.enqueue(answer(BLOCK), answer(BLOCK.replace("a * b", "b * a")))
    for n in range(3, 11):
        (scene.root / f"notes{n}.txt").write_text(f"note {n}\n")
        scene.provider.enqueue(answer(f'{{"name": "read", "arguments": {{"path": "notes{n}.txt"}}}}'))
    scene.provider.enqueue(answer("Done."))
    front = RecordingFrontEnd()
    result = await scene.run("Add mul(a, b) to calc.py", front, max_steps=10)

    assert len([e for e in front.of(ev.ToolEnd) if e.call_id.startswith("testrun")]) == 2
    assert any("extension 1 of 3" in n.message for n in front.of(ev.Notice)), [n.message for n in front.of(ev.Notice)]
    assert result.stop_reason == "finished" and len(scene.provider.requests) == 11
