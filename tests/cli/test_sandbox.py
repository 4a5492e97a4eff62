"""The sandbox for commands (issue 19), through the real ``totem run``: bubblewrap with the file
system read-only but the project (an overlay), a private /tmp, one network namespace per session
with only loopback, undo of what a sandboxed command changed (also outside git), and
``sandbox = "never"`` for the old behaviour."""

from __future__ import annotations

import re
from pathlib import Path

from tests.cli.test_jobs import none_left
from tests.support.model_server import text_reply, tool_reply


def configured(totem, line: str) -> None:
    totem.config.write_text(line + "\n" + totem.config.read_text())


def bash_calls(totem, *calls: dict, extra: tuple[str, ...] = ("--yes",)):
    for arguments in calls:
        totem.server.enqueue(tool_reply([("bash", arguments)]))
    totem.server.enqueue(text_reply("Done."))
    result = totem.agent("do it", extra=extra)
    assert result.code == 0, result.stderr
    return result, [e for e in result.of("toolEnd") if e["tool"] == "bash"]


def test_writes_outside_the_project_fail_and_tmp_is_private(totem):
    command = "echo x > /tmp/outside-$$ ; echo y > ../escape ; echo pid=$$ ; cat /tmp/outside-$$"
    _, [end] = bash_calls(totem, {"command": command})
    pid = re.search(r"pid=(\d+)", end["output"]).group(1)
    assert "../escape: Read-only file system" in end["output"]
    assert "\nx\n" in end["output"] + "\n"  # the /tmp write landed, in the session's own /tmp
    assert not Path(f"/tmp/outside-{pid}").exists()
    assert not (totem.project.parent / "escape").exists()
    assert end["changed"] == []


def test_no_address_but_loopback_is_reachable(totem):
    # 10.255.255.1 has no route in the session's namespace: connect fails at once, no packet leaves.
    probe = ("python3 -c \"import socket; s = socket.socket(); s.settimeout(5); print('connect', s.connect_ex(('10.255.255.1', 80)))\""
             " ; tail -n +3 /proc/net/dev | cut -d: -f1")
    _, [end] = bash_calls(totem, {"command": probe})
    assert "connect 101" in end["output"]  # ENETUNREACH
    assert [line.strip() for line in end["output"].splitlines()[1:] if line.strip() and not line.startswith("[")] == ["lo"]


def test_the_project_is_writable_and_what_changed_is_undone_outside_git(totem):
    (totem.project / "f.txt").write_text("a line\n")
    (totem.project / "gone.txt").write_text("delete me\n")
    (totem.project / "sub").mkdir()
    (totem.project / "sub" / "inner.txt").write_text("inner\n")
    _, [end] = bash_calls(totem, {"command": "sed -i s/a/b/ f.txt && touch new.txt && rm gone.txt && rm -r sub && chmod +x f.txt"})
    assert (totem.project / "f.txt").read_text() == "b line\n" and (totem.project / "new.txt").exists()
    assert not (totem.project / "gone.txt").exists() and not (totem.project / "sub").exists()
    assert (totem.project / "f.txt").stat().st_mode & 0o100
    assert sorted(end["changed"]) == ["f.txt", "gone.txt", "new.txt", "sub/inner.txt"]
    assert "[Changed by the command: f.txt, gone.txt (deleted), new.txt (new), sub/inner.txt (deleted)]" in end["output"]

    undone = totem.run("undo", "--cwd", str(totem.project), "--config", str(totem.config))
    assert undone.code == 0, undone.stderr
    assert (totem.project / "f.txt").read_text() == "a line\n" and not (totem.project / "new.txt").exists()
    assert (totem.project / "gone.txt").read_text() == "delete me\n"
    assert (totem.project / "sub" / "inner.txt").read_text() == "inner\n"


# A dev server on a fixed port: inside the session's own network namespace nothing else holds it.
SERVE = """\
import http.server
server = http.server.ThreadingHTTPServer(("127.0.0.1", 8000), http.server.SimpleHTTPRequestHandler)
print("listening on 127.0.0.1:8000", flush=True)
server.serve_forever()
"""
PROBE = """\
import time, urllib.request
for _ in range(200):
    try:
        print(urllib.request.urlopen("http://127.0.0.1:8000/hello.txt", timeout=10).read().decode())
        break
    except OSError:
        time.sleep(0.05)
"""


