"""Background jobs: the registry (jobs.py) and the job tool (tools/job.py) driven directly over a
real folder, real processes, the process table read from /proc."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
import pytest

from tests.support.processes import proc_entries
from tests.support.turns import RecordingFrontEnd, Scene, calls
from totem_engine.api import events as ev
from totem_engine.config import Config
from totem_engine.jobs import JobNotFound, Jobs
from totem_engine.permissions import Policy
from totem_engine.tools.base import ToolContext, ToolResult
from totem_engine.tools.bash import BashTool
from totem_engine.tools.job import JobTool
from totem_engine.tools.registry import builtin_tools, surface
from totem_engine.vocab.tools import ToolError
from totem_engine.workspace.files import DiskWorkspace


def running_in(folder: Path) -> list[int]:
    """The processes (not zombies) whose working folder is ``folder``: what a job left behind."""
    found = []
    for entry in proc_entries():
        try:
            if Path(os.readlink(entry / "cwd")) == folder and (entry / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                found.append(int(entry.name))
        except OSError:
            continue
    return found


async def none_left(folder: Path) -> bool:
    """Orphans are reaped by init a moment after they die."""
    for _ in range(60):
        if not running_in(folder):
            return True
        await anyio.sleep(0.05)
    return False


@pytest.fixture
async def jobs(root: Path):
    registry = Jobs(root)
    yield registry
    await registry.aclose()


@pytest.fixture
def said() -> list[ev.Event]:
    return []


@pytest.fixture
def ctx(root: Path, said: list[ev.Event]) -> ToolContext:
    async def publish(event: ev.Event) -> None:
        said.append(event)

    return ToolContext(root=root, workspace=DiskWorkspace(), session_id="s1", call_id="c1", publish=publish)


async def job(jobs: Jobs, ctx: ToolContext, **arguments) -> ToolResult:
    tool = JobTool(jobs)
    action = await tool.prepare(tool.Input.model_validate(arguments), ctx)
    with anyio.fail_after(20):
        return await action.apply(ctx)


async def output_until(jobs: Jobs, ctx: ToolContext, job_id: str, text: str) -> str:
    seen = ""
    with anyio.fail_after(20):
        while text not in seen:
            seen += (await job(jobs, ctx, action="output", id=job_id)).output
            await anyio.sleep(0.05)
    return seen


async def test_start_returns_at_once_and_output_gives_what_came_since_the_last_read(jobs, ctx, root, said):
    started = await job(jobs, ctx, action="start", command="echo one; read -t 30 x < /dev/zero; sleep 30")
    assert "Started job1" in started.output and started.metadata["state"] == "running"
    first = await output_until(jobs, ctx, "job1", "one")
    assert "[job1 running]" in first
    again = await job(jobs, ctx, action="output", id="job1")
    assert again.output.startswith("(no new output)") and "one" not in again.output
    assert [(e.job_id, e.state) for e in said if isinstance(e, ev.Job)] == [("job1", "running")]
    stopped = await job(jobs, ctx, action="stop", id="job1")
    assert "[job1 stopped (code -15)]" in stopped.output
    assert [(e.state, e.exit_code) for e in said if isinstance(e, ev.Job)] == [("running", None), ("stopped", -15)]
    assert await none_left(root)


async def test_wait_returns_the_exit_code_or_says_it_still_runs(jobs, ctx, root):
    await job(jobs, ctx, action="start", command="echo done; exit 3")
    waited = await job(jobs, ctx, action="wait", id="job1", timeout=20)
    assert "done" in waited.output and "[job1 exited with code 3]" in waited.output
    assert waited.metadata == {"job": "job1", "state": "exited", "exit_code": 3}

    await job(jobs, ctx, action="start", command="sleep 30")
    short = await job(jobs, ctx, action="wait", id="job2", timeout=1)
    assert "[job2 running; still running after 1 s]" in short.output
    listed = await job(jobs, ctx, action="list")
    assert "job1 exited with code 3" in listed.output and "job2 running" in listed.output and "sleep 30" in listed.output


async def test_output_keeps_head_and_tail_with_a_note(jobs, ctx):
    ctx.output_budget = 2000
    await job(jobs, ctx, action="start", command=f"{sys.executable} -c \"[print('line', i) for i in range(5000)]\"")
    result = await job(jobs, ctx, action="wait", id="job1", timeout=20)
    assert "line 0\n" in result.output and "line 4999" in result.output
    assert "lines (" in result.output and "characters) left out" in result.output
    assert len(result.output) < 2300


async def test_a_chatty_job_never_blocks_on_a_full_pipe(jobs, ctx):
    # 2 MB is far more than a pipe holds: the job ends only if its output is read as it comes.
    await job(jobs, ctx, action="start", command="head -c 2000000 /dev/zero | tr '\\0' x; echo; echo end")
    result = await job(jobs, ctx, action="wait", id="job1", timeout=20)
    assert "[job1 exited with code 0]" in result.output and result.output.rstrip().endswith("]")


async def test_closing_kills_every_job_and_what_it_started(root, ctx, said):
    jobs = Jobs(root)
    await job(jobs, ctx, action="start", command="sleep 300 & sleep 300")
    await job(jobs, ctx, action="start", command="(sleep 300 &) ; echo left a child")  # its shell exits at once
    await job(jobs, ctx, action="wait", id="job2", timeout=20)
    assert len(running_in(root)) >= 2
    await jobs.aclose()
    assert await none_left(root)
    states = [(e.job_id, e.state) for e in said if isinstance(e, ev.Job)]
    assert ("job1", "killed") in states and ("job2", "exited") in states and ("job2", "killed") not in states
    with pytest.raises(ToolError, match="closing"):
        await job(jobs, ctx, action="start", command="true")


async def test_kill_session_kills_only_that_sessions_jobs(jobs, ctx, root):
    await job(jobs, ctx, action="start", command="sleep 300")
    other = ToolContext(root=root, workspace=DiskWorkspace(), session_id="s2", call_id="c2")
    await job(jobs, other, action="start", command="sleep 301")
    await jobs.kill_session("s1")
    assert jobs.of("s1")[0].state == "killed" and jobs.of("s2")[0].state == "running"
    # Ids are per session; another session's job is not found.
    assert jobs.of("s2")[0].id == "job1"
    with pytest.raises(JobNotFound):
        jobs.get("s2", "job2")


async def test_a_session_runs_a_bounded_number_of_jobs(jobs, ctx, monkeypatch):
    monkeypatch.setattr("totem_engine.jobs.MAX_RUNNING", 2)
    await job(jobs, ctx, action="start", command="sleep 300")
    await job(jobs, ctx, action="start", command="true")
    await job(jobs, ctx, action="wait", id="job2", timeout=20)  # an ended job does not count
    await job(jobs, ctx, action="start", command="sleep 301")
    with pytest.raises(ToolError, match="2 jobs are running already"):
        await job(jobs, ctx, action="start", command="sleep 302")


async def test_unknown_ids_and_missing_arguments_are_tool_errors(jobs, ctx):
    with pytest.raises(ToolError, match="no job 'job7'"):
        await job(jobs, ctx, action="output", id="job7")
    with pytest.raises(ToolError, match="needs the id"):
        await job(jobs, ctx, action="wait")
    with pytest.raises(ToolError, match="needs a command"):
        await job(jobs, ctx, action="start")
    listed = await job(jobs, ctx, action="list")
    assert listed.output == "No jobs in this session."


async def test_start_is_asked_like_bash_and_the_rest_is_allowed(jobs, ctx, root):
    tool = JobTool(jobs)

    async def prepared(**arguments):
        return await tool.prepare(tool.Input.model_validate(arguments), ctx)

    start = await prepared(action="start", command="cd web && X=1 npm run dev")
    bash = await BashTool().prepare(BashTool.Input.model_validate({"command": "cd web && X=1 npm run dev"}), ctx)
    same = ("permission", "patterns", "always_pattern", "changes", "safe_patterns")
    assert {k: getattr(start, k) for k in same} == {k: getattr(bash, k) for k in same}
    assert start.permission == "bash" and start.always_pattern == "npm run"
    policy = Policy()
    assert policy.decide(start.permission, start.patterns, changes=start.changes, safe=start.safe_patterns).action == "ask"
    stop = await prepared(action="stop", id="job1")
    assert (stop.permission, stop.changes) == ("job", False)
    assert policy.decide(stop.permission, stop.patterns, changes=False, safe=None).action == "allow"


def test_the_tool_is_in_the_full_surface_only(root):
    tools = builtin_tools(jobs=Jobs(root))
    assert "job" in tools and "job" not in builtin_tools()
    assert "job" not in surface(tools, 32_000, "standard")[0]
    assert "job" in surface(tools, 200_000, "standard")[0]


# --- through a turn (turn/loop.py): an abort kills the session's jobs unless the config says not


class WaitStarted(RecordingFrontEnd):
    """Sets ``waiting`` when the job's ``wait`` call starts, so the test can abort then."""

    def __init__(self):
        super().__init__()
        self.waiting = anyio.Event()

    async def emit(self, event: ev.Event) -> None:
        await super().emit(event)
        if isinstance(event, ev.ToolStart) and event.input.get("action") == "wait":
            self.waiting.set()


