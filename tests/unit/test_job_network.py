"""A job in the sandbox with no network (``sandbox_network`` off, sandbox/session.py): its server
answers the session's later commands on loopback, nothing outside the sandbox reaches it, and the
result the model reads and the ``job`` event say so; with the network allowed, the host reaches it."""

from __future__ import annotations

import socket
import urllib.request
from pathlib import Path

import anyio
import pytest

from tests.unit.test_jobs import job, output_until
from totem_engine.api import events as ev
from totem_engine.command_changes import CommandChanges, SandboxSettings
from totem_engine.jobs import Jobs
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
    for _ in range(100):
        if (found := status(url)) == 200:
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
            f"python3 -c \"import time, urllib.request\nfor _ in range(100):\n try: print('inside', urllib.request.urlopen('{url}').status); break\n"
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
