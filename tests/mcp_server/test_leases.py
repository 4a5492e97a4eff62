"""One process runs a session at a time, across front ends: ``totem mcp serve`` refuses a session
``totem run`` is running and aborts that turn through the store; ``totem run`` refuses a session
the MCP server is running; a killed holder's session is taken over."""

from __future__ import annotations

import json
import subprocess

import anyio

from tests.mcp_server.conftest import error_text, result
from tests.support.model_server import Reply, text_reply


def _held_reply() -> Reply:
    """Two text deltas, then the stream stays open (the turn is mid-answer until aborted)."""
    reply = text_reply("partial answer that never ends", pieces=2)
    reply.events = reply.events[:3]
    reply.hold = 60
    return reply


def _streaming_run(served) -> tuple[subprocess.Popen, str]:
    """``totem run --json`` streaming a held answer; its process and session id."""
    served.server.enqueue(_held_reply())
    proc = subprocess.Popen(
        served.command("run", "--cwd", str(served.project), "--config", str(served.config), "--json", "tell me"),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, env=served.env,
    )
    assert proc.stdout is not None
    deltas = 0
    for line in proc.stdout:
        event = json.loads(line)
        deltas += event["kind"] == "textDelta"
        if deltas == 2:
            return proc, event["sessionId"]
    raise AssertionError(proc.stderr.read() if proc.stderr else "totem run ended")


async def test_a_session_totem_run_is_running_is_refused_and_its_turn_aborted_through_the_store(served):
    proc, session_id = _streaming_run(served)
    try:
        async with served.stdio() as client:
            listed = result(await client.call_tool("list_sessions", {}))["sessions"]
            assert [s["running"] for s in listed] == [{"holder": "totem run", "pid": proc.pid}]
            refused = error_text(await client.call_tool("send_prompt", {"session_id": session_id, "prompt": "me too"}))
            assert f"is running a turn in totem run (pid {proc.pid})" in refused
            assert f"pid {proc.pid}" in error_text(await client.call_tool("undo_turn", {"session_id": session_id}))

            aborted = result(await client.call_tool("abort_turn", {"session_id": session_id}))
            assert aborted == {"session_id": session_id, "running": True, "holder": "totem run", "pid": proc.pid, "stopped": True}
            assert result(await client.call_tool("list_sessions", {}))["sessions"][0]["running"] is None
        stdout, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130
    end = json.loads(stdout.splitlines()[-1])
    assert end["kind"] == "turnEnd" and end["stopReason"] == "aborted" and end["text"] == "partial answer that never ends"
    notices = [p for m in served.export(session_id)["messages"] for p in m["parts"] if p["type"] == "notice"]
    assert notices[-1]["data"]["stopReason"] == "aborted"
    assert len(served.server.requests) == 1  # the refused prompt never reached the model


async def test_totem_run_refuses_a_session_the_mcp_server_is_running(served):
    served.server.enqueue(_held_reply())
    async with served.stdio() as client:
        session_id = result(await client.call_tool("start_session", {}))["session_id"]
        answers = []

        async def prompt() -> None:
            answers.append(result(await client.call_tool("send_prompt", {"session_id": session_id, "prompt": "tell me"})))

        async with anyio.create_task_group() as group:
            group.start_soon(prompt)
            while not result(await client.call_tool("list_sessions", {}))["sessions"][0]["running"]:
                await anyio.sleep(0.05)
            second = await anyio.to_thread.run_sync(
                lambda: served.run("run", "--cwd", str(served.project), "--config", str(served.config), "--session", session_id, "again")
            )
            aborted = result(await client.call_tool("abort_turn", {"session_id": session_id}))
    assert second.code == 2
    assert f"session {session_id} is running a turn in totem mcp serve" in second.stderr
    assert aborted["holder"] == "totem mcp serve" and aborted["stopped"]
    assert answers[0]["stop_reason"] == "aborted" and answers[0]["text"] == "partial answer that never ends"
    assert len(served.server.requests) == 1


async def test_a_killed_holders_session_is_taken_over(served):
    proc, session_id = _streaming_run(served)
    proc.kill()
    proc.wait(timeout=10)
    served.server.enqueue(text_reply("Picked up after the crash."))
    async with served.stdio() as client:
        assert result(await client.call_tool("list_sessions", {}))["sessions"][0]["running"] is None
        answer = result(await client.call_tool("send_prompt", {"session_id": session_id, "prompt": "go on"}))
    assert answer["text"] == "Picked up after the crash." and answer["stop_reason"] == "finished"
