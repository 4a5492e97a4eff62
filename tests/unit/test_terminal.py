"""Interactive terminals: the registry (terminals.py) and the terminal tool (tools/terminal.py)
over a real pseudo-terminal, real programs, the process table read from /proc."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.support.turns import RecordingFrontEnd, Scene, calls
from tests.unit.test_jobs import none_left, running_in
from totem_engine.api import events as ev
from totem_engine.config import Config
from totem_engine.permissions import Policy
from totem_engine.terminals import MAX_OPEN, TerminalRefused, Terminals, keystrokes
from totem_engine.tools.base import ToolContext
from totem_engine.tools.bash import command_permission
from totem_engine.tools.registry import builtin_tools, surface
from totem_engine.tools.terminal import TerminalInput, TerminalTool
from totem_engine.vocab.tools import ToolError
from totem_engine.workspace.files import DiskWorkspace


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path.resolve()


@pytest.fixture
async def terminals(root: Path):
    registry = Terminals(root)
    yield registry
    await registry.aclose()


def context(root: Path) -> ToolContext:
    return ToolContext(root=root, workspace=DiskWorkspace(), session_id="s1", call_id="c1")


async def call(terminals: Terminals, root: Path, **args) -> str:
    tool = TerminalTool(terminals)
    action = await tool.prepare(TerminalInput.model_validate(args), context(root))
    return (await action.apply(context(root))).output


def test_keys_by_name_become_what_a_terminal_sends():
    assert keystrokes("1+1\n") == "1+1\r"
    assert keystrokes("y<Enter>") == "y\r"
    assert keystrokes("<C-c><c-d><Tab><Esc><Up><Backspace>") == "\x03\x04\t\x1b\x1b[A\x7f"
    # An unknown name and a lone bracket are typed as they are.
    assert keystrokes("<nope> a < b") == "<nope> a < b"


async def test_a_repl_reads_what_is_typed_and_the_screen_shows_its_answer(terminals, root):
    started = await call(terminals, root, action="start", command="python3 -i -q")
    assert started.splitlines()[0] == ">>>" and "[term1 running; cursor at line 1, column 5]" in started
    answered = await call(terminals, root, action="send", id="term1", keys="1+1\n")
    assert answered.splitlines()[:3] == [">>> 1+1", "2", ">>>"]
    # The program has a terminal of its own: stdin is a tty, and it leads its own process group.
    await call(terminals, root, action="send", id="term1", keys="import os; print(os.isatty(0), os.getpgrp() == os.getsid(0))\n")
    assert "True True" in await call(terminals, root, action="read", id="term1")
    ended = await call(terminals, root, action="send", id="term1", keys="<C-d>")
    assert "[term1 exited with code 0" in ended
    with pytest.raises(ToolError, match="term1 exited with code 0: there is nothing to send keys to"):
        await call(terminals, root, action="send", id="term1", keys="2+2\n")


async def test_a_prompt_is_answered_and_a_full_screen_program_draws_where_it_says(terminals, root):
    await call(terminals, root, action="start", command="read -p 'Continue? [y/n] ' a; echo got=$a; sleep 300")
    assert "got=y" in await call(terminals, root, action="send", id="term1", keys="y<Enter>")
    curses = "import curses; curses.wrapper(lambda s: (s.addstr(5, 10, 'drawn by curses'), s.refresh(), s.getch()))"
    drawn = await call(terminals, root, action="start", command=f'python3 -c "{curses}"')
    assert drawn.splitlines()[5] == " " * 10 + "drawn by curses" and "term2 running; cursor at line 6, column 26" in drawn
    listed = await call(terminals, root, action="list")
    assert "term1 running" in listed and "term2 running" in listed and "read -p" in listed
    stopped = await call(terminals, root, action="stop", id="term1")
    assert "term1 exited with code -15" in stopped
    await terminals.aclose()
    assert await none_left(root)


async def test_start_is_asked_like_bash_and_the_rest_is_allowed(terminals, root):
    tool = TerminalTool(terminals)
    start = await tool.prepare(TerminalInput(action="start", command="npm init && rm -rf build"), context(root))
    bash = command_permission("npm init && rm -rf build", root)
    assert (start.permission, start.patterns, start.always_pattern) == ("bash", bash["patterns"], bash["always_pattern"])
    assert start.patterns == ["npm init", "rm -rf build"]
    send = await tool.prepare(TerminalInput(action="send", id="term1", keys="y"), context(root))
    assert Policy().decide(send.permission, send.patterns, changes=False, safe=None).action == "allow"
    with pytest.raises(ToolError, match="send needs keys"):
        await tool.prepare(TerminalInput(action="send", id="term1"), context(root))
    with pytest.raises(ToolError, match="no terminal 'term9'"):
        await call(terminals, root, action="read", id="term9")


async def test_at_most_a_few_terminals_are_open_at_once(terminals, root):
    for _ in range(MAX_OPEN):
        await terminals.start("s1", "sleep 300")
    with pytest.raises(TerminalRefused, match=f"{MAX_OPEN} terminals are open already"):
        await terminals.start("s1", "sleep 300")


def test_the_tool_is_in_the_full_surface_only(root):
    tools = builtin_tools(terminals=Terminals(root))
    assert "terminal" in tools and "terminal" not in builtin_tools()
    assert "terminal" not in surface(tools, 32_000, "standard")[0]


class ReplStarted(RecordingFrontEnd):
    def __init__(self):
        super().__init__()
        self.started = anyio.Event()

    async def emit(self, event: ev.Event) -> None:
        await super().emit(event)
        if isinstance(event, ev.ToolStart) and event.input.get("action") == "read":
            self.started.set()


async def aborted_during_read(scene: Scene) -> None:
    scene.provider.enqueue(
        # It never stops printing, so the read waits (for its timeout) until the abort.
        calls(("terminal", {"action": "start", "command": "while true; do echo tick; sleep 0.1; done", "timeout": 1})),
        calls(("terminal", {"action": "read", "id": "term1", "timeout": 600})),
    )
    front = ReplStarted()
    turn = await scene.turn("run it", front)
    with anyio.fail_after(20):
        async with anyio.create_task_group() as group:
            group.start_soon(turn.run)
            await front.started.wait()
            assert running_in(scene.root)
            turn.abort()
    assert front.of(ev.TurnEnd)[0].stop_reason == "aborted"


async def test_an_aborted_turn_kills_its_terminals(tmp_path):
    scene = Scene(tmp_path, jobs=True)
    try:
        await aborted_during_read(scene)
        assert await none_left(scene.root)
    finally:
        await scene.close()


async def test_terminals_survive_an_abort_when_the_config_says_so_and_die_with_the_runtime(tmp_path):
    scene = Scene(tmp_path, jobs=True, config=Config(jobs_survive_abort=True))
    try:
        await aborted_during_read(scene)
        assert running_in(scene.root)
    finally:
        await scene.close()
    assert await none_left(scene.root)
