"""Read-only tool calls of one step run together, observed (turn/calls.py ``ToolCalls.run``): two
calls of a test tool that each wait, with a time limit, until both have started. Run together,
both meet; run one after the other, the first gives up alone, so a serial round fails the test
instead of hanging it. The same tool declared as changing runs its calls one after the other."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import ClassVar

import anyio
import pytest

from tests.support.turns import Scene, answer, calls
from totem_engine.tools.base import Action, Tool, ToolContext, ToolInput, ToolResult

WAIT = 5.0  # seconds a call waits for the other before it gives up


class MeetInput(ToolInput):
    name: str


class Rendezvous:
    """Where the calls meet: who has arrived, and when each entered and left."""

    def __init__(self, expected: int, wait: float):
        self.expected, self.wait = expected, wait
        self.arrived = 0
        self.everyone = anyio.Event()
        self.spans: dict[str, tuple[float, float]] = {}

    async def meet(self, name: str) -> str:
        entered = time.monotonic()
        self.arrived += 1
        if self.arrived == self.expected:
            self.everyone.set()
        with anyio.move_on_after(self.wait):
            await self.everyone.wait()
        self.spans[name] = (entered, time.monotonic())
        return "met" if self.everyone.is_set() else "alone"


@dataclass
class MeetAction(Action):
    rendezvous: Rendezvous | None = None
    name: str = ""

    async def apply(self, ctx: ToolContext) -> ToolResult:
        assert self.rendezvous is not None
        said = await self.rendezvous.meet(self.name)
        return ToolResult(output=f"{self.name} {said}", summary=said)


class MeetTool(Tool):
    name = "meet"
    Input = MeetInput
    read_only: ClassVar[bool] = True

    def __init__(self, rendezvous: Rendezvous):
        self.rendezvous = rendezvous

    @property
    def description(self) -> str:
        return "Wait until the other call has started too."

    async def prepare(self, args: MeetInput, ctx: ToolContext) -> Action:
        return MeetAction(
            title=f"meet {args.name}", permission="read", patterns=[args.name], always_pattern=args.name,
            rendezvous=self.rendezvous, name=args.name,
        )


class ChangingMeetTool(MeetTool):
    name = "meet_and_change"
    read_only: ClassVar[bool] = False


@pytest.fixture
async def scene(tmp_path):
    scene = Scene(tmp_path)
    yield scene
    await scene.close()


async def test_two_read_only_calls_of_one_step_run_at_the_same_time(scene):
    rendezvous = Rendezvous(expected=2, wait=WAIT)
    scene.agent.tools["meet"] = MeetTool(rendezvous)
    scene.provider.enqueue(calls(("meet", {"name": "ada"}), ("meet", {"name": "bob"})), answer("Both met."))
    started = time.monotonic()
    result = await scene.run("meet")

    assert result.stop_reason == "finished", result.reason
    assert time.monotonic() - started < WAIT  # neither waited out its limit
    results = sorted(m.text for m in scene.provider.requests[1].messages if m.role == "tool")
    assert results == ["ada met", "bob met"]
    (ada_in, ada_out), (bob_in, bob_out) = rendezvous.spans["ada"], rendezvous.spans["bob"]
    assert max(ada_in, bob_in) < min(ada_out, bob_out)  # each entered before the other left


async def test_calls_that_may_change_run_one_after_the_other(scene):
    """The same rendezvous with a changing tool: the first call meets nobody (the check above is
    able to fail)."""
    rendezvous = Rendezvous(expected=2, wait=0.5)
    scene.agent.tools["meet_and_change"] = ChangingMeetTool(rendezvous)
    scene.provider.enqueue(
        calls(("meet_and_change", {"name": "ada"}), ("meet_and_change", {"name": "bob"})), answer("Done.")
    )
    result = await scene.run("meet")

    assert result.stop_reason == "finished", result.reason
    results = [m.text for m in scene.provider.requests[1].messages if m.role == "tool"]
    assert results == ["ada alone", "bob met"]
    assert rendezvous.spans["ada"][1] <= rendezvous.spans["bob"][0]
