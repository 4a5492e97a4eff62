"""Slash commands end to end: ``totem run "/NAME args"`` against the scripted loopback model."""

from __future__ import annotations

from tests.support.model_server import text_reply, tool_reply
from tests.support.reminder import sent_messages


def user_texts(request: dict) -> list[str]:
    return [m["content"] for m in sent_messages(request) if m["role"] == "user"]


def test_a_command_sends_its_expansion_and_the_session_shows_what_was_typed(totem):
    commands = totem.project / ".totem" / "commands"
    commands.mkdir(parents=True)
    (commands / "fix.md").write_text("---\ndescription: Fix a bug\n---\nFind and fix $ARGUMENTS. Start with $1.\n")
    totem.server.enqueue(text_reply("Fixed."), text_reply("Still fixed."), text_reply("Nothing to do."))
    first = totem.agent("/fix the bug")

    assert first.code == 0, first.stderr
    assert user_texts(totem.server.requests[0]) == ["Find and fix the bug. Start with the."]
    session = first.of("turnEnd")[0]["sessionId"]
    shown = totem.run("sessions", "show", session)
    assert "user: /fix the bug" in shown.stdout and "Find and fix" not in shown.stdout
    [part] = [p for m in totem.export(session)["messages"] if m["role"] == "user" for p in m["parts"]]
    assert part["data"] == {"text": "Find and fix the bug. Start with the.", "typed": "/fix the bug"}

    later = totem.agent("and the other one?", extra=("--session", session))
    assert later.code == 0, later.stderr
    assert user_texts(totem.server.requests[1]) == ["Find and fix the bug. Start with the.", "and the other one?"]

    plain = totem.agent("/nothing like this")
    assert plain.code == 0, plain.stderr
    assert user_texts(totem.server.requests[2]) == ["/nothing like this"]


def test_init_writes_agents_md_from_the_built_in_prompt(totem):
    (totem.project / "Makefile").write_text("test:\n\tpython -m pytest -q\n")
    content = "# AGENTS.md\n\n## Build and test\n\n```\nmake test\n```\n"
    totem.server.enqueue(
        tool_reply([("read", {"path": "Makefile"})]),
        tool_reply([("write", {"path": "AGENTS.md", "content": content})]),
        text_reply("Wrote AGENTS.md."),
    )
    result = totem.agent("/init", extra=("--yes",))

    assert result.code == 0, result.stderr
    [typed] = user_texts(totem.server.requests[0])
    assert "Write the file AGENTS.md" in typed and "update it" in typed
    assert (totem.project / "AGENTS.md").read_text() == content


def test_undo_as_a_command_puts_back_the_last_turn(totem):
    totem.server.enqueue(tool_reply([("write", {"path": "a.txt", "content": "new\n"})]), text_reply("Wrote it."))
    assert totem.agent("write a.txt", extra=("--yes",)).code == 0
    assert (totem.project / "a.txt").exists()
    undone = totem.run("run", "--cwd", str(totem.project), "--config", str(totem.config), "/undo")
    assert undone.code == 0, undone.stderr
    assert "a.txt" in undone.stdout and not (totem.project / "a.txt").exists()
    assert len(totem.server.requests) == 2  # /undo asked the model nothing


def test_compact_summarises_the_session_and_the_next_turn_starts_from_the_summary(totem):
    totem.server.enqueue(text_reply("The answer is in a.py."))
    first = totem.agent("where is the parser?")
    assert first.code == 0, first.stderr
    session = first.of("turnEnd")[0]["sessionId"]

    totem.server.enqueue(text_reply("The user looked for the parser; it is in a.py."))
    compacted = totem.run("run", "--cwd", str(totem.project), "--config", str(totem.config), "--session", session, "/compact")
    assert compacted.code == 0, compacted.stderr
    assert compacted.stdout.strip() == (
        "Compacted: 2 messages are summarised; the next turn starts from the summary."  # api/replies.py's wording
    )
    summary_request = totem.server.requests[1]
    assert "tools" not in summary_request and "where is the parser?" in str(summary_request["messages"])

    totem.server.enqueue(text_reply("Yes."))
    later = totem.agent("is it still there?", extra=("--session", session))
    assert later.code == 0, later.stderr
    sent = str(totem.server.requests[2]["messages"])
    assert "it is in a.py" in sent and "The answer is in a.py." not in sent
    assert "where is the parser?" in sent  # the pinned first request stays verbatim

    again = totem.run("run", "--cwd", str(totem.project), "--config", str(totem.config), "--session", session, "/compact")
    assert again.code == 0 and len(totem.server.requests) == 4  # the new turn is summarised with the old summary