async def aborted_during_wait(scene: Scene) -> WaitStarted:
    scene.provider.enqueue(
        calls(("job", {"action": "start", "command": "sleep 300"})),
        calls(("job", {"action": "wait", "id": "job1", "timeout": 600})),
    )
    front = WaitStarted()
    turn = await scene.turn("run the server", front)
    with anyio.fail_after(20):
        async with anyio.create_task_group() as group:
            group.start_soon(turn.run)
            await front.waiting.wait()
            turn.abort()
    assert front.of(ev.TurnEnd)[0].stop_reason == "aborted"
    return front


async def test_an_aborted_turn_kills_its_jobs(tmp_path):
    scene = Scene(tmp_path, jobs=True)
    try:
        front = await aborted_during_wait(scene)
        assert [(e.job_id, e.state) for e in front.of(ev.Job)] == [("job1", "running"), ("job1", "killed")]
        # The kill is said after the wait call is closed as interrupted, before the turn ends.
        kinds = [type(e).__name__ for e in front.events]
        killed = kinds.index("Job", kinds.index("Job") + 1)
        assert front.events[killed - 1].status == "interrupted" and killed < kinds.index("TurnEnd")
        assert await none_left(scene.root)
    finally:
        await scene.close()


async def test_jobs_survive_an_abort_when_the_config_says_so_and_die_with_the_runtime(tmp_path):
    scene = Scene(tmp_path, jobs=True, config=Config(jobs_survive_abort=True))
    try:
        front = await aborted_during_wait(scene)
        assert [e.state for e in front.of(ev.Job)] == ["running"]
        assert scene.jobs.of(scene.session_id)[0].state == "running" and running_in(scene.root)
    finally:
        await scene.close()
    assert await none_left(scene.root)
    assert [e.state for e in front.of(ev.Job)] == ["running", "killed"]
