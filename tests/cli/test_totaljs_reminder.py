"""The short Total.js reminder on each request (seed 001): in a Total.js project every request the
model gets ends with it, after the history (so the history stays a cached prefix), joined to a
last user message so roles still alternate, and it is not stored as something the user wrote; a
Python project's requests carry none."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.cli.test_small_model import run_small
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
    assert first["messages"][-1] == {"role": "user", "content": f"Look around\n\n{REMINDER}"}  # one user message
    assert second["messages"][-1] == {"role": "user", "content": REMINDER}  # after the tool result
    assert second["messages"][-2]["role"] == "tool"
    for request in (first, second):
        assert sum(REMINDER in str(m.get("content")) for m in request["messages"]) == 1  # not kept from the step before
    # The cached prefix: the system prompt, then the request as the user wrote it.
    assert second["messages"][:2] == [first["messages"][0], {"role": "user", "content": "Look around"}]
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


def test_a_small_models_requests_keep_roles_alternating_with_the_reminder(totem):
    """A small model writes its calls as text and reads their results as user messages; the
    reminder joins the last of them, as chat templates (Gemma, Mistral) refuse two in a row."""
    shutil.rmtree(totem.project)
    shutil.copytree(FIXTURES / "totaljs", totem.project)
    totem.server.enqueue(text_reply('```json\n{"name": "bash", "arguments": {"command": "ls"}}\n```\n'))
    totem.server.enqueue(text_reply("Looked."))
    result = run_small(totem, "Look around")

    assert result.code == 0, result.stderr
    first, second = totem.server.requests
    assert [m["role"] for m in first["messages"]] == ["system", "user"]
    assert [m["role"] for m in second["messages"]] == ["system", "user", "assistant", "user"]
    for request in (first, second):
        assert request["messages"][-1]["content"].endswith(f"\n\n{REMINDER}")
        assert str(request["messages"]).count("<reminder>") == 1
    assert second["messages"][-1]["content"].startswith("The bash call returned:")
