"""Hooks through the real ``totem run`` (issue 36): the user's commands at the turn's lifecycle
points, on Claude Code's contract (JSON on stdin; exit 2 blocks; JSON on stdout), against a
scripted loopback model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from tests.support.model_server import text_reply, tool_reply

PY = sys.executable

# A script of the user's in the shape of Claude Code's published bash command validator example
# (its repository's examples/hooks/bash_command_validator_example.py): it reads the same input,
# knows Claude Code's tool name "Bash", and blocks with exit 2 and its reasons on stderr.
VALIDATOR = textwrap.dedent(
    """
    import json, re, sys

    RULES = [
        (r"\\brm\\s+-rf\\b", "rm -rf is not allowed here; delete the files you mean by name"),
        (r"^grep\\b(?!.*\\|)", "Use 'rg' (ripgrep) instead of 'grep' for better performance"),
    ]

    data = json.load(sys.stdin)
    if data.get("tool_name") != "Bash":
        sys.exit(0)
    command = data.get("tool_input", {}).get("command", "")
    issues = [message for pattern, message in RULES if re.search(pattern, command)]
    if issues:
        for message in issues:
            print(f"* {message}", file=sys.stderr)
        sys.exit(2)
    """
)


def script(totem, name: str, body: str) -> str:
    """A hook script of the user's, outside the project; the command line that runs it."""
    path = totem.home / name
    path.write_text(textwrap.dedent(body))
    return f"{PY} {path}"


def hook(totem, event: str, command: str, *, matcher: str | None = None, timeout: float | None = None) -> None:
    """One ``[[hooks.<event>]]`` table in the run's config (a file the user named: trusted)."""
    lines = [f"\n[[hooks.{event}]]", f"command = {json.dumps(command)}"]
    if matcher is not None:
        lines.append(f"matcher = {json.dumps(matcher)}")
    if timeout is not None:
        lines.append(f"timeout = {timeout}")
    with totem.config.open("a") as f:
        f.write("\n".join(lines) + "\n")


def sent(totem, index: int) -> str:
    return json.dumps(totem.server.requests[index]["messages"])


def test_a_pre_tool_use_hook_blocks_rm_rf_and_the_model_reads_why(totem):
    hook(totem, "PreToolUse", script(totem, "validator.py", VALIDATOR), matcher="Bash")
    (totem.project / "keep.txt").write_text("kept\n")
    totem.server.enqueue(tool_reply([("bash", {"command": "rm -rf keep.txt"})]))
    totem.server.enqueue(text_reply("I will not."))
    result = totem.agent("clean up", extra=("--yes",))
    assert result.code == 0, result.stderr
    [end] = result.of("toolEnd")
    assert end["status"] == "denied"
    assert "rm -rf is not allowed here" in end["output"]
    [permission] = result.of("permission")
    assert permission["decision"] == "deny" and permission["rule"]["source"] == "hook"
    assert (totem.project / "keep.txt").exists()
    assert "rm -rf is not allowed here" in sent(totem, 1)


def test_claude_codes_validator_shape_lets_other_commands_and_tools_through(totem):
    hook(totem, "PreToolUse", script(totem, "validator.py", VALIDATOR), matcher="Bash|Read")
    (totem.project / "a.txt").write_text("hello\n")
    totem.server.enqueue(tool_reply([("bash", {"command": "echo fine"}), ("read", {"path": "a.txt"})]))
    totem.server.enqueue(tool_reply([("bash", {"command": "grep hello a.txt"})]))
    totem.server.enqueue(text_reply("Done."))
    result = totem.agent("look", extra=("--yes",))
    assert result.code == 0, result.stderr
    echo, read, grep = result.of("toolEnd")
    assert echo["status"] == "ok" and "fine" in echo["output"]
    assert read["status"] == "ok"  # the script passes every tool but "Bash"
    assert grep["status"] == "denied" and "Use 'rg'" in grep["output"]