def test_a_jobs_server_is_reachable_from_a_later_bash_of_the_session(totem):
    (totem.project / "serve.py").write_text(SERVE)
    (totem.project / "probe.py").write_text(PROBE)
    (totem.project / "hello.txt").write_text("hello from the job\n")
    totem.server.enqueue(tool_reply([("job", {"action": "start", "command": "python3 serve.py"})]))
    totem.server.enqueue(tool_reply([("bash", {"command": "python3 probe.py"})]))
    totem.server.enqueue(tool_reply([("job", {"action": "stop", "id": "job1"})]))
    totem.server.enqueue(text_reply("It answers."))
    result = totem.agent("serve and probe", extra=("--yes",))
    assert result.code == 0, result.stderr
    [probe] = [e for e in result.of("toolEnd") if e["tool"] == "bash"]
    assert "hello from the job" in probe["output"], probe["output"]
    assert none_left(totem.project) == []


def test_a_command_may_leave_the_sandbox_when_the_user_allows_it(totem):
    result, [end] = bash_calls(totem, {"command": "echo y > ../escape", "outside_sandbox": True})
    [asked] = [e for e in result.of("permission") if e["callId"] == end["callId"]]
    assert asked["rule"]["permission"] == "sandbox-escape"
    assert (totem.project.parent / "escape").read_text() == "y\n"


def test_a_bash_deny_rule_still_holds_outside_the_sandbox(totem):
    totem.config.write_text(totem.config.read_text() + '[permission]\nbash = { "echo *" = "deny" }\n')
    _, [end] = bash_calls(totem, {"command": "echo y > ../escape", "outside_sandbox": True})
    assert end["status"] == "denied"
    assert not (totem.project.parent / "escape").exists()


def test_sandbox_never_runs_commands_as_they_are(totem):
    configured(totem, 'sandbox = "never"')
    _, [end] = bash_calls(totem, {"command": "echo y > ../escape && cat /proc/net/dev | wc -l"})
    assert end["status"] == "ok", end["output"]
    assert (totem.project.parent / "escape").read_text() == "y\n"


def escaping_calls(totem, tool: str, *calls: dict):
    """``tool`` calls (a job's or a terminal's), each answered by the scripted server in turn;
    the run's result and the ``start`` call's end and permission events."""
    for arguments in calls:
        totem.server.enqueue(tool_reply([(tool, arguments)]))
    totem.server.enqueue(text_reply("Done."))
    result = totem.agent("do it", extra=("--yes",))
    assert result.code == 0, result.stderr
    start = next(e for e in result.of("toolEnd") if e["tool"] == tool)
    return result, start, [e for e in result.of("permission") if e["callId"] == start["callId"]]


def test_a_job_may_leave_the_sandbox_when_the_user_allows_it_and_not_otherwise(totem):
    command = "echo y > ../job-escape; echo ran"
    result, start, _ = escaping_calls(totem, "job", {"action": "start", "command": command},
                                      {"action": "wait", "id": "job1", "timeout": 20})
    [waited] = [e for e in result.of("toolEnd") if e["tool"] == "job" and e["callId"] != start["callId"]]
    assert "Read-only file system" in waited["output"], waited["output"]
    assert not (totem.project.parent / "job-escape").exists()
    result, start, [asked] = escaping_calls(totem, "job", {"action": "start", "command": command, "outside_sandbox": True},
                                            {"action": "wait", "id": "job1", "timeout": 20})
    assert asked["rule"]["permission"] == "sandbox-escape"
    [waited] = [e for e in result.of("toolEnd") if e["tool"] == "job" and e["callId"] != start["callId"]]
    assert "ran" in waited["output"] and "exited with code 0" in waited["output"], waited["output"]
    assert (totem.project.parent / "job-escape").read_text() == "y\n"
    assert none_left(totem.project) == []


