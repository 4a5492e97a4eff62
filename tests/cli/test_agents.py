"""Sub-agents end to end: ``totem run`` against the scripted loopback model."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from dataclasses import replace
from pathlib import Path

from tests.support.model_server import text_reply, tool_reply

HOLD = 2.0  # seconds each sub-agent's first reply is held open, so overlaps are certain


def task(agent: str, prompt: str) -> tuple[str, dict]:
    return ("task", {"agent": agent, "prompt": prompt, "description": prompt})


def tool_names(request: dict) -> set[str]:
    return {t["function"]["name"] for t in request.get("tools", [])}


def test_task_calls_run_three_at_once_in_fresh_contexts_and_only_answers_come_back(totem):
    server = totem.server
    server.enqueue(tool_reply([task("explore", f"find {n}") for n in "abcd"], text="Looking around."))
    for n in "abcd":
        server.enqueue(replace(text_reply(f"found {n}"), hold=HOLD))
    server.enqueue(text_reply("All four found."))
    result = totem.agent("where is everything?")

    assert result.code == 0, result.stderr
    assert result.of("turnEnd")[-1]["text"].endswith("All four found.")
    assert len(result.of("turnEnd")) == 1 and len(result.of("turnStart")) == 1
    subs = server.requests[1:5]
    for request in subs:
        assert [m["role"] for m in request["messages"]] == ["system", "user"]  # no parent history
        assert request["messages"][1]["content"].startswith("find ")
        assert "You are an explorer" in request["messages"][0]["content"]
        assert tool_names(request) <= {"read", "glob", "grep", "skill"} and "task" not in tool_names(request)
    assert "task" in tool_names(server.requests[0])
    times = server.received_at[1:5]
    assert max(times[:3]) - min(times[:3]) < HOLD  # the first three overlapped
    assert times[3] - min(times[:3]) >= HOLD - 0.05  # the fourth waited for a free slot
    last = server.requests[-1]
    answers = sorted(m["content"] for m in last["messages"] if m["role"] == "tool")
    assert answers == ["found a", "found b", "found c", "found d"]
    assert all("You are an explorer" not in str(m.get("content")) for m in last["messages"][1:])

    nested = [e for e in result.events if "parentCallId" in e]
    assert {e["agent"] for e in nested} == {"explore"} and len({e["parentCallId"] for e in nested}) == 4
    session = result.of("turnEnd")[0]["sessionId"]
    export = totem.export(session)
    [task_parts] = [[p for p in m["parts"] if p["type"] == "tool"] for m in export["messages"] if any(p["type"] == "tool" for p in m["parts"])]
    assert [p["data"]["thread"]["agent"] for p in task_parts] == ["explore"] * 4
    shown = totem.run("sessions", "show", session)
    assert shown.code == 0 and "[explore on sim/test-model]" in shown.stdout and "  task: find a" in shown.stdout


def test_a_project_agent_gets_only_its_tools_and_its_deny_rule_decides_and_untrusted_allow_is_ignored(totem):
    agents = totem.project / ".totem" / "agents"
    agents.mkdir(parents=True)
    (agents / "reviewer.md").write_text(
        "---\ndescription: Reviews code\ntools: [read, grep]\nallow: [bash]\ndeny: [read secret.txt]\n---\nYou review.\n"
    )
    (totem.project / "secret.txt").write_text("hidden\n")
    server = totem.server
    server.enqueue(tool_reply([task("reviewer", "read secret.txt")]))
    server.enqueue(tool_reply([("read", {"path": "secret.txt"})]))
    server.enqueue(text_reply("It is denied."))
    server.enqueue(text_reply("The reviewer could not read it."))
    result = totem.agent("review")

    assert result.code == 0, result.stderr
    assert tool_names(server.requests[1]) == {"read", "grep"}
    assert "You review." in server.requests[1]["messages"][0]["content"]
    [permission] = [e for e in result.of("permission") if e.get("agent") == "reviewer"]
    assert permission["decision"] == "deny" and permission["rule"]["source"] == "agent reviewer"
    assert "Denied by rule read 'secret.txt'" in server.requests[2]["messages"][-1]["content"]
    notices = [e["message"] for e in result.of("notice")]
    assert any("reviewer.md" in n and "allow 'bash'" in n and "not trusted" in n for n in notices)


def test_an_agent_on_a_missing_model_runs_on_the_conversations_and_says_so(totem):
    agents = totem.project / ".totem" / "agents"
    agents.mkdir(parents=True)
    (agents / "big.md").write_text("---\ndescription: Big thinker\nmodel: nowhere/huge\n---\nThink.\n")
    totem.run("trust", str(totem.project))
    totem.server.enqueue(tool_reply([task("big", "think")]), text_reply("thought"), text_reply("Done."))
    result = totem.agent("think hard")

    assert result.code == 0, result.stderr
    assert totem.server.requests[1]["model"] == "test-model"
    assert any("nowhere/huge is not available" in e["message"] for e in result.of("notice") if e.get("agent") == "big")


def _running(marker: str) -> list[str]:
    """The command lines in the process table that hold ``marker`` (the shells and their sleeps)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                line = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
            except OSError:
                continue  # ended meanwhile
            if marker in line:
                found.append(line)
    return found