def test_a_post_tool_use_hook_formats_the_written_file_and_the_model_sees_its_output(totem):
    formatter = script(
        totem, "fmt.py",
        """
        import json, sys
        data = json.load(sys.stdin)
        path = data["tool_input"]["file_path"]
        text = open(path).read()
        open(path, "w").write(text.replace("\\t", "    "))
        print(f"formatted {data['tool_input']['path']} (tool {data['tool_name']}, ok {data['tool_response']['success']})")
        """,
    )
    hook(totem, "PostToolUse", formatter, matcher="edit|write")
    totem.server.enqueue(tool_reply([("write", {"path": "m.py", "content": "def f():\n\treturn 1\n"})]))
    totem.server.enqueue(tool_reply([("edit", {"path": "m.py", "old_string": "return 1", "new_string": "return 2"})]))
    totem.server.enqueue(text_reply("Done."))
    result = totem.agent("write m.py", extra=("--yes",))
    assert result.code == 0, result.stderr
    write, edit = result.of("toolEnd")
    assert write["status"] == "ok" and edit["status"] == "ok", edit["output"]  # the rewrite did not make m.py stale
    assert (totem.project / "m.py").read_text() == "def f():\n    return 2\n"
    assert "formatted m.py (tool Write, ok True)" in sent(totem, 1)
    assert "formatted m.py (tool Edit, ok True)" in sent(totem, 2)
    # The hook's rewrite is the call's change: undo takes the file back to before the turn.
    undone = totem.run("undo", "--cwd", str(totem.project), "--config", str(totem.config))
    assert undone.code == 0, undone.stderr
    assert not (totem.project / "m.py").exists()


def test_prompt_submit_and_session_start_context_reach_the_first_request(totem):
    hook(totem, "SessionStart", script(totem, "start.py", "import json, sys\nprint('On branch feature/x; source', json.load(sys.stdin)['source'])\n"))
    submit = script(
        totem, "submit.py",
        """
        import json, sys
        data = json.load(sys.stdin)
        print(json.dumps({"hookSpecificOutput": {"hookEventName": "UserPromptSubmit",
                          "additionalContext": "Open ticket: ABC-123 for " + data["prompt"]}}))
        """,
    )
    hook(totem, "UserPromptSubmit", submit)
    totem.server.enqueue(text_reply("Noted."))
    result = totem.agent("fix the login")
    assert result.code == 0, result.stderr
    first = sent(totem, 0)
    assert "On branch feature/x; source startup" in first
    assert "Open ticket: ABC-123 for fix the login" in first
    # The context is the model's, beside the request; the chat shows the request alone.
    session = result.of("turnStart")[0]["sessionId"]
    shown = totem.run("sessions", "show", session)
    assert "fix the login" in shown.stdout and "ABC-123" not in shown.stdout


def test_a_prompt_submit_hook_that_exits_2_blocks_the_prompt(totem):
    hook(totem, "UserPromptSubmit", script(totem, "deny.py", "import sys\nprint('no secrets in prompts', file=sys.stderr)\nsys.exit(2)\n"))
    result = totem.agent("here is my password hunter2")
    assert result.code == 3, result.stderr  # ended by a guard
    assert totem.server.requests == []  # the model never saw it
    [end] = result.of("turnEnd")
    assert end["stopReason"] == "guard"
    assert "no secrets in prompts" in result.stdout


def test_a_stop_hook_that_blocks_goes_on_once_and_then_the_turn_ends(totem):
    hook(totem, "Stop", script(
        totem, "stop.py",
        """
        import json, sys
        data = json.load(sys.stdin)
        print(f"tests still fail (active: {data['stop_hook_active']})", file=sys.stderr)
        sys.exit(2)
        """,
    ))
    totem.server.enqueue(text_reply("Done."))
    totem.server.enqueue(text_reply("Now really done."))
    result = totem.agent("fix it")
    assert result.code == 0, result.stderr
    assert len(totem.server.requests) == 2  # one more step, and no third
    assert "tests still fail (active: False)" in sent(totem, 1)
    notices = [n["message"] for n in result.of("notice")]
    assert any("tests still fail (active: True)" in n and "the turn ends" in n for n in notices), notices


def test_a_hook_that_hangs_is_killed_at_its_timeout_and_the_turn_goes_on(totem):
    pid_file = totem.home / "hook.pid"
    hanging = script(totem, "hang.py", f"import os, time\nopen({str(pid_file)!r}, 'w').write(str(os.getpid()))\ntime.sleep(60)\n")
    hook(totem, "PreToolUse", hanging, timeout=1)
    totem.server.enqueue(tool_reply([("bash", {"command": "echo still-ran"})]))
    totem.server.enqueue(text_reply("Done."))
    started = time.monotonic()
    result = totem.agent("go", extra=("--yes",))
    assert time.monotonic() - started < 30
    assert result.code == 0, result.stderr
    [end] = result.of("toolEnd")
    assert end["status"] == "ok" and "still-ran" in end["output"]
    assert any("killed after its timeout of 1 s" in n["message"] for n in result.of("notice"))
    pid = int(pid_file.read_text())
    assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text().lower()


