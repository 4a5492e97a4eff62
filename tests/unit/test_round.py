"""The tool round (turn/calls.py) in process, against a host of its own that is not a Turn (what
``turn/host.py`` ``RoundHost`` asks for): the ``Round`` it returns says what ran, changed and was
flagged; read-only calls run at the same time; a rejected call is denied; a guard's reason stops
the round."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import anyio
import pytest

from tests.support.turns import RecordingFrontEnd, Scene
from totem_engine.api import events as ev
from totem_engine.checks.python import PythonChecker
from totem_engine.kept_files import FILE_LIMIT, proposed_files
from totem_engine.providers.capabilities import CapabilityRecord
from totem_engine.session_state import SessionState
from totem_engine.tools.base import Action, Tool, ToolContext, ToolInput, ToolResult
from totem_engine.tools.registry import builtin_tools
from totem_engine.turn.hook_points import HookPoints
from totem_engine.turn.calls import ToolCalls
from totem_engine.turn.guards import MAX_REJECTIONS
from totem_engine.turn.terms import TurnOptions
from totem_engine.turn.policy import DefaultPolicy
from totem_engine.vocab.tools import ToolCall


@dataclass
class Host:
    """A round's turn, reduced to what the round uses."""

    agent: object
    frontend: RecordingFrontEnd
    session_id: str
    turn_id: str = "trn_test"
    options: TurnOptions = field(default_factory=TurnOptions)
    state: SessionState = field(default_factory=SessionState)
    tools: dict = field(default_factory=builtin_tools)
    checkers: list = field(default_factory=list)
    record: CapabilityRecord = field(default_factory=CapabilityRecord)
    policy: DefaultPolicy = field(default_factory=DefaultPolicy)
    text: str = ""
    typed: str | None = None

    def __post_init__(self) -> None:
        self.hooks = HookPoints(self)  # the agent's hooks: none configured

    async def emit(self, event: ev.Event) -> None:
        await self.frontend.emit(event)

    async def notice(self, message: str, *, level: str = "info") -> None:
        await self.emit(ev.Notice(session_id=self.session_id, level=level, message=message))


@pytest.fixture
async def scene(tmp_path):
    scene = Scene(tmp_path)
    scene.session_id = (await scene.store.create_session(cwd=str(scene.root), model="scripted/m")).id
    yield scene
    await scene.close()


def call(n: int, tool: str, **arguments) -> ToolCall:
    return ToolCall(id=f"call_{n}", name=tool, arguments=json.dumps(arguments))


async def run_round(scene: Scene, host: Host, *wanted: ToolCall):
    message_id = await scene.store.add_message(scene.session_id, "assistant", turn_id=host.turn_id)
    return await ToolCalls(host, session_rules=[]).run(list(wanted), message_id)


async def test_a_round_that_writes_says_what_it_changed_and_what_the_checks_flagged(scene):
    host = Host(scene.agent, RecordingFrontEnd(), scene.session_id, checkers=[PythonChecker()])
    round_ = await run_round(
        scene, host, call(1, "write", path="good.py", content="x = 1\n"), call(2, "write", path="bad.py", content="y = missing\n")
    )

    assert round_.ok and not round_.clean and round_.stop is None
    assert round_.changed == ("good.py", "bad.py") and round_.flagged == ("bad.py",)
    assert [outcome.status for outcome in round_.calls] == ["ok", "ok"]
    assert "undefined name 'missing'" in round_.last.output
    assert (scene.root / "bad.py").read_text() == "y = missing\n"
    assert [request.tool for request in host.frontend.asked] == ["write", "write"]


async def test_a_read_only_round_changes_nothing_and_is_new_information(scene):
    (scene.root / "a.txt").write_text("alpha\n")
    host = Host(scene.agent, RecordingFrontEnd(), scene.session_id)
    round_ = await run_round(scene, host, call(1, "read", path="a.txt"))

    assert round_.ok and round_.clean and round_.changed == () and round_.new_information
    assert "alpha" in round_.last.output


