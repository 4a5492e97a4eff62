"""The task tool in process: sub-agents in a fresh context, concurrently (at most max_agents),
their thread kept in the call, their changes in the conversation's turn, their rules, their
failures as results, abort, and no task tool for a small model."""

from __future__ import annotations

import anyio
import pytest

from tests.support.reminder import request_messages
from tests.support.turns import SMALL, RecordingFrontEnd, Scene, answer, calls
from totem_engine.api import events as ev
from totem_engine.config import Config
from totem_engine.vocab.chat import ChatRequest

PARENT = "do the parent task"


class RoutingProvider:
    """The conversation's requests get the scripted replies; a sub-agent's (its first message
    is not the parent's request) get ``sub(request)``, after waiting until ``together`` of them
    are in flight (or a second passed), so the test sees how many ran at once."""

    kind = "openai"
    name = "scripted"

    def __init__(self, parent_replies, sub, *, together: int = 3):
        self.parent_replies = list(parent_replies)
        self.sub = sub
        self.together = together
        self.requests: list[ChatRequest] = []
        self.sub_requests: list[ChatRequest] = []
        self.in_flight = 0
        self.most = 0
        self._enough = anyio.Event()

    async def stream(self, request: ChatRequest):
        self.requests.append(request)
        if request_messages(request)[0].text == PARENT:
            for chunk in self.parent_replies.pop(0):
                yield chunk
            return
        self.sub_requests.append(request)
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        if self.in_flight >= self.together:
            self._enough.set()
        with anyio.move_on_after(1.0):
            await self._enough.wait()
        reply = self.sub(request)
        self.in_flight -= 1
        for chunk in reply:
            if isinstance(chunk, BaseException):
                raise chunk
            yield chunk

    async def models(self):
        return []

    async def aclose(self):
        return None


def task(agent: str, prompt: str, description: str = "look") -> tuple[str, dict]:
    return ("task", {"agent": agent, "prompt": prompt, "description": description})


def echo(request: ChatRequest):
    return answer(f"answer to {request_messages(request)[-1].text}")


@pytest.fixture
async def scene(tmp_path):
    scene = Scene(tmp_path)
    yield scene
    await scene.close()


async def test_three_tasks_run_at_once_in_a_fresh_context_and_only_their_answers_come_back(scene):
    provider = RoutingProvider(
        [calls(task("explore", "find a"), task("explore", "find b"), task("explore", "find c"), text="Looking."), answer("Done.")],
        echo,
    )
    scene.agent.provider_for = lambda name: provider
    front = RecordingFrontEnd()
    result = await scene.run(PARENT, front)

    assert result.stop_reason == "finished" and result.text.endswith("Done.")
    assert provider.most == 3
    first = provider.requests[0]
    assert "task" in {spec.name for spec in first.tools}
    task_spec = next(spec for spec in first.tools if spec.name == "task")
    assert "- explore:" in task_spec.description and "- general:" in task_spec.description
    for sub in provider.sub_requests:
        assert [m.role for m in sub.messages] == ["user"]  # no parent history
        assert {spec.name for spec in sub.tools} <= {"read", "glob", "grep", "skill"}  # explore's tools, never task
        assert "You are an explorer" in sub.system and "<environment>" in sub.system
    last = provider.requests[-1]
    results = sorted(m.text for m in last.messages if m.role == "tool")
    assert results == ["answer to find a", "answer to find b", "answer to find c"]
    assert not any("You are an explorer" in (m.text or "") for m in last.messages)

    stored = await scene.store.messages(scene.session_id)
    tool_parts = [p for m in stored for p in m.parts if p.type == "tool"]
    assert [p.status for p in tool_parts] == ["ok", "ok", "ok"]
    thread = tool_parts[0].data["thread"]
    assert thread["agent"] == "explore" and thread["model"] == "scripted/m" and thread["stopReason"] == "finished"
    assert [m["role"] for m in thread["messages"]] == ["user", "assistant"]
    assert len([m for m in stored if m.role == "user"]) == 1  # the sub-agents' messages are not the parent's

    nested = [e for e in front.events if e.parent_call_id]
    assert {e.parent_call_id for e in nested} == {"call_1", "call_2", "call_3"}
    assert {e.agent for e in nested} == {"explore"}
    assert not any(isinstance(e, (ev.TurnStart, ev.TurnEnd)) for e in nested)
    assert [type(e) for e in front.events].count(ev.TurnEnd) == 1
    wire = next(e for e in nested if isinstance(e, ev.TextDelta)).to_wire()
    assert wire["parentCallId"] and wire["agent"] == "explore"
    assert "parentCallId" not in front.of(ev.TurnEnd)[0].to_wire()


async def test_a_fourth_task_waits_for_a_free_slot(scene):
    provider = RoutingProvider(
        [calls(*(task("explore", f"find {n}") for n in range(4))), answer("Done.")], echo, together=4
    )
    scene.agent.provider_for = lambda name: provider
    result = await scene.run(PARENT, RecordingFrontEnd())
    assert result.stop_reason == "finished"
    assert provider.most == 3 and len(provider.sub_requests) == 4