def test_a_hooks_environment_has_no_credentials(totem):
    dump = totem.home / "env.json"
    hook(totem, "UserPromptSubmit", script(totem, "env.py", f"import json, os\njson.dump(dict(os.environ), open({str(dump)!r}, 'w'))\n"))
    totem.server.enqueue(text_reply("Ok."))
    env = {**totem.env, "OPENAI_API_KEY": "sk-from-env-1234", "PLAIN_SETTING": "visible"}
    proc = subprocess.run(
        totem.command("run", "--cwd", str(totem.project), "--config", str(totem.config), "hello"),
        capture_output=True, text=True, env=env, timeout=60, stdin=subprocess.DEVNULL, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(dump.read_text())
    assert "OPENAI_API_KEY" not in seen and seen["PLAIN_SETTING"] == "visible"
    assert seen["CLAUDE_PROJECT_DIR"] == str(totem.project.resolve())
    assert "sk-secret-test-key" not in json.dumps(seen)


def test_an_untrusted_projects_hooks_do_not_run_and_are_listed_as_ignored(totem):
    marker = totem.home / "ran"
    (totem.project / ".totem").mkdir()
    (totem.project / ".totem" / "config.toml").write_text(
        f'[[hooks.UserPromptSubmit]]\ncommand = "touch {marker}"\n'
    )
    totem.server.enqueue(text_reply("Ok."))
    result = totem.agent("hello")
    assert result.code == 0, result.stderr
    assert not marker.exists()
    listed = totem.run("hooks", "list", "--cwd", str(totem.project))
    assert listed.code == 0, listed.stderr
    assert "UserPromptSubmit\t*\ttouch" in listed.stdout and "ignored: the project is not trusted" in listed.stdout

    assert totem.run("trust", str(totem.project)).code == 0
    totem.server.enqueue(text_reply("Ok."))
    again = totem.agent("hello again")
    assert again.code == 0, again.stderr
    assert marker.exists()
    assert "\tactive" in totem.run("hooks", "list", "--cwd", str(totem.project)).stdout
    assert os.access(marker, os.F_OK)


def recorder(totem) -> tuple[str, Path]:
    """A hook that appends what it was given to a file, one JSON line a run."""
    log = totem.home / "hooks.log"
    return script(totem, "record.py", f"import sys\nopen({str(log)!r}, 'a').write(sys.stdin.read() + '\\n')\n"), log


def recorded(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_session_end_and_pre_compact_run_with_their_payloads(totem):
    command, log = recorder(totem)
    for event in ("SessionEnd", "PreCompact"):
        hook(totem, event, command)
    totem.server.enqueue(text_reply("Hello."))
    result = totem.agent("hi")
    session = result.of("turnStart")[0]["sessionId"]
    kinds = [(r["hook_event_name"], r.get("reason")) for r in recorded(log)]
    assert kinds == [("SessionEnd", "other")], kinds
    assert all(r["session_id"] == session and r["cwd"] == str(totem.project.resolve()) for r in recorded(log))

    totem.server.enqueue(text_reply("A summary of the session."))
    compacted = totem.run("run", "--cwd", str(totem.project), "--config", str(totem.config), "--session", session, "/compact")
    assert compacted.code == 0, compacted.stderr
    assert ("PreCompact", "manual") in [(r["hook_event_name"], r.get("trigger")) for r in recorded(log)]


def test_a_sub_agents_end_runs_subagent_stop_and_not_the_conversations_hooks(totem):
    command, log = recorder(totem)
    for event in ("SubagentStop", "UserPromptSubmit", "Stop"):
        hook(totem, event, command)
    totem.server.enqueue(tool_reply([("task", {"agent": "explore", "prompt": "find x", "description": "look"})]))
    totem.server.enqueue(text_reply("Found nothing."))  # the sub-agent's answer
    totem.server.enqueue(text_reply("Done."))
    result = totem.agent("delegate", extra=("--yes",))
    assert result.code == 0, result.stderr
    assert [r["hook_event_name"] for r in recorded(log)] == ["UserPromptSubmit", "SubagentStop", "Stop"]
