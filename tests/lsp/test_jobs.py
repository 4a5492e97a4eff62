"""Background jobs over the real language server: ``totem/jobStop`` ends a job a turn left
running, and the server's shutdown kills any job still running (issue 19)."""

from __future__ import annotations

import random

import pytest
from pygls.exceptions import JsonRpcException

from tests.lsp.conftest import start_editor
from tests.lsp.test_chat import eventually
from tests.support.model_server import text_reply, tool_reply
from tests.support.processes import processes_with


def started_job(editor, marker: str) -> None:
    """A turn that starts ``sleep <marker>`` as a job and ends with it running."""
    editor.model.enqueue(tool_reply([("job", {"action": "start", "command": f"sleep {marker}"})]))
    editor.model.enqueue(text_reply("It runs in the background."))
    editor.permission_answers.append({"outcome": "allow_once"})


async def test_job_stop_ends_a_job_the_turn_left_running(editor):
    marker = f"41.{random.randint(10**5, 10**6)}"  # unique, so no other run's process is mistaken for ours
    started_job(editor, marker)
    result = await editor.request("totem/chat", {"text": "start it"})

    assert result.stopReason == "finished"
    assert editor.permissions[0]["permission"] == "bash"  # asked like a bash call
    assert processes_with(f"sleep {marker}")
    running = editor.of("job")
    assert [(e["jobId"], e["state"], e["exitCode"]) for e in running] == [("job1", "running", None)]
    assert running[0]["command"] == f"sleep {marker}" and running[0]["sessionId"] == result.sessionId

    stopped = await editor.request("totem/jobStop", {"sessionId": result.sessionId, "jobId": "job1"})
    assert (stopped.jobId, stopped.state, stopped.exitCode) == ("job1", "stopped", -15)
    assert not processes_with(f"sleep {marker}")
    await eventually(lambda: len(editor.of("job")) == 2)
    assert editor.of("job")[1]["state"] == "stopped"

    with pytest.raises(JsonRpcException, match="no job 'job9'"):
        await editor.request("totem/jobStop", {"sessionId": result.sessionId, "jobId": "job9"})
    with pytest.raises(JsonRpcException, match="jobId"):
        await editor.request("totem/jobStop", {"sessionId": result.sessionId})


async def test_shutdown_kills_a_job_still_running(tmp_path, model):
    editor = await start_editor(tmp_path, model, totem={"permission": True, "events": True})
    marker = f"43.{random.randint(10**5, 10**6)}"
    try:
        started_job(editor, marker)
        result = await editor.request("totem/chat", {"text": "start it"})
        assert result.stopReason == "finished" and processes_with(f"sleep {marker}")
    finally:
        await editor.client.shutdown_session()
    # The job has a process group of its own: the server's exit alone would not end it.
    await eventually(lambda: not processes_with(f"sleep {marker}"), timeout=10)
