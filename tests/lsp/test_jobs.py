"""Background jobs over the real language server: ``totem/jobStop`` ends a job a turn left
running, and the server's shutdown kills any job still running (issue 19); a sandboxed job's
question offers its ports forwarded to loopback, and that answer forwards them (issue 37)."""

from __future__ import annotations

import random

import httpx
import pytest
from pygls.exceptions import JsonRpcException

from tests.lsp.conftest import start_editor
from tests.lsp.test_chat import eventually
from tests.support.model_server import text_reply, tool_reply
from tests.support.processes import processes_with
from tests.unit.test_job_network import free_port


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


async def test_a_sandboxed_jobs_question_offers_the_loopback_forward_and_the_answer_forwards(tmp_path, model):
    editor = await start_editor(
        tmp_path, model, totem={"permission": True, "events": True}, extra_config='sandbox = "always"\n',
    )
    port = free_port()
    try:
        editor.model.enqueue(tool_reply([("job", {"action": "start", "command": f"python3 -m http.server {port} --bind 127.0.0.1"})]))
        editor.model.enqueue(text_reply("It serves."))
        editor.permission_answers.append({"outcome": "allow_once", "choice": "forward_ports"})
        result = await editor.request("totem/chat", {"text": "serve it"})
        assert result.stopReason == "finished"
        [asked] = editor.permissions
        assert asked["choices"] == [{
            "id": "forward_ports",
            "label": "Allow, and forward its ports to this machine's loopback (127.0.0.1 only; the job still has no outside network)",
        }]
        await eventually(lambda: any(e["forwarded"] == [port] for e in editor.of("job")), timeout=20)
        async with httpx.AsyncClient() as client:
            answer = await client.get(f"http://127.0.0.1:{port}/", timeout=5)
        assert answer.status_code == 200
        await editor.request("totem/jobStop", {"sessionId": result.sessionId, "jobId": "job1"})
        async with httpx.AsyncClient() as client:
            with pytest.raises(httpx.ConnectError):
                await client.get(f"http://127.0.0.1:{port}/", timeout=5)
    finally:
        await editor.client.shutdown_session()


async def test_a_jobs_question_outside_the_sandbox_offers_no_forward(tmp_path, model):
    editor = await start_editor(tmp_path, model, totem={"permission": True, "events": True}, extra_config='sandbox = "never"\n')
    try:
        started_job(editor, f"44.{random.randint(10**5, 10**6)}")
        await editor.request("totem/chat", {"text": "start it"})
        assert "choices" not in editor.permissions[0]
    finally:
        await editor.client.shutdown_session()
