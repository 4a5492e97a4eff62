"""The session actions at the command line (issue 33): ``totem rewind``, ``totem retry``,
``totem regenerate``, ``totem sessions diff``, and a session another process runs refused with
exit 2; the real ``totem`` against the scripted loopback model server."""

from __future__ import annotations

import json
import signal
import subprocess

from tests.support.model_server import Reply, text_reply, tool_reply
from tests.support.reminder import sent_messages
from totem_engine.retry import MAX_TRIES


def texts(message: dict) -> list[str]:
    return [p["data"]["text"] for p in message["parts"] if p["type"] == "text" and not p["discarded"]]


def conversation(export: dict) -> list[tuple[str, str]]:
    """The conversation as it stands (the messages on the path): each text, with its role."""
    return [(m["role"], text) for m in export["messages"] if m["active"] and not m["rewound"] for text in texts(m)]


def write_turn(totem, content: str, *extra: str) -> str:
    """A turn that writes ``content`` into a.txt; its session id."""
    totem.server.enqueue(tool_reply([("write", {"path": "a.txt", "content": content})]), text_reply(f"Wrote {content.strip()}."))
    result = totem.agent(f"write {content.strip()}", extra=("--yes", *extra))
    assert result.code == 0, result.stderr
    return result.of("turnEnd")[0]["sessionId"]


def test_rewind_puts_the_files_and_the_conversation_back(totem):
    session_id = write_turn(totem, "one\n")
    write_turn(totem, "two\n", "--session", session_id)
    args = ("--cwd", str(totem.project), "--config", str(totem.config))

    dry = totem.run("rewind", *args, "--dry-run")
    assert dry.code == 0, dry.stderr
    assert f"would rewind session {session_id}" in dry.stdout and "3 messages set aside; nothing done" in dry.stdout  # request, call, answer
    assert "restored\ta.txt" in dry.stdout
    assert (totem.project / "a.txt").read_text() == "two\n"  # nothing done
    assert len(conversation(totem.export(session_id))) == 4  # two requests, two answers

    rewound = totem.run("rewind", *args)  # the newest session, back before its last request
    assert rewound.code == 0, rewound.stderr
    assert f"rewound session {session_id}" in rewound.stdout and "restored\ta.txt" in rewound.stdout
    assert (totem.project / "a.txt").read_text() == "one\n"
    export = totem.export(session_id)
    assert conversation(export) == [("user", "write one"), ("assistant", "Wrote one.")]
    assert next(texts(m) for m in export["messages"] if m["rewound"]) == ["write two"]  # kept in the history

    # the conversation only, by --session from another folder: its own project
    chat = subprocess.run(
        totem.command("rewind", "--session", session_id, "--config", str(totem.config), "--chat-only"),
        cwd=totem.home, capture_output=True, text=True, env=totem.env, timeout=60, check=False,
    )
    assert chat.returncode == 0, chat.stderr
    assert "the files are left as they are" in chat.stdout
    assert (totem.project / "a.txt").read_text() == "one\n"
    assert conversation(totem.export(session_id)) == []

    nothing = totem.run("rewind", *args)
    assert nothing.code == 2 and f"totem: session {session_id} has no request in its conversation" in nothing.stderr


def test_retry_takes_up_a_turn_that_failed_after_its_retries(totem):
    for _ in range(MAX_TRIES):  # every try of the step answered by a server error
        totem.server.enqueue(Reply(status=500, body='{"error":{"message":"boom"}}'))
    failed = totem.agent("what is in the folder?")
    assert failed.code == 1
    assert failed.of("turnEnd")[0]["stopReason"] == "error"
    session_id = failed.of("turnEnd")[0]["sessionId"]

    totem.server.enqueue(text_reply("It is empty."))
    retried = totem.run("retry", "--cwd", str(totem.project), "--config", str(totem.config), "--json")
    assert retried.code == 0, retried.stderr
    end = retried.of("turnEnd")[0]
    assert end["sessionId"] == session_id and end["stopReason"] == "finished" and end["text"] == "It is empty."
    assert conversation(totem.export(session_id)) == [("user", "what is in the folder?"), ("assistant", "It is empty.")]
    sent = sent_messages(totem.server.requests[-1])
    assert [m["content"] for m in sent if m["role"] == "user"] == ["what is in the folder?"]  # the request once

    again = totem.run("retry", "--cwd", str(totem.project), "--config", str(totem.config))
    assert again.code == 2 and "nothing to retry" in again.stderr


