"""``bash`` in the client's terminal (``terminal/*``): the SDK's client side runs each terminal as
a real subprocess; Totem keeps the permission, the timeout, the output and the abort."""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import subprocess
from dataclasses import dataclass, field
from typing import Any

import pytest_asyncio
from acp import RequestError
from acp.schema import (
    CreateTerminalResponse,
    KillTerminalResponse,
    ReleaseTerminalResponse,
    TerminalExitStatus,
    TerminalOutputResponse,
    WaitForTerminalExitResponse,
)

from tests.acp.conftest import Client, eventually, running_acp
from tests.acp.test_cancel import processes_with
from tests.support.model_server import text_reply, tool_reply


@dataclass
class Terminal:
    argv: list[str]
    cwd: str | None
    limit: int | None
    process: asyncio.subprocess.Process
    output: bytearray = field(default_factory=bytearray)
    reading: asyncio.Task | None = None

    def status(self) -> TerminalExitStatus | None:
        code = self.process.returncode
        if code is None:
            return None
        if code < 0:
            return TerminalExitStatus(signal=signal.Signals(-code).name)
        return TerminalExitStatus(exit_code=code)


@dataclass
class TerminalClient(Client):
    """A client that offers ``terminal``: each ``terminal/create`` starts the command as a
    subprocess of the test (its own process group), as an editor runs it in its terminal."""

    terminals: dict[str, Terminal] = field(default_factory=dict)
    calls: list[tuple[str, str]] = field(default_factory=list)  # (method, terminal id), in order
    refuse: bool = False  # terminal/create answered with an error

    async def create_terminal(
        self, session_id: str, command: str, args: list[str] | None = None, env: Any = None, cwd: str | None = None,
        output_byte_limit: int | None = None, **_: Any,
    ) -> CreateTerminalResponse:
        if self.refuse:
            raise RequestError.internal_error({"message": "no terminal for you"})
        process = await asyncio.create_subprocess_exec(
            command, *(args or []), cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        terminal_id = f"term-{len(self.terminals) + 1}"
        terminal = Terminal([command, *(args or [])], cwd, output_byte_limit, process)
        terminal.reading = asyncio.ensure_future(self._read(terminal))
        self.terminals[terminal_id] = terminal
        self.calls.append(("create", terminal_id))
        return CreateTerminalResponse(terminal_id=terminal_id)

    async def _read(self, terminal: Terminal) -> None:
        assert terminal.process.stdout is not None
        while chunk := await terminal.process.stdout.read(4096):
            terminal.output += chunk

    async def terminal_output(self, session_id: str, terminal_id: str, **_: Any) -> TerminalOutputResponse:
        terminal = self.terminals[terminal_id]
        self.calls.append(("output", terminal_id))
        data, truncated = bytes(terminal.output), False
        if terminal.limit is not None and len(data) > terminal.limit:
            data, truncated = data[-terminal.limit:], True
        return TerminalOutputResponse(output=data.decode(errors="replace"), truncated=truncated, exit_status=terminal.status())

    async def wait_for_terminal_exit(self, session_id: str, terminal_id: str, **_: Any) -> WaitForTerminalExitResponse:
        terminal = self.terminals[terminal_id]
        await terminal.process.wait()
        if terminal.reading is not None:
            await terminal.reading
        status = terminal.status()
        return WaitForTerminalExitResponse(exit_code=status.exit_code, signal=status.signal)

    async def kill_terminal(self, session_id: str, terminal_id: str, **_: Any) -> KillTerminalResponse:
        self.calls.append(("kill", terminal_id))
        await self._kill(self.terminals[terminal_id])
        return KillTerminalResponse()

    async def release_terminal(self, session_id: str, terminal_id: str, **_: Any) -> ReleaseTerminalResponse:
        self.calls.append(("release", terminal_id))
        await self._kill(self.terminals[terminal_id])
        return ReleaseTerminalResponse()

    async def _kill(self, terminal: Terminal) -> None:
        if terminal.process.returncode is None:
            try:
                os.killpg(terminal.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            await terminal.process.wait()


@pytest_asyncio.fixture
async def with_terminal(tmp_path, model):
    # Without the sandbox: a sandboxed command stays in Totem (the last test here).
    async with running_acp(tmp_path, model, TerminalClient(), config='sandbox = "never"') as running:
        yield running


def text(value: str) -> list[dict]:
    return [{"type": "text", "text": value}]


def sent_to_model(acp, index: int) -> str:
    return json.dumps(acp.model.requests[index]["messages"])


async def test_bash_runs_in_the_clients_terminal_shown_in_its_call_and_its_output_reaches_the_model(with_terminal):
    acp = with_terminal
    await acp.initialize(terminal=True)
    session_id = await acp.new_session()
    acp.model.enqueue(tool_reply([("bash", {"command": "echo terminal-$((6*7))"})]))
    acp.model.enqueue(text_reply("It printed 42."))
    acp.client.answers.append("allow_once")

    response = await acp.conn.prompt(session_id=session_id, prompt=text("compute it"))

    assert response.stop_reason == "end_turn"
    [(asked, _)] = acp.client.permissions  # Totem asked before the terminal was created
    assert asked.content[0].content.text == "$ echo terminal-$((6*7))"
    [terminal] = acp.client.terminals.values()
    assert terminal.argv[1:] == ["-c", "echo terminal-$((6*7))"] and terminal.cwd == str(acp.project)  # as typed
    assert terminal.limit and terminal.limit > 0  # Totem's cap, in bytes
    assert [method for method, _ in acp.client.calls] == ["create", "output", "release"]
    shown = [u for u in acp.client.of("tool_call_update") if u.content and u.content[0].type == "terminal"]
    assert [u.content[0].terminal_id for u in shown] == ["term-1", "term-1"]  # live, then at its end
    ended = acp.client.of("tool_call_update")[-1]
    assert ended.status == "completed" and "terminal-42" in ended.raw_output["output"]
    assert "terminal-42" in sent_to_model(acp, 1)


async def test_a_rejected_command_never_reaches_the_clients_terminal(with_terminal):
    acp = with_terminal
    await acp.initialize(terminal=True)
    session_id = await acp.new_session()
    acp.model.enqueue(tool_reply([("bash", {"command": "touch made-by-terminal"})]))
    acp.model.enqueue(text_reply("Not run, then."))
    acp.client.answers.append("reject_once")

    assert (await acp.conn.prompt(session_id=session_id, prompt=text("touch it"))).stop_reason == "end_turn"
    assert acp.client.permissions and acp.client.terminals == {}
    assert not (acp.project / "made-by-terminal").exists()


async def test_the_timeout_is_totems_and_kills_the_command_in_the_clients_terminal(with_terminal):
    acp = with_terminal
    marker = f"44.{random.randint(10**5, 10**6)}"
    await acp.initialize(terminal=True)
    session_id = await acp.new_session()
    acp.model.enqueue(tool_reply([("bash", {"command": f"echo started; sleep {marker}", "timeout": 1})]))
    acp.model.enqueue(text_reply("It hung."))
    acp.client.answers.append("allow_once")

    assert (await acp.conn.prompt(session_id=session_id, prompt=text("run it"))).stop_reason == "end_turn"
    assert [method for method, _ in acp.client.calls] == ["create", "kill", "output", "release"]
    assert not processes_with(f"sleep {marker}")
    told = sent_to_model(acp, 1)
    assert "started" in told and "Timed out after 1 s" in told


async def test_cancel_kills_the_command_running_in_the_clients_terminal(with_terminal):
    acp = with_terminal
    marker = f"45.{random.randint(10**5, 10**6)}"
    await acp.initialize(terminal=True)
    session_id = await acp.new_session()
    acp.model.enqueue(tool_reply([("bash", {"command": f"sleep {marker}"})]))
    acp.client.answers.append("allow_once")
    prompt = asyncio.ensure_future(acp.conn.prompt(session_id=session_id, prompt=text("run it")))
    await eventually(lambda: processes_with(f"sleep {marker}"))
    assert acp.client.terminals

    await acp.conn.cancel(session_id=session_id)

    assert (await asyncio.wait_for(prompt, 30)).stop_reason == "cancelled"
    await eventually(lambda: ("release", "term-1") in acp.client.calls)
    assert ("kill", "term-1") in acp.client.calls
    assert not processes_with(f"sleep {marker}")
    ended = acp.client.of("tool_call_update")[-1]
    assert ended.status == "failed" and ended.raw_output["status"] == "interrupted"


async def test_with_the_key_off_bash_runs_in_totem_though_the_client_offers_terminals(tmp_path, model):
    async with running_acp(tmp_path, model, TerminalClient(), config="acp_client_terminal = false") as acp:
        await acp.initialize(terminal=True)
        session_id = await acp.new_session()
        acp.model.enqueue(tool_reply([("bash", {"command": "echo totem-$((6*7))"})]))
        acp.model.enqueue(text_reply("It printed 42."))
        acp.client.answers.append("allow_once")

        assert (await acp.conn.prompt(session_id=session_id, prompt=text("compute it"))).stop_reason == "end_turn"

        assert acp.client.terminals == {} and acp.client.calls == []
        ended = acp.client.of("tool_call_update")[-1]
        assert ended.status == "completed" and ended.content[0].type == "content"
        assert "totem-42" in ended.content[0].content.text
        assert "totem-42" in sent_to_model(acp, 1)


async def test_a_terminal_the_client_refuses_fails_the_call_and_is_not_run_in_totem(tmp_path, model):
    async with running_acp(tmp_path, model, TerminalClient(refuse=True), config='sandbox = "never"') as acp:
        await acp.initialize(terminal=True)
        session_id = await acp.new_session()
        acp.model.enqueue(tool_reply([("bash", {"command": "touch made-by-totem"})]))
        acp.model.enqueue(text_reply("It did not run."))
        acp.client.answers.append("allow_once")

        assert (await acp.conn.prompt(session_id=session_id, prompt=text("touch it"))).stop_reason == "end_turn"

        ended = acp.client.of("tool_call_update")[-1]
        assert ended.status == "failed" and "did not start the command" in ended.raw_output["output"]
        assert not (acp.project / "made-by-totem").exists()


async def test_a_sandboxed_command_stays_in_totems_sandbox_and_never_reaches_the_clients_terminal(tmp_path, model):
    async with running_acp(tmp_path, model, TerminalClient(), config='sandbox = "always"') as acp:
        await acp.initialize(terminal=True)
        session_id = await acp.new_session()
        acp.model.enqueue(tool_reply([("bash", {"command": "echo boxed-$((6*7)) > made.txt; cat made.txt"})]))
        acp.model.enqueue(text_reply("Done."))
        acp.client.answers.append("allow_once")
        response = await acp.conn.prompt(session_id=session_id, prompt=text("make it"))
        assert response.stop_reason == "end_turn"
        assert acp.client.terminals == {} and acp.client.calls == []  # no terminal/create at all
        ended = acp.client.of("tool_call_update")[-1]
        assert ended.status == "completed" and "boxed-42" in ended.raw_output["output"]
        assert (acp.project / "made.txt").read_text() == "boxed-42\n"  # taken in from the overlay