def test_ctrl_c_while_sub_agents_run_commands_leaves_no_process(totem):
    marker = f"sleep 4{os.getpid() % 1000}.5"  # a duration no other process here sleeps
    server = totem.server
    server.enqueue(tool_reply([task("general", "wait a"), task("general", "wait b")]))
    for _ in range(2):
        server.enqueue(tool_reply([("bash", {"command": marker})]))
    proc = subprocess.Popen(
        totem.command("run", "--cwd", str(totem.project), "--config", str(totem.config), "--json", "--yes", "wait"),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, env=totem.env,
    )
    deadline = time.monotonic() + 20
    while _running(marker).count(marker) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _running(marker).count(marker) == 2, "both sub-agents' sleeps run"
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=20)
    assert proc.returncode == 130, stderr
    assert json.loads(stdout.splitlines()[-1])["stopReason"] == "aborted"
    assert _running(marker) == []


def test_an_agents_own_step_limit_stops_it_and_the_parent_reads_that_it_stopped_there(totem):
    """``max_steps: 10`` in the agent's file, below the conversation's 50: its model keeps
    calling tools (each read new, so no other guard ends it), and the tenth step is its last."""
    agents = totem.project / ".totem" / "agents"
    agents.mkdir(parents=True)
    (agents / "digger.md").write_text("---\ndescription: Reads everything\nmax_steps: 10\n---\nYou read.\n")
    for n in range(15):
        (totem.project / f"part{n:02}.txt").write_text(f"part {n}: {n * 7919}\n")
    server = totem.server
    server.enqueue(tool_reply([task("digger", "read every part")]))
    for n in range(10):
        server.enqueue(tool_reply([("read", {"path": f"part{n:02}.txt"})]))
    server.enqueue(text_reply("The digger stopped at its limit."))
    for n in range(10, 15):  # what a sub-agent past its limit would go on to ask for
        server.enqueue(tool_reply([("read", {"path": f"part{n:02}.txt"})]))
    result = totem.agent("dig")

    assert result.code == 0, result.stderr
    assert len(server.requests) == 12  # the parent's two and the agent's ten
    sub_steps = [e for e in result.of("stepEnd") if e.get("agent") == "digger"]
    assert len(sub_steps) == 10
    [told] = [m["content"] for m in server.requests[11]["messages"] if m["role"] == "tool"]
    assert told.startswith("The agent digger did not finish (step_limit: Reached the step limit (10 steps)"), told
    [end] = [e for e in result.of("toolEnd") if e["tool"] == "task"]
    assert end["summary"] == "digger stopped: step_limit"
    assert result.of("turnEnd")[-1]["text"] == "The digger stopped at its limit."
