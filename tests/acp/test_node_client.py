"""The ACP scenario once more with the npm SDK's client (@agentclientprotocol/sdk 2.4, installed
by scripts/setup-acp-client.sh under TOTEM_TEST_CACHE or ~/.cache/totem-test), from a small Node
script (node_client.mjs): two independent implementations agree on ``totem acp``."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

from tests.acp.conftest import AGENT, ROOT, write_config
from tests.acp.schema_check import Traffic, problems
from tests.acp.test_replay import conversation
from tests.support.model_server import ModelServer, text_reply, tool_reply
from tests.support.processes import none_left


def installed_sdk() -> Path:
    setup = subprocess.run(
        ["bash", str(ROOT / "scripts" / "setup-acp-client.sh")], capture_output=True, text=True, timeout=900, check=False
    )
    assert setup.returncode == 0, f"scripts/setup-acp-client.sh failed:\n{setup.stderr[-4000:]}"
    return Path(setup.stdout.strip().splitlines()[-1])


def test_the_npm_sdks_client_sees_the_same_agent(tmp_path):
    sdk = installed_sdk()
    project = tmp_path / "project"
    project.mkdir()
    (project / "app.py").write_text("def greet():\n    return 'hi'\n")
    home = tmp_path / "home"
    marker = f"47.{random.randint(10**5, 10**6)}"
    with ModelServer() as model:
        # Without the sandbox: a sandboxed command stays in Totem, never in the editor's terminal.
        write_config(home, model, 'sandbox = "never"')
        model.enqueue(tool_reply([("todo", {"todos": [{"content": "greet louder", "status": "in_progress"}]})]))
        model.enqueue(tool_reply([("edit", {"path": "app.py", "old_string": "'hi'", "new_string": "'hello'"})], text="Changing it."))
        model.enqueue(tool_reply([("shouter__shout", {"text": "hello"})]))
        model.enqueue(text_reply("Said and shouted."))
        model.enqueue(tool_reply([("write", {"path": "new.txt", "content": "x\n"})]))
        model.enqueue(tool_reply([("task", {"agent": "explore", "prompt": "look for new.txt", "description": "look"})]))
        model.enqueue(tool_reply([("glob", {"pattern": "*.txt"})]))  # the sub-agent's
        model.enqueue(text_reply("There is none."))
        model.enqueue(text_reply("Left new.txt alone."))
        model.enqueue(tool_reply([("bash", {"command": "echo terminal-$((6*7))"})]))
        model.enqueue(text_reply("It printed 42."))
        model.enqueue(tool_reply([("job", {"action": "start", "command": f"sleep {marker}"})]))
        slow = text_reply("The server is up and", pieces=2)
        slow.events, slow.hold = slow.events[:3], 60
        model.enqueue(slow)
        env = dict(os.environ, XDG_DATA_HOME=str(home / "data"), XDG_CONFIG_HOME=str(home / "config"), PYTHONPATH=str(ROOT))
        scenario = {
            "agent": AGENT, "env": env, "cwd": str(ROOT), "project": str(project), "marker": f"sleep {marker}",
            "mcp": {"name": "shouter", "command": sys.executable, "args": ["-m", "tests.acp.mcp_stdio"], "env": {"PYTHONPATH": str(ROOT)}},
        }
        (tmp_path / "scenario.json").write_text(json.dumps(scenario))
        # ES modules find packages from the script's own folder up (NODE_PATH is not read for them).
        script = tmp_path / "client" / "node_client.mjs"
        script.parent.mkdir()
        shutil.copy(ROOT / "tests" / "acp" / "node_client.mjs", script)
        (script.parent / "node_modules").symlink_to(sdk / "node_modules")
        run = subprocess.run(
            ["node", str(script), str(tmp_path / "scenario.json")], capture_output=True, text=True, timeout=180, cwd=script.parent, check=False,
        )
    assert run.returncode == 0, run.stderr[-4000:]
    report = json.loads(run.stdout.strip().splitlines()[-1])

    assert report["initialize"]["protocolVersion"] == 1 and report["initialize"]["agentCapabilities"]["loadSession"] is True
    assert [p.get("stopReason", p.get("error")) for p in report["prompts"]] == ["end_turn", "end_turn", "end_turn", "cancelled"]
    start, edit, shout, rejected, command, job = report["permissions"]
    assert start["toolCall"]["title"].startswith("Start MCP server shouter: ")
    assert edit["options"] == ["allow_once", "allow_always", "reject_once", "reject_always"]
    [diff] = edit["toolCall"]["content"]
    assert diff == {
        "type": "diff", "path": str(project / "app.py"),
        "oldText": "def greet():\n    return 'hi'\n", "newText": "def greet():\n    return 'hello'\n",
    }
    # Allowed once: the edit landed in the editor's buffer through fs/write_text_file, not on disk.
    assert report["writes"] == [{"path": str(project / "app.py"), "content": "def greet():\n    return 'hello'\n"}]
    assert (project / "app.py").read_text() == "def greet():\n    return 'hi'\n"
    calls = {u["toolCallId"]: u for u in report["updates"] if u["sessionUpdate"] == "tool_call_update" and "content" in u}
    assert calls[shout["toolCall"]["toolCallId"]]["content"][0]["content"]["text"] == "HELLO"
    # Rejected once: that call failed, and the turn went on to the model's answer.
    assert calls[rejected["toolCall"]["toolCallId"]]["rawOutput"]["status"] == "denied"
    assert not (project / "new.txt").exists()
    text = "".join(u["content"]["text"] for u in report["updates"] if u["sessionUpdate"] == "agent_message_chunk")
    assert "Left new.txt alone." in text and "Stopped by the user." in text
    # The command ran in the editor's terminal, which its call showed, and its output reached the model.
    [terminal] = report["terminals"]
    assert terminal["args"][-2:] == ["-c", "echo terminal-$((6*7))"] and terminal["cwd"] == str(project)
    assert terminal["calls"] == ["create", "output", "release"]
    shown = [u for u in report["updates"] if u["sessionUpdate"] == "tool_call_update" and u.get("content")
             and u["toolCallId"] == command["toolCall"]["toolCallId"]]
    assert {c["type"] for u in shown for c in u["content"]} == {"terminal"}
    assert {c["terminalId"] for u in shown for c in u["content"]} == {terminal["terminalId"]}
    assert "terminal-42" in json.dumps(model.requests[10]["messages"])
    # Cancelled mid-stream: the job the turn started was killed.
    assert job["toolCall"]["kind"] == "execute" and report["leftRunning"] == []
    kinds = {u["sessionUpdate"] for u in report["updates"]}
    assert {"available_commands_update", "tool_call", "tool_call_update", "agent_message_chunk"} <= kinds
    # session/load replayed the conversation to the second agent process.
    typed = [u["content"]["text"] for u in report["replay"] if u["sessionUpdate"] == "user_message_chunk"]
    assert typed == ["say hello and shout it", "write new.txt", "compute it in the terminal", "start the server"]
    # ... with the plan, the sub-agent's call, and each call in its final status as shown live.
    live, again = conversation(report["updates"]), conversation(report["replay"])
    assert [u["entries"] for u in again if u["sessionUpdate"] == "plan"] == [[{"content": "greet louder", "priority": "medium", "status": "in_progress"}]]
    assert [u["entries"] for u in live if u["sessionUpdate"] == "plan"] == [u["entries"] for u in again if u["sessionUpdate"] == "plan"]
    # Not replayed: the MCP server's start, a call of the session's set-up rather than the
    # conversation's (the engine keeps no part of it; its notice is replayed).
    statuses = {u["toolCallId"]: (u["title"], u["status"]) for u in live
                if u["sessionUpdate"] == "tool_call" and not u["title"].startswith("Start MCP server")}
    assert {u["toolCallId"]: (u["title"], u["status"]) for u in again if u["sessionUpdate"] == "tool_call"} == statuses
    assert [s for t, s in statuses.values() if t.startswith("[explore] ")] == ["completed"]
    # Every message both ways, of both connections, validates against ACP's JSON schema.
    traffic = Traffic()
    for sender, message in report["traffic"]:
        traffic.record(sender, message)
    assert {"session/request_permission", "terminal/create", "fs/write_text_file", "session/update"} <= traffic.methods("agent")
    assert {"session/prompt", "session/cancel", "session/load"} <= traffic.methods("client")
    assert [p for _, method, message in traffic.messages for p in problems(method, message)] == []
    assert none_left(project) == []
