"""Background jobs through the real ``totem run`` (issue 19): a loopback HTTP server started as a
job, reached by a later ``bash`` call, its log read, stopped; nothing of it left in the process
table after the run, however the run ends (a job still running, Ctrl-C or a closed terminal during a ``wait``)."""

from __future__ import annotations

import json
import signal
import subprocess
import textwrap
from pathlib import Path

import pytest

from tests.support.model_server import text_reply, tool_reply
from tests.support.processes import none_left, running_in

# A dev server of the sample project: a loopback port of its own, written to port.txt and said.
SERVE = textwrap.dedent("""\
    import http.server, pathlib
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    port = server.server_address[1]
    pathlib.Path("port.tmp").write_text(str(port))
    pathlib.Path("port.tmp").rename("port.txt")
    print(f"listening on 127.0.0.1:{port}", flush=True)
    server.serve_forever()
""")

# What the agent's bash runs to probe it: the port from port.txt (once the server wrote it).
PROBE = textwrap.dedent("""\
    import pathlib, time, urllib.request
    for _ in range(200):
        if pathlib.Path("port.txt").exists():
            break
        time.sleep(0.05)
    port = pathlib.Path("port.txt").read_text()
    print(urllib.request.urlopen(f"http://127.0.0.1:{port}/hello.txt", timeout=10).read().decode())
""")


def sample_project(project: Path) -> None:
    (project / "serve.py").write_text(SERVE)
    (project / "probe.py").write_text(PROBE)
    (project / "hello.txt").write_text("hello from the job\n")


def tool_ends(result, tool: str) -> list[dict]:
    return [e for e in result.of("toolEnd") if e["tool"] == tool]


def test_a_job_serves_on_loopback_bash_reaches_it_output_shows_its_log_stop_ends_it(totem):
    sample_project(totem.project)
    totem.server.enqueue(tool_reply([("job", {"action": "start", "command": "python3 serve.py"})]))
    totem.server.enqueue(tool_reply([("bash", {"command": "python3 probe.py"})]))
    totem.server.enqueue(tool_reply([("job", {"action": "output", "id": "job1"})]))
    totem.server.enqueue(tool_reply([("job", {"action": "list"})]))
    totem.server.enqueue(tool_reply([("job", {"action": "stop", "id": "job1"})]))
    totem.server.enqueue(text_reply("The server works."))
    result = totem.agent("start the dev server and check it", extra=("--yes",))

    assert result.code == 0, result.stderr
    start, output, listed, stop = tool_ends(result, "job")
    assert start["status"] == "ok" and "Started job1" in start["output"]
    assert "hello from the job" in tool_ends(result, "bash")[0]["output"]
    assert "listening on 127.0.0.1:" in output["output"] and '"GET /hello.txt HTTP/1.1" 200' in output["output"]
    # The sandbox (auto) without its network: the job's server answers the session's bash only.
    assert "[job1 running with no network (sandbox)]" in output["output"]
    assert "in the sandbox with no network" in start["output"]
    assert "job1 running" in listed["output"] and "python3 serve.py" in listed["output"]
    assert "[job1 stopped (code -15)]" in stop["output"]
    jobs = [(e["jobId"], e["command"], e["state"]) for e in result.of("job")]
    assert jobs == [("job1", "python3 serve.py", "running"), ("job1", "python3 serve.py", "stopped")]
    # The start was asked like a bash call, and the user's --yes answered it.
    permissions = {e["callId"]: e for e in result.of("permission")}
    assert permissions[start["callId"]]["rule"]["permission"] == "bash"
    assert permissions[output["callId"]]["rule"] == {"source": "default", "permission": "job", "pattern": "*", "action": "allow"}
    assert none_left(totem.project) == []


def test_a_run_that_ends_with_a_job_still_running_leaves_nothing(totem):
    sample_project(totem.project)
    totem.server.enqueue(tool_reply([("job", {"action": "start", "command": "python3 serve.py & sleep 300"})]))
    totem.server.enqueue(tool_reply([("bash", {"command": "python3 probe.py"})]))
    totem.server.enqueue(text_reply("Left it running."))
    result = totem.agent("start the server", extra=("--yes",))

    assert result.code == 0, result.stderr
    assert "hello from the job" in tool_ends(result, "bash")[0]["output"]
    kinds = result.kinds()
    # The job is killed as the run closes the project, after the turn ended, and said so.
    assert kinds.index("turnEnd") < len(kinds) - 1 and kinds[-1] == "job"
    assert result.events[-1]["state"] == "killed"
    assert none_left(totem.project) == []


@pytest.mark.parametrize("sent", [signal.SIGINT, signal.SIGHUP], ids=["SIGINT", "SIGHUP"])  # Ctrl-C, and the terminal closed
def test_an_interrupt_during_a_jobs_wait_exits_130_with_nothing_left(totem, sent):
    sample_project(totem.project)
    totem.server.enqueue(tool_reply([("job", {"action": "start", "command": "python3 serve.py"})]))
    totem.server.enqueue(tool_reply([("job", {"action": "wait", "id": "job1", "timeout": 600})]))
    proc = subprocess.Popen(
        totem.command("run", "--cwd", str(totem.project), "--config", str(totem.config), "--json", "--yes", "serve"),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, env=totem.env,
    )
    assert proc.stdout is not None
    seen = []
    for line in proc.stdout:
        event = json.loads(line)
        seen.append(event)
        if event["kind"] == "toolStart" and event["input"].get("action") == "wait":
            break
    assert seen[-1]["kind"] == "toolStart", seen
    assert any("serve.py" in cmd for cmd in running_in(totem.project))
    proc.send_signal(sent)
    stdout, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 130, stderr
    events = seen + [json.loads(line) for line in stdout.splitlines()]
    assert [e["state"] for e in events if e["kind"] == "job"] == ["running", "killed"]
    assert events[-1]["kind"] == "turnEnd" and events[-1]["stopReason"] == "aborted"
    wait = [e for e in events if e["kind"] == "toolEnd"][-1]
    assert wait["status"] == "interrupted"
    assert none_left(totem.project) == []