def test_a_terminal_may_leave_the_sandbox_when_the_user_allows_it(totem):
    _, start, [asked] = escaping_calls(
        totem, "terminal", {"action": "start", "command": "echo y > ../term-escape && echo written", "outside_sandbox": True},
    )
    assert asked["rule"]["permission"] == "sandbox-escape"
    assert "written" in start["output"], start["output"]
    assert (totem.project.parent / "term-escape").read_text() == "y\n"


def test_a_bash_deny_rule_still_holds_for_a_job_outside_the_sandbox(totem):
    totem.config.write_text(totem.config.read_text() + '[permission]\nbash = { "echo *" = "deny" }\n')
    _, start, _ = escaping_calls(totem, "job", {"action": "start", "command": "echo y > ../job-escape", "outside_sandbox": True})
    assert start["status"] == "denied"
    assert not (totem.project.parent / "job-escape").exists()


# Issue 34, hole 4: a command a rule allows plants a config that allows more, or a git hook.
PLANT_CONFIG = "python3 -c \"import os; os.makedirs('.totem', exist_ok=True); open('.totem/config.toml', 'w').write('[permission]\\nedit = 1\\n')\""
PLANT_HOOK = "python3 -c \"open('.git/hooks/pre-commit', 'w').write('#!/bin/sh\\ntouch pwned\\n')\""
ALLOW_PYTHON = '[permission]\nbash = { "python3 *" = "allow" }\n'


def _git_project(totem) -> None:
    import subprocess

    subprocess.run(["git", "init", "-q", str(totem.project)], check=True)
    (totem.project / ".git" / "hooks").mkdir(exist_ok=True)
    totem.config.write_text(totem.config.read_text() + ALLOW_PYTHON)


def _untouched(totem) -> bool:
    # A job's sandbox leaves an empty .totem behind: the mount point of its read-only one.
    totem_folder = totem.project / ".totem"
    empty = not totem_folder.exists() or (totem_folder.is_dir() and not any(totem_folder.iterdir()))
    return empty and not (totem.project / ".git" / "hooks" / "pre-commit").exists()


def test_a_rule_allowed_command_cannot_write_the_protected_folders_in_the_sandbox(totem):
    _git_project(totem)
    totem.server.enqueue(tool_reply([("job", {"action": "start", "command": PLANT_HOOK})]))
    totem.server.enqueue(tool_reply([("job", {"action": "wait", "id": "job1", "timeout": 20})]))
    result, ends = bash_calls(totem, {"command": PLANT_CONFIG}, {"command": PLANT_HOOK}, extra=())
    assert [e["decision"] for e in result.of("permission")] == ["allow"] * 4  # the rule: nobody asked
    assert all("Read-only file system" in e["output"] for e in ends), [e["output"] for e in ends]
    waited = [e for e in result.of("toolEnd") if e["tool"] == "job"][-1]
    assert "Read-only file system" in waited["output"], waited["output"]
    assert _untouched(totem)


def test_without_the_sandbox_a_rule_allowed_command_naming_a_protected_folder_asks(totem):
    _git_project(totem)
    configured(totem, 'sandbox = "never"')  # _git_project added the python3 rule
    totem.server.enqueue(tool_reply([("bash", {"command": "ls -a"})]))
    totem.server.enqueue(tool_reply([("bash", {"command": "python3 -c \"open('made.txt', 'w').write('x')\""})]))
    totem.server.enqueue(tool_reply([("bash", {"command": PLANT_CONFIG})]))
    totem.server.enqueue(text_reply("Done."))
    result = totem.agent("do it")
    assert result.code in (0, 3), result.stderr
    listed, allowed, planted = result.of("permission")
    assert listed["decision"] == "allow"  # a read-only command still runs unasked
    assert allowed["decision"] == "allow" and (totem.project / "made.txt").exists()  # the rule holds
    assert planted["decision"] == "reject"  # it names .totem: asked, and nobody could answer
    assert "needs permission and there is no terminal to ask" in result.stderr + result.stdout
    assert _untouched(totem)
