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
