"""A job in the sandbox with no network (``sandbox_network`` off, sandbox/session.py): its server
answers the session's later commands on loopback, nothing outside the sandbox reaches it, and the
result the model reads and the ``job`` event say so; with the network allowed, the host reaches it.
A job whose start the user allowed with the loopback forward (tools/job.py ``FORWARD``) is reached
on the host's 127.0.0.1 until it stops (sandbox/forward.py)."""

from __future__ import annotations

import socket
import urllib.request
from pathlib import Path

import anyio
import httpx
import pytest

from tests.unit.test_jobs import job, output_until
from totem_engine.api import events as ev
from totem_engine.command_changes import CommandChanges, SandboxSettings
from totem_engine.jobs import Jobs
from totem_engine.sandbox import forward
from totem_engine.tools.job import FORWARD, JobTool
from totem_engine.tools.base import ToolContext
from totem_engine.workspace.files import DiskWorkspace


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=1) as answer:
            return answer.status
    except OSError:
        return 0


async def until_answered(url: str) -> int:
    """200 once the server answers (a job's python starts slowly on a loaded machine), else 0."""
    for _ in range(300):
        if (found := await anyio.to_thread.run_sync(status, url)) == 200:
            return found
        await anyio.sleep(0.1)
    return 0


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path


@pytest.mark.parametrize("network", [False, True])
async def test_a_jobs_server_is_reached_from_the_host_only_with_the_network(tmp_path, network):
    said: list[ev.Event] = []

    async def publish(event: ev.Event) -> None:
        said.append(event)

    ctx = ToolContext(root=tmp_path, workspace=DiskWorkspace(), session_id="s1", call_id="c1", publish=publish)
    commands = CommandChanges(tmp_path, max_file_bytes=100_000, sandbox=SandboxSettings(mode="always", network=network), watch=False)
    jobs = Jobs(tmp_path, commands)
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    try:
        started = await job(jobs, ctx, action="start", command=f"python3 -m http.server {port} --bind 127.0.0.1")
        (event,) = [e for e in said if isinstance(e, ev.Job)]
        assert event.offline is not network
        inside = (
            f"python3 -c \"import time, urllib.request\nfor _ in range(300):\n try: print('inside', urllib.request.urlopen('{url}').status); break\n"
            f" except OSError: time.sleep(0.1)\""
        )
        await job(jobs, ctx, action="start", command=inside)
        assert "inside 200" in await output_until(jobs, ctx, "job2", "inside 200")  # the session's loopback
        if network:
            assert "no network" not in started.output and started.summary == "started job1"
            assert await until_answered(url) == 200
        else:
            assert "in the sandbox with no network: a server it starts answers this session's later commands" in started.output
            assert started.summary == "started job1 (no network)"
            assert status(url) == 0  # the host's loopback is not the sandbox's
            listed = await job(jobs, ctx, action="list")
            assert "job1 running with no network (sandbox)" in listed.output
    finally:
        await jobs.aclose()
        await commands.aclose()


def relays(port: int) -> list[int]:
    """The processes relaying a forwarded connection to ``port`` (sandbox/forward.py)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if forward.RELAY.encode() in argv and str(port).encode() in argv:
            found.append(int(entry.name))
    return found


@pytest.mark.parametrize("chosen", [True, False])
async def test_a_job_granted_the_forward_is_reached_on_the_hosts_loopback_until_it_stops(tmp_path, chosen):
    said: list[ev.Event] = []

    async def publish(event: ev.Event) -> None:
        said.append(event)

    commands = CommandChanges(tmp_path, max_file_bytes=100_000, sandbox=SandboxSettings(mode="always"), watch=False)
    ctx = ToolContext(
        root=tmp_path, workspace=DiskWorkspace(), session_id="s1", call_id="c1", publish=publish, commands=commands,
    )
    jobs = Jobs(tmp_path, commands)
    tool = JobTool(jobs)
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    try:
        action = await tool.prepare(tool.Input(action="start", command=f"python3 -m http.server {port} --bind 127.0.0.1"), ctx)
        assert action.choices == (FORWARD,)  # the question offers it: the job would have no network
        assert "127.0.0.1 only" in FORWARD.label and "still has no outside network" in FORWARD.label
        action.chosen = FORWARD.id if chosen else None
        started = await action.apply(ctx)
        async with httpx.AsyncClient() as client:
            if not chosen:
                await output_until(jobs, ctx, "job1", "Serving HTTP")
                await anyio.sleep(0.5)  # a forward would have opened by now
                with pytest.raises(httpx.ConnectError):
                    await client.get(url)
                assert "forwarded" not in (await job(jobs, ctx, action="list")).output
                return
            assert "the user chose to forward the ports it listens on" in started.output
            with anyio.fail_after(20):
                while True:
                    try:
                        answer = await client.get(url, timeout=2)
                        break
                    except httpx.TransportError:
                        await anyio.sleep(0.1)
            assert answer.status_code == 200 and "Directory listing" in answer.text
            listed = await job(jobs, ctx, action="list")
            assert f"job1 running with no network (sandbox); ports forwarded to 127.0.0.1: {port}" in listed.output
            events = [e for e in said if isinstance(e, ev.Job)]
            assert events[-1].forwarded == [port] and events[-1].offline
            # The job still reaches nothing outside: only the host's loopback reaches its server.
            await job(jobs, ctx, action="stop", id="job1")
            assert relays(port) == []
            with pytest.raises(httpx.ConnectError):
                await client.get(url)
    finally:
        await jobs.aclose()
        await commands.aclose()
