"""Scratch: the progress guards wired into the loop, end to end."""

from tests.cli.test_run import parts_of
from tests.support.model_server import text_reply, tool_reply


def test_a_reply_repeating_itself_is_cut_and_ends_the_run(totem):
    totem.server.enqueue(text_reply("Here is the plan. " + "I will check the handler again now.\n" * 400, pieces=200))
    result = totem.agent("fix it")
    end = result.of("turnEnd")[0]
    assert end["stopReason"] == "guard", result.stdout[-2000:]
    assert "repeating" in result.of("notice")[-1]["message"]
    export = totem.export(end["sessionId"])
    stored = "".join(p["data"]["text"] for p in parts_of(export, "text", discarded=False))
    assert len(stored) < 200, stored


def test_all_reasoning_is_asked_again_and_says_so(totem):
    totem.server.enqueue(text_reply("", reasoning="Let me think about this at length."))
    totem.server.enqueue(text_reply("The answer.", reasoning="short"))
    result = totem.agent("question")
    end = result.of("turnEnd")[0]
    assert end["stopReason"] == "finished" and end["text"] == "The answer."
    assert "retry 1 of 2" in result.of("notice")[0]["message"]
    assert len(result.of("stepDiscarded")) == 1


def test_all_reasoning_three_times_ends_the_run(totem):
    for _ in range(3):
        totem.server.enqueue(text_reply("", reasoning="thinking"))
    result = totem.agent("question")
    assert result.of("turnEnd")[0]["stopReason"] == "guard"
    assert len(totem.server.requests) == 3


def test_step_limit_extends_while_files_change(totem):
    for n in range(14):
        totem.server.enqueue(tool_reply([("write", {"path": "a.txt", "content": f"{n}\n"})]))
    totem.server.enqueue(text_reply("done"))
    result = totem.agent("change", extra=("--yes", "--max-steps", "10"))
    end = result.of("turnEnd")[0]
    assert end["stopReason"] == "finished", result.stdout[-2000:]
    assert any("extension 1 of 3" in n["message"] for n in result.of("notice"))


def test_nothing_new_for_six_rounds_ends_the_run(totem):
    (totem.project / "a.txt").write_text("same\n")
    for n in range(1, 10):
        totem.server.enqueue(tool_reply([("read", {"path": "a.txt", "limit": n})]))
    result = totem.agent("loop", extra=("--max-steps", "0"))
    end = result.of("turnEnd")[0]
    assert end["stopReason"] == "guard"
    assert len(result.of("toolEnd")) == 7
    assert "nothing new" in result.of("notice")[-1]["message"]
