"""The short Total.js reminder on each request (seed 001): in a Total.js project every request the
model gets ends with it, after the history (so the history stays a cached prefix), and it is not
stored as something the user wrote; a Python project's requests carry none."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.support.model_server import text_reply, tool_reply
from totem_engine.prompt_files import prompt

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
REMINDER = prompt("totaljs_reminder.txt")


def two_steps(totem):
    totem.server.enqueue(tool_reply([("glob", {"pattern": "*"})]))
    totem.server.enqueue(text_reply("Looked."))
    return totem.agent("Look around")


def test_each_request_in_a_totaljs_project_ends_with_the_reminder_and_it_is_not_stored(totem):
    shutil.rmtree(totem.project)
    shutil.copytree(FIXTURES / "totaljs", totem.project)
    result = two_steps(totem)

    assert result.code == 0, result.stderr
    first, second = totem.server.requests
    for request in (first, second):
        assert request["messages"][-1] == {"role": "user", "content": REMINDER}
        assert sum(REMINDER in str(m.get("content")) for m in request["messages"]) == 1  # not kept from the step before
    assert first["messages"][-2]["content"] == "Look around"
    assert second["messages"][:-1][: len(first["messages"]) - 1] == first["messages"][:-1]  # the cached prefix
    assert second["messages"][-2]["role"] == "tool"
    export = totem.export(result.of("turnEnd")[0]["sessionId"])
    assert "<reminder>" not in str(export["messages"])


def test_a_python_projects_requests_carry_no_reminder(totem):
    shutil.rmtree(totem.project)
    shutil.copytree(FIXTURES / "python_ruff", totem.project)
    result = two_steps(totem)

    assert result.code == 0, result.stderr
    for request in totem.server.requests:
        assert "<reminder>" not in str(request["messages"])
    assert totem.server.requests[0]["messages"][-1]["content"] == "Look around"