async def test_max_agents_is_the_configured_number(tmp_path):
    scene = Scene(tmp_path, config=Config(max_agents=1))
    provider = RoutingProvider([calls(task("explore", "a"), task("explore", "b")), answer("Done.")], echo, together=2)
    scene.agent.provider_for = lambda name: provider
    await scene.run(PARENT, RecordingFrontEnd())
    await scene.close()
    assert provider.most == 1


async def test_a_sub_agents_change_joins_the_turn_and_one_undo_takes_it_back(scene):
    def writer(request: ChatRequest):
        if len(request.messages) == 1:
            return calls(("write", {"path": "a.txt", "content": "new\n"}))
        return answer("Wrote it.")

    provider = RoutingProvider([calls(task("general", "change a.txt")), answer("Done.")], writer, together=1)
    scene.agent.provider_for = lambda name: provider
    front = RecordingFrontEnd()
    await scene.run(PARENT, front)
    assert (scene.root / "a.txt").read_text() == "new\n"
    assert front.asked and front.asked[0].title.startswith("[general] ")  # the question names the agent
    undone = await scene.snapshots.undo(scene.agent.workspace, session_id=scene.session_id, root=scene.root)
    assert [o.path for o in undone] == ["a.txt"]
    assert not (scene.root / "a.txt").exists()


async def test_a_project_agent_gets_only_its_tools_and_its_deny_rule_decides(scene):
    folder = scene.root / ".totem" / "agents"
    folder.mkdir(parents=True)
    (folder / "reviewer.md").write_text("---\ndescription: reviews\ntools: [read, grep]\ndeny: [read secret.txt]\n---\nReview.\n")
    (scene.root / "secret.txt").write_text("hidden\n")

    def reviewer(request: ChatRequest):
        if len(request.messages) == 1:
            return calls(("read", {"path": "secret.txt"}))
        return answer("Could not read it.")

    provider = RoutingProvider([calls(task("reviewer", "read secret.txt")), answer("Done.")], reviewer, together=1)
    scene.agent.provider_for = lambda name: provider
    front = RecordingFrontEnd()
    await scene.run(PARENT, front)
    assert {spec.name for spec in provider.sub_requests[0].tools} == {"read", "grep"}
    [permission] = [e for e in front.of(ev.Permission) if e.parent_call_id]
    assert permission.decision == "deny" and permission.rule.source == "agent reviewer"
    assert "Denied by rule read 'secret.txt'" in request_messages(provider.sub_requests[1])[-1].text


async def test_an_agent_on_a_model_that_is_not_available_runs_on_the_conversations_and_says_so(scene):
    folder = scene.root / ".totem" / "agents"
    folder.mkdir(parents=True)
    (folder / "big.md").write_text("---\ndescription: big\nmodel: nowhere/huge\n---\nBe big.\n")
    scene.agent.trusted = True
    provider = RoutingProvider([calls(task("big", "think")), answer("Done.")], echo, together=1)
    scene.agent.provider_for = lambda name: provider
    front = RecordingFrontEnd()
    await scene.run(PARENT, front)
    stored = await scene.store.messages(scene.session_id)
    [part] = [p for m in stored for p in m.parts if p.type == "tool"]
    assert part.data["thread"]["model"] == "scripted/m"
    assert "nowhere/huge is not available" in part.data["thread"]["notes"][0]
    assert any("nowhere/huge is not available" in e.message for e in front.of(ev.Notice) if e.agent == "big")


async def test_a_sub_agents_failure_is_its_result_not_the_conversations(scene):
    from totem_engine.providers.errors import AuthenticationError

    def broken(request: ChatRequest):
        return [AuthenticationError("bad key")]

    provider = RoutingProvider([calls(task("explore", "x")), answer("It failed; done.")], broken, together=1)
    scene.agent.provider_for = lambda name: provider
    result = await scene.run(PARENT, RecordingFrontEnd())
    assert result.stop_reason == "finished" and result.text == "It failed; done."
    [tool] = [m for m in provider.requests[-1].messages if m.role == "tool"]
    assert tool.is_error and "did not finish (error" in tool.text


async def test_an_abort_stops_every_agent(scene):
    started = anyio.Event()

    class Stuck(RoutingProvider):
        async def stream(self, request):
            if request_messages(request)[0].text != PARENT:
                self.in_flight += 1
                if self.in_flight == 2:
                    started.set()
                await anyio.sleep(30)
            async for chunk in super().stream(request):
                yield chunk

    provider = Stuck([calls(task("explore", "a"), task("explore", "b")), answer("x")], echo)
    scene.agent.provider_for = lambda name: provider
    front = RecordingFrontEnd()
    turn = await scene.turn(PARENT, front)
    async with anyio.create_task_group() as group:
        async def run():
            nonlocal result
            result = await turn.run()

        result = None
        group.start_soon(run)
        with anyio.fail_after(5):
            await started.wait()
        turn.abort()
    assert result.stop_reason == "aborted" and turn.children == []
    ends = [e for e in front.of(ev.ToolEnd) if not e.parent_call_id]
    assert [e.status for e in ends] == ["interrupted", "interrupted"]


async def test_a_small_model_is_not_offered_the_task_tool(tmp_path):
    scene = Scene(tmp_path, record=SMALL)
    scene.provider.enqueue(answer("ok"))
    turn = await scene.turn("hello", RecordingFrontEnd())
    await turn.run()
    await scene.close()
    assert "read" in turn.tools and "task" not in turn.tools