def test_retry_after_a_cut_stream_continues_and_finishes_in_plain_output(totem):
    for _ in range(MAX_TRIES):
        cut = text_reply("this answer will be cut off", pieces=6)
        cut.cut_after = 3
        totem.server.enqueue(cut)
    failed = totem.agent("hi")
    assert failed.code == 1 and failed.of("turnEnd")[0]["stopReason"] == "error"
    session_id = failed.of("turnEnd")[0]["sessionId"]

    totem.server.enqueue(text_reply("Hello."))
    retried = totem.run("retry", "--session", session_id, "--config", str(totem.config))
    assert retried.code == 0, retried.stderr
    assert retried.stdout.strip() == "Hello."
    assert f"session {session_id}" in retried.stderr


def test_regenerate_makes_a_second_answer_to_the_request(totem):
    totem.server.enqueue(text_reply("The first answer."))
    first = totem.agent("explain the parser")
    session_id = first.of("turnEnd")[0]["sessionId"]

    totem.server.enqueue(text_reply("The second answer."))
    again = totem.run("regenerate", "--cwd", str(totem.project), "--config", str(totem.config), "--json")
    assert again.code == 0, again.stderr
    assert again.of("turnEnd")[0]["text"] == "The second answer."
    export = totem.export(session_id)
    [request] = [m for m in export["messages"] if m["role"] == "user"]
    answers = [m for m in export["messages"] if m["parentId"] == request["id"]]
    assert [texts(m) for m in answers] == [["The first answer."], ["The second answer."]]
    assert conversation(export)[-1] == ("assistant", "The second answer.")
    assert [m["content"] for m in sent_messages(totem.server.requests[-1]) if m["role"] == "user"] == ["explain the parser"]

    # --message names the answer (or request) to answer again; one of another variant is refused
    other = totem.run("regenerate", "--session", session_id, "--config", str(totem.config), "--message", answers[0]["id"])
    assert other.code == 2 and "is not in the conversation as it stands" in other.stderr
    totem.server.enqueue(text_reply("The third answer."))
    third = totem.run("regenerate", "--session", session_id, "--config", str(totem.config), "--message", answers[1]["id"])
    assert third.code == 0, third.stderr
    assert third.stdout.strip() == "The third answer."
    assert len([m for m in totem.export(session_id)["messages"] if m["parentId"] == request["id"]]) == 3


def test_sessions_diff_shows_what_the_session_changed(totem):
    session_id = write_turn(totem, "one\n")
    totem.server.enqueue(
        tool_reply([("write", {"path": "a.txt", "content": "two\n"}), ("write", {"path": "b.txt", "content": "new\n"})]),
        text_reply("Wrote both."),
    )
    second = totem.agent("write both", extra=("--yes", "--session", session_id))
    assert second.code == 0, second.stderr
    turn_id = second.of("turnEnd")[0]["turnId"]

    whole = totem.run("sessions", "diff", session_id)
    assert whole.code == 0, whole.stderr
    assert "--- /dev/null\n+++ b/a.txt\n@@ -0,0 +1 @@\n+two\n" in whole.stdout
    assert "--- /dev/null\n+++ b/b.txt\n@@ -0,0 +1 @@\n+new\n" in whole.stdout

    one_turn = totem.run("sessions", "diff", session_id, "--turn", turn_id)
    assert one_turn.code == 0, one_turn.stderr
    assert "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-one\n+two\n" in one_turn.stdout and "+++ b/b.txt" in one_turn.stdout

    missing = totem.run("sessions", "diff", "no-such-session")
    assert missing.code == 2 and "totem: no session 'no-such-session'" in missing.stderr


def _held_reply() -> Reply:
    """Two text deltas, then the stream stays open (the turn is mid-answer until aborted)."""
    reply = text_reply("partial answer that never ends", pieces=2)
    reply.events = reply.events[:3]
    reply.hold = 60
    return reply


def test_a_session_another_process_runs_is_refused_with_exit_2_naming_it(totem):
    totem.server.enqueue(_held_reply())
    proc = subprocess.Popen(
        totem.command("run", "--cwd", str(totem.project), "--config", str(totem.config), "--json", "tell me"),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, env=totem.env,
    )
    try:
        assert proc.stdout is not None
        deltas, session_id = 0, ""
        for line in proc.stdout:
            event = json.loads(line)
            session_id = event["sessionId"]
            deltas += event["kind"] == "textDelta"
            if deltas == 2:
                break
        assert deltas == 2, proc.stderr.read() if proc.stderr else ""
        args = ("--cwd", str(totem.project), "--config", str(totem.config), "--session", session_id)

        second = totem.run("run", *args, "again")
        assert second.code == 2
        assert f"totem: session {session_id} is running a turn in totem run (pid {proc.pid})" in second.stderr
        rewind = totem.run("rewind", *args)
        assert rewind.code == 2 and f"session {session_id} is running a turn in totem run" in rewind.stderr
        assert len(totem.server.requests) == 1  # neither reached the model
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=20)
    assert proc.returncode == 130