class _MeetInput(ToolInput):
    name: str


class _Meet(Tool):
    """A read-only tool whose calls finish only when two of them are running at once."""

    name = "read"
    Input = _MeetInput
    read_only = True

    def __init__(self):
        self.arrived = 0
        self.both = anyio.Event()

    async def prepare(self, args: _MeetInput, ctx: ToolContext) -> Action:
        tool = self

        class Meet(Action):
            async def apply(self, ctx: ToolContext) -> ToolResult:
                tool.arrived += 1
                if tool.arrived == 2:
                    tool.both.set()
                with anyio.fail_after(5):
                    await tool.both.wait()
                return ToolResult(output=f"met {args.name}", summary="met")

        return Meet(title=f"meet {args.name}", permission="read", patterns=[], always_pattern="*")


async def test_the_read_only_calls_of_a_round_run_at_the_same_time(scene):
    host = Host(scene.agent, RecordingFrontEnd(), scene.session_id, tools={"read": _Meet()})
    round_ = await run_round(scene, host, call(1, "read", name="first"), call(2, "read", name="second"))

    assert round_.ok, [outcome.output for outcome in round_.calls]
    assert sorted(outcome.output for outcome in round_.calls) == ["met first", "met second"]


async def test_a_rejected_call_is_denied_and_changes_nothing(scene):
    host = Host(scene.agent, RecordingFrontEnd(outcome="reject_once"), scene.session_id)
    round_ = await run_round(scene, host, call(1, "write", path="a.txt", content="new\n"))

    (outcome,) = round_.calls
    assert outcome.status == "denied" and outcome.output == "The user rejected this action."
    assert not round_.ok and round_.changed == () and round_.stop is None
    assert not (scene.root / "a.txt").exists()
    assert [e.decision for e in host.frontend.of(ev.Permission)] == ["reject"]


async def test_a_guard_stops_the_round_and_its_reason_is_the_rounds(scene):
    host = Host(scene.agent, RecordingFrontEnd(outcome="reject_once"), scene.session_id)
    wanted = [call(n, "write", path=f"f{n}.txt", content="x\n") for n in range(1, MAX_REJECTIONS + 2)]
    round_ = await run_round(scene, host, *wanted)

    assert round_.stop is not None and "rejected or denied" in round_.stop
    assert [outcome.status for outcome in round_.calls] == ["denied"] * MAX_REJECTIONS + ["interrupted"]
    assert round_.last.output.startswith("Not run: ")
    assert len(host.frontend.asked) == MAX_REJECTIONS  # the call after the stop was never asked about


async def test_an_applied_change_keeps_its_files_in_the_stored_part_and_a_large_one_only_its_path(scene):
    (scene.root / "a.txt").write_text("old\n")
    host = Host(scene.agent, RecordingFrontEnd(), scene.session_id)
    big = "x" * FILE_LIMIT + "\n"
    await run_round(
        scene, host, call(0, "read", path="a.txt"), call(1, "write", path="a.txt", content="new\n"),
        call(2, "write", path="big.txt", content=big),
    )
    denied = Host(scene.agent, RecordingFrontEnd(outcome="reject_once"), scene.session_id)
    await run_round(scene, denied, call(3, "write", path="c.txt", content="c\n"))

    await scene.store.deferred(scene.session_id).flush()
    parts = {p.data["callId"]: p.data for m in await scene.store.messages(scene.session_id) for p in m.parts if p.type == "tool"}
    assert parts["call_1"]["files"] == [{"path": "a.txt", "oldText": "old\n", "newText": "new\n"}]
    assert [(f.path, f.old_text, f.new_text) for f in proposed_files(parts["call_1"])] == [("a.txt", "old\n", "new\n")]
    (kept_big,) = parts["call_2"]["files"]
    assert kept_big["path"] == "big.txt" and "oldText" not in kept_big and str(FILE_LIMIT) in kept_big["omitted"]
    assert proposed_files(parts["call_2"]) == []
    assert "files" not in parts["call_3"]  # never applied
