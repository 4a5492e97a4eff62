"""The terminal tool through the real ``totem run`` (issue 19): a REPL on a pseudo-terminal,
typed into and read back; nothing of it left in the process table after the run."""

from __future__ import annotations

from tests.cli.test_jobs import none_left
from tests.support.model_server import text_reply, tool_reply
from tests.support.reminder import sent_messages


def test_the_terminal_runs_a_repl_that_answers_what_is_typed(totem):
    totem.server.enqueue(tool_reply([("terminal", {"action": "start", "command": "python3 -i -q"})]))
    totem.server.enqueue(tool_reply([("terminal", {"action": "send", "id": "term1", "keys": "1+1\n"})]))
    totem.server.enqueue(tool_reply([("terminal", {"action": "read", "id": "term1"})]))
    totem.server.enqueue(text_reply("It says 2."))
    result = totem.agent("ask python what 1+1 is", extra=("--yes",))

    assert result.code == 0, result.stderr
    start, send, read = [e for e in result.of("toolEnd") if e["tool"] == "terminal"]
    assert start["status"] == "ok" and start["output"].startswith(">>>\n[term1 running")
    assert send["output"].splitlines()[:2] == [">>> 1+1", "2"]
    assert read["output"] == send["output"]
    # What the model read in its next request is the screen, as the tool returned it.
    assert sent_messages(totem.server.requests[3])[-1]["content"] == read["output"]
    # The start was asked like a bash call (and --yes answered it); typing is allowed by default.
    permissions = {e["callId"]: e for e in result.of("permission")}
    assert permissions[start["callId"]]["rule"]["permission"] == "bash"
    assert permissions[send["callId"]]["rule"] == {"source": "default", "permission": "terminal", "pattern": "*", "action": "allow"}
    # The run closed the project, and the REPL with it.
    assert none_left(totem.project) == []
