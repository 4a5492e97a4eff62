"""MCP servers through the real ``totem run`` (issue 24): the real filesystem, time and git servers
(installed once per session, scripts/setup-mcp-servers.sh), a streamable HTTP server of our own
with a header, and stand-ins that misbehave as real servers do (banner lines on stdout, exiting
during a call, never answering the handshake). None crashes or hangs the run, and nothing is
left in the process table after it."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess

import pytest

from tests.support.model_server import (
    Reply,
    chunk,
    request_tokens,
    text_reply,
    tool_reply,
)
from tests.support.processes import none_left, running_in
from tests.support.real_mcp import (
    HttpServer,
    git_entry,
    real_entries,
    standin,
    write_mcp_json,
)


@pytest.fixture
def user_mcp(totem):
    """Write the user's mcp.json (beside config.toml) of this test's isolated home."""
    return lambda servers: write_mcp_json(totem.home / "config" / "totem" / "mcp.json", servers)


def tool_messages(request: dict) -> list[dict]:
    return [m for m in request["messages"] if m["role"] == "tool"]


def offered(request: dict) -> list[str]:
    return sorted(t["function"]["name"] for t in request.get("tools", []))


def test_the_model_calls_the_real_filesystem_and_time_servers_and_reads_their_results(totem, user_mcp):
    (totem.project / "notes.txt").write_text("buy milk\ncall Ada\n")
    user_mcp(real_entries(totem.project))
    totem.server.enqueue(tool_reply([("fs__read_text_file", {"path": str(totem.project / "notes.txt")})]))
    totem.server.enqueue(tool_reply([("time__get_current_time", {"timezone": "UTC"})]))
    totem.server.enqueue(text_reply("Milk, Ada, and it is late."))
    result = totem.agent("what are my notes, and what time is it?", extra=("--yes",))

    assert result.code == 0, result.stderr
    first, second, third = totem.server.requests
    # Both servers' tools are offered from the first step, with their own schemas.
    names = offered(first)
    assert {"fs__read_text_file", "fs__list_directory", "time__get_current_time", "time__convert_time"} <= set(names)
    schema = next(t["function"] for t in first["tools"] if t["function"]["name"] == "time__get_current_time")
    assert "timezone" in schema["parameters"]["properties"] and "time" in schema["description"].lower()
    # Each result reaches the model's next request.
    assert tool_messages(second)[-1]["content"] == "buy milk\ncall Ada\n"
    clock = json.loads(tool_messages(third)[-1]["content"])
    assert clock["timezone"] == "UTC" and clock["datetime"].endswith("+00:00")
    # The starts are pseudo calls asked like any call (the user's --yes answered each), and so
    # is each tool call: permission mcp, pattern NAME__tool, asked by default.
    starts = [e for e in result.of("toolStart") if e["tool"] == "mcp-start"]
    assert sorted(e["input"]["server"] for e in starts) == ["fs", "time"]
    fs_start = next(e for e in starts if e["input"]["server"] == "fs")
    assert fs_start["input"]["command"].endswith(str(totem.project)) and "node" in fs_start["title"]
    permissions = {e["callId"]: e for e in result.of("permission")}
    for start in starts:
        assert permissions[start["callId"]]["decision"] == "allow"
        assert permissions[start["callId"]]["rule"]["source"] == "answer"
    ends = {e["callId"]: e for e in result.of("toolEnd")}
    assert all(ends[s["callId"]]["status"] == "ok" and "started" in ends[s["callId"]]["summary"] for s in starts)
    calls = [e for e in result.of("toolStart") if e["tool"] != "mcp-start"]
    assert [c["tool"] for c in calls] == ["fs__read_text_file", "time__get_current_time"]
    for call in calls:
        rule = permissions[call["callId"]]["rule"]
        assert (rule["source"], rule["permission"], rule["pattern"]) == ("answer", "mcp", call["tool"])
        assert ends[call["callId"]]["status"] == "ok"
    notices = [e["message"] for e in result.of("notice")]
    assert any(m.startswith("MCP server fs started") for m in notices)
    assert any(m.startswith("MCP server time stopped") for m in notices)  # at the run's end, said
    # A start's notice names the pseudo call whose end it repeats; a stop's names none.
    said = {e["message"].split(" ", 3)[2]: e["callId"] for e in result.of("notice") if " started, " in e["message"]}
    assert said == {s["input"]["server"]: s["callId"] for s in starts}
    assert all(e["callId"] is None for e in result.of("notice") if "stopped" in e["message"])
    assert none_left(totem.project) == []


def test_totem_run_says_each_start_once_and_the_session_keeps_the_servers_notices(totem, user_mcp):
    time_server = real_entries(totem.project)["time"]
    user_mcp({"time": time_server, "gone": {"command": str(totem.project / "no-such-server")}})
    totem.server.enqueue(tool_reply([("time__get_current_time", {"timezone": "UTC"})]))
    totem.server.enqueue(text_reply("Late."))
    result = totem.run("run", "--cwd", str(totem.project), "--config", str(totem.config), "--yes", "what time is it?")

    assert result.code == 0, result.stderr
    lines = result.stderr.splitlines()
    # Each start is one call line (what ran) and one line of what came of it, not repeated by a notice.
    started = f"→ Start MCP server time: {shlex.join([time_server['command'], *time_server['args']])}"
    assert lines.count(started) == 1 and lines[lines.index(started) + 1] == "   started, 2 tools"
    assert [line for line in lines if "time started" in line or "started, 2 tools" in line] == ["   started, 2 tools"]
    failed = [line for line in lines if "did not start" in line]
    assert len(failed) == 1 and failed[0].startswith("   error: did not start: ")
    assert lines[lines.index(failed[0]) - 1] == f"→ Start MCP server gone: {totem.project / 'no-such-server'}"
    assert "! MCP server time stopped: the run ended." in lines  # no call tells a stop: the notice does

    # A reopened session shows what the servers said, in the turn, the stop at the run's end too.
    session_id = re.search(r"^session (ses_\w+)$", result.stderr, re.MULTILINE).group(1)
    messages = totem.export(session_id)["messages"]
    kept = [(m["turnId"], p["data"]) for m in messages for p in m["parts"] if p["type"] == "notice"]
    assert {turn for turn, _ in kept} == {messages[0]["turnId"]}
    texts = [data["text"] for _, data in kept]
    assert texts[-1] == "MCP server time stopped: the run ended."
    assert "MCP server time started, 2 tools." in texts
    gone = next(data for data in (d for _, d in kept) if data["text"].startswith("MCP server gone did not start"))
    assert gone["level"] == "warning"
    shown = totem.run("sessions", "show", session_id).stdout
    assert "[notice] MCP server time started, 2 tools." in shown and "[notice] MCP server time stopped: the run ended." in shown
    assert none_left(totem.project) == []


def git(project, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "Ada", "GIT_AUTHOR_EMAIL": "ada@example.org", "GIT_COMMITTER_NAME": "Ada",
           "GIT_COMMITTER_EMAIL": "ada@example.org", "HOME": str(project), "PATH": os.environ["PATH"]}
    return subprocess.run(["git", *args], cwd=project, env=env, capture_output=True, text=True, check=True).stdout


def test_the_model_reads_a_repositorys_log_and_status_through_the_real_git_server(totem, user_mcp):
    # A repository of the test's own: one commit, then a file changed and one not yet added.
    project = totem.project
    git(project, "init", "-q", "-b", "trunk")
    (project / "app.py").write_text("print('hello')\n")
    git(project, "add", "app.py")
    git(project, "commit", "-q", "-m", "Say hello")
    head = git(project, "rev-parse", "HEAD").strip()
    (project / "app.py").write_text("print('goodbye')\n")
    (project / "notes.txt").write_text("later\n")
    user_mcp({"git": git_entry(project)})
    totem.server.enqueue(tool_reply([("git__git_log", {"repo_path": str(project), "max_count": 5})]))
    totem.server.enqueue(tool_reply([("git__git_status", {"repo_path": str(project)})]))
    totem.server.enqueue(text_reply("One commit, app.py changed, notes.txt new."))
    result = totem.agent("what happened in this repository?", extra=("--yes",))

    assert result.code == 0, result.stderr
    first, second, third = totem.server.requests
    assert {"git__git_log", "git__git_status", "git__git_diff_unstaged", "git__git_commit"} <= set(offered(first))
    schema = next(t["function"] for t in first["tools"] if t["function"]["name"] == "git__git_status")
    assert schema["parameters"]["required"] == ["repo_path"]
    # Each result, as the server read the repository, reaches the model's next request.
    log = tool_messages(second)[-1]["content"]
    assert f"Commit: {head}" in log and "Author: Ada" in log and "Message: Say hello" in log
    status = tool_messages(third)[-1]["content"]
    assert "On branch trunk" in status and "modified:   app.py" in status and "notes.txt" in status
    start = next(e for e in result.of("toolStart") if e["tool"] == "mcp-start")
    entry = git_entry(project)
    assert start["input"] == {"server": "git", "command": shlex.join([entry["command"], *entry["args"]])}
    calls = [e for e in result.of("toolEnd") if e["tool"].startswith("git__")]
    assert [(c["tool"], c["status"]) for c in calls] == [("git__git_log", "ok"), ("git__git_status", "ok")]
    # The server (and the git processes it keeps open) are gone once the run ends.
    assert none_left(project) == []


def test_without_a_terminal_or_yes_no_server_starts_and_the_run_goes_on(totem, user_mcp):
    user_mcp(real_entries(totem.project))
    totem.server.enqueue(text_reply("Nothing to do."))
    result = totem.agent("hello")

    assert result.code == 0, result.stderr
    assert offered(totem.server.requests[0]) and not any("__" in n for n in offered(totem.server.requests[0]))
    ends = [e for e in result.of("toolEnd") if e["tool"] == "mcp-start"]
    assert len(ends) == 2 and all(e["status"] == "denied" and "nobody could be asked" in e["output"] for e in ends)
    assert none_left(totem.project) == []


def test_ctrl_c_while_the_servers_run_exits_130_and_leaves_no_server(totem, user_mcp):
    user_mcp(real_entries(totem.project))
    # A first step that streams and then holds, so the interrupt lands with both servers up.
    totem.server.enqueue(Reply(events=[chunk({"role": "assistant", "content": "Thinking"})], hold=30))
    proc = subprocess.Popen(
        totem.command("run", "--cwd", str(totem.project), "--config", str(totem.config), "--json", "--yes", "go"),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, env=totem.env,
    )
    assert proc.stdout is not None
    seen = []
    for line in proc.stdout:
        seen.append(json.loads(line))
        if seen[-1]["kind"] == "textDelta":
            break
    assert len(running_in(totem.project)) == 2, running_in(totem.project)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 130, stderr
    events = seen + [json.loads(line) for line in stdout.splitlines()]
    assert any(e["kind"] == "turnEnd" and e["stopReason"] == "aborted" for e in events)
    assert none_left(totem.project) == []


def test_an_http_server_with_a_header_is_listed_and_called_and_a_wrong_header_is_a_clear_notice(totem, user_mcp):
    http = HttpServer()
    try:
        user_mcp({"dict": http.entry()})
        totem.server.enqueue(tool_reply([("dict__lookup", {"word": "totem"})]))
        totem.server.enqueue(tool_reply([("dict__fail", {})]))
        totem.server.enqueue(tool_reply([("mcp_prompts", {})]))
        totem.server.enqueue(tool_reply([("mcp_prompts", {"server": "dict", "prompt": "review", "arguments": {"path": "a.py"}})]))
        totem.server.enqueue(text_reply("A carved pole."))
        result = totem.agent("what is a totem?", extra=("--yes",))
        assert result.code == 0, result.stderr
        assert {"dict__lookup", "dict__fail", "mcp_prompts"} <= set(offered(totem.server.requests[0]))
        listed, got = [e for e in result.of("toolEnd") if e["tool"] == "mcp_prompts"]
        assert listed["output"] == "- dict/review(path*): Ask for a review of one file."
        assert got["status"] == "ok" and "[user]\nReview a.py for mistakes" in got["output"]
        permissions = {e["callId"]: e["rule"] for e in result.of("permission")}
        assert permissions[listed["callId"]]["source"] == "default" and permissions[got["callId"]]["pattern"] == "dict__prompts"
        lookup, fail = [e for e in result.of("toolEnd") if e["tool"].startswith("dict__")]
        assert lookup["status"] == "ok" and "A carved pole that tells a story." in lookup["output"]
        assert fail["status"] == "error" and "Error executing tool fail" in fail["output"]
        assert "A carved pole that tells a story." in tool_messages(totem.server.requests[1])[-1]["content"]
        start = next(e for e in result.of("toolStart") if e["tool"] == "mcp-start")
        assert start["input"] == {"server": "dict", "url": http.url} and "requests go there, on this machine" in start["title"]

        user_mcp({"dict": http.entry(token="wrong")})
        totem.server.enqueue(text_reply("No dictionary."))
        result = totem.agent("what is a totem?", extra=("--yes",))
        assert result.code == 0, result.stderr
        assert not any(n.startswith("dict__") for n in offered(totem.server.requests[-1]))
        warning = next(e for e in result.of("notice") if e["message"].startswith("MCP server dict did not start"))
        assert warning["level"] == "warning" and "HTTP 401 Unauthorized" in warning["message"] and "wrong or missing X-Token" in warning["message"]
    finally:
        http.close()


def test_a_noisy_server_works_a_dying_one_fails_its_call_at_once_a_silent_one_is_dropped(totem, user_mcp):
    totem.config.write_text(totem.config.read_text().replace("retry_max_wait = 2.0\n", "retry_max_wait = 2.0\nmcp_start_timeout = 3\n"))
    user_mcp({"noisy": standin("--noisy"), "dying": standin("--die-on-call", "3"), "silent": standin("--silent")})
    totem.server.enqueue(tool_reply([("noisy__echo", {"text": "hi"})]))
    totem.server.enqueue(tool_reply([("dying__echo", {"text": "hi"})]))
    totem.server.enqueue(text_reply("Done."))
    result = totem.agent("echo", extra=("--yes",))

    assert result.code == 0, result.stderr
    first, second, third = totem.server.requests
    assert {"noisy__echo", "dying__echo"} <= set(offered(first)) and not any(n.startswith("silent__") for n in offered(first))
    assert tool_messages(second)[-1]["content"] == "echo: hi"
    dying = next(e for e in result.of("toolEnd") if e["tool"] == "dying__echo")
    assert dying["status"] == "error"
    assert "exited with code 3" in dying["output"] and "the database went away" in dying["output"]
    # The dead server's tools are gone at the next step; the others stay.
    assert "noisy__echo" in offered(third) and "dying__echo" not in offered(third)
    notices = [e["message"] for e in result.of("notice")]
    assert any(m.startswith("MCP server silent did not start: no answer to the handshake within 3 s") for m in notices)
    assert any(m.startswith("MCP server dying exited with code 3") for m in notices)
    assert none_left(totem.project) == []


def test_an_untrusted_projects_servers_are_not_started_and_totem_says_so(totem):
    write_mcp_json(totem.project / ".totem" / "mcp.json", {"echo": standin()})
    totem.server.enqueue(text_reply("Hi."))
    result = totem.agent("hello", extra=("--yes",))

    assert result.code == 0, result.stderr
    assert not any(e["tool"] == "mcp-start" for e in result.of("toolStart"))
    assert not any("__" in name for name in offered(totem.server.requests[0]))
    notice = next(e for e in result.of("notice") if "not trusted" in e["message"])
    assert "(echo)" in notice["message"] and "totem trust" in notice["message"]


def test_mcp_list_shows_each_server_whether_it_started_and_its_tools(totem, user_mcp):
    entries = real_entries(totem.project)
    user_mcp({"time": entries["time"], "off": {**standin(), "enabled": False}, "echo": standin("--noisy")})
    write_mcp_json(totem.project / ".totem" / "mcp.json", {"mine": standin()})
    result = totem.run("mcp", "list", "--cwd", str(totem.project), "--yes")

    assert result.code == 0, result.stderr
    lines = result.stdout.splitlines()
    servers = {line.split("\t")[0]: line.split("\t")[1] for line in lines if not line.startswith("  ")}
    # No --config here, so Forge is on: the folder is a new one (a Total.js project), and --yes
    # does not start a server outside this machine.
    assert servers.pop("forge").startswith("not started: it reaches outside this machine")
    assert servers == {
        "time": "started", "off": "off (enabled: false)", "echo": "started", "mine": "not started: the project is not trusted",
    }
    time_at = lines.index(next(line for line in lines if line.startswith("time\t")))
    assert lines[time_at + 1 : time_at + 3] == [
        "  time__convert_time\tConvert time between timezones", "  time__get_current_time\tGet current time in a specific timezone",
    ]
    assert "  echo__echo\tEcho the text back." in lines
    assert "not trusted" in result.stderr
    assert none_left(totem.project) == []


def test_a_4096_token_window_gets_the_real_servers_tools_by_name_and_fetches_a_schema_to_call_one(totem, user_mcp):
    # All three real servers (28 tools), the git one in a repository of the test's own.
    git(totem.project, "init", "-q", "-b", "trunk")
    # Compaction later than its default (0.7): Totem's own prompt and tools, the servers' names
    # and the output reserve already take 86% of a 4096-token window, and the summary request
    # compaction would send is not what this test is about.
    config = totem.config.read_text().replace("retry_max_wait", "compact_at = 0.95\nretry_max_wait")
    totem.config.write_text(config + '[models."sim/test-model"]\ncontext_window = 4096\n')
    totem.server.context_window = 4096  # a request over it gets the server's overflow error
    user_mcp({**real_entries(totem.project), "git": git_entry(totem.project)})
    totem.server.enqueue(tool_reply([("mcp_schema", {"tool": "time__get_current_time"})]))
    totem.server.enqueue(tool_reply([("time__get_current_time", {"timezone": "UTC"})]))
    totem.server.enqueue(text_reply("It is late."))
    result = totem.agent("what time is it in UTC?", extra=("--yes",))

    assert result.code == 0, result.stderr
    first, second, third = totem.server.requests
    assert all(request_tokens(r) <= 4096 for r in totem.server.requests)
    assert all(e["estimate"] <= 0.95 * 4096 for e in result.of("context"))  # nothing compacted
    tools = {t["function"]["name"]: t["function"] for t in first["tools"]}
    assert {"fs__read_text_file", "time__get_current_time", "git__git_status", "mcp_schema"} <= set(tools)
    # By name alone under 8K: no description or schema of its own until asked for.
    assert tools["time__get_current_time"]["parameters"] == {"type": "object"}
    assert not tools["time__get_current_time"].get("description")
    schema = tool_messages(second)[-1]["content"]
    assert schema.startswith("time__get_current_time: ") and '"timezone"' in schema and '"required"' in schema
    assert tool_messages(third)[-2]["content"] == schema  # the fetched schema is still whole when the tool is called
    assert json.loads(tool_messages(third)[-1]["content"])["timezone"] == "UTC"
    assert tools == {t["function"]["name"]: t["function"] for t in third["tools"]}  # the same specs every step
    assert none_left(totem.project) == []


def test_on_a_terminal_the_start_and_each_call_are_asked_and_always_is_kept_for_the_project(totem, user_mcp):
    import os
    import pty

    user_mcp({"time": real_entries(totem.project)["time"]})

    def run_on_a_terminal(answers: str) -> tuple[int, str]:
        controller, terminal = pty.openpty()
        os.write(controller, answers.encode())  # typed ahead: each question reads one line
        proc = subprocess.Popen(
            totem.command("run", "--cwd", str(totem.project), "--config", str(totem.config), "what time is it?"),
            stdin=terminal, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=totem.env,
        )
        os.close(terminal)
        try:
            _, stderr = proc.communicate(timeout=60)
        finally:
            os.close(controller)
        return proc.returncode, stderr

    totem.server.enqueue(tool_reply([("time__get_current_time", {"timezone": "UTC"})]))
    totem.server.enqueue(text_reply("Late."))
    code, stderr = run_on_a_terminal("a\ny\n")
    assert code == 0, stderr
    assert "Allow Start MCP server time: " in stderr and "[a] always (mcp-start time)" in stderr
    assert "Allow time__get_current_time(timezone=UTC)? [y] once, [a] always (mcp time__get_current_time)" in stderr
    assert '"timezone": "UTC"' in tool_messages(totem.server.requests[1])[-1]["content"]

    # The next run of the project starts it without asking; the call still asks (and is refused).
    totem.server.enqueue(tool_reply([("time__get_current_time", {"timezone": "UTC"})]))
    totem.server.enqueue(text_reply("No clock."))
    code, stderr = run_on_a_terminal("n\n")
    assert code == 0, stderr
    assert "Allow Start MCP server" not in stderr and "Allow time__get_current_time" in stderr
    assert tool_messages(totem.server.requests[3])[-1]["content"] == "The user rejected this action."
    assert none_left(totem.project) == []
