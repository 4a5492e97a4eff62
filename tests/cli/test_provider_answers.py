"""``totem run`` against a provider that fails or answers otherwise than asked (Whittl, seed 003):
a server error retried up to four times, a timeout not retried (what the turn changed is kept and
"continue" picks it up), and a reply signed with the model that answered."""

from __future__ import annotations

from tests.support.model_server import Reply, chunk, text_reply, tool_reply
from tests.support.reminder import sent_messages


def _config(totem, **keys: float) -> None:
    """The test config with ``keys`` set in place of its defaults."""
    lines = [line for line in totem.config.read_text().splitlines() if line.split(" = ")[0] not in keys]
    totem.config.write_text("\n".join([*(f"{key} = {value}" for key, value in keys.items()), *lines]) + "\n")


def test_a_server_error_is_retried_four_times_then_the_turn_ends_with_it(totem):
    _config(totem, retry_max_wait=0.01)  # the backoff's cap: five tries without real waits
    # Nothing queued: the server answers every request 500 "no scripted reply".
    result = totem.agent("hi")

    assert result.code == 1
    assert len(totem.server.requests) == 5  # the first try and four retries
    assert [e["step"] for e in result.of("stepDiscarded")] == [1, 1, 1, 1]
    assert [n["message"].endswith(f"(try {n_try}).") for n, n_try in zip(result.of("notice"), range(2, 6))] == [True] * 4
    [error] = result.of("error")
    assert error["errorClass"] == "ServerError" and "no scripted reply" in error["message"]
    assert result.of("turnEnd")[0]["stopReason"] == "error"


def test_a_timeout_is_not_retried_and_continue_picks_the_turn_up_with_what_it_did(totem):
    _config(totem, stall_timeout=1.0)
    totem.server.enqueue(tool_reply([("write", {"path": "done.txt", "content": "step one\n"})]))
    # Step 2: the headers and a first chunk, then nothing for longer than stall_timeout.
    totem.server.enqueue(Reply(events=[chunk({"role": "assistant", "content": ""})], hold=4))
    failed = totem.agent("write done.txt, then check it", extra=("--yes",))

    assert failed.code == 1
    assert len(totem.server.requests) == 2  # step 1, and step 2 once
    assert not failed.of("stepDiscarded")
    [error] = failed.of("error")
    assert error["errorClass"] == "ProviderTimeout" and "timed out" in error["message"]
    assert failed.of("turnEnd")[0]["stopReason"] == "error"
    assert (totem.project / "done.txt").read_text() == "step one\n"  # what the turn changed is kept

    session_id = failed.of("turnEnd")[0]["sessionId"]
    totem.server.enqueue(text_reply("done.txt is written."))
    resumed = totem.agent("continue", extra=("--session", session_id))
    assert resumed.code == 0, resumed.stderr
    sent = sent_messages(totem.server.requests[-1])
    [call] = [c for m in sent if m["role"] == "assistant" for c in m.get("tool_calls") or ()]
    assert call["function"]["name"] == "write" and "done.txt" in call["function"]["arguments"]
    [result] = [m for m in sent if m["role"] == "tool"]
    assert result["tool_call_id"] == call["id"] and "done.txt" in result["content"]
    assert sent[-1] == {"role": "user", "content": "continue"}
    assert (totem.project / "done.txt").read_text() == "step one\n"


def test_the_reply_is_signed_with_the_model_that_answered(totem):
    # Asked for test-model, the server answers as another (a Pro tier served by Flash, an auto router).
    totem.server.enqueue(tool_reply([("read", {"path": "."})], model="deepseek-flash"))
    totem.server.enqueue(text_reply("The folder is empty.", model="deepseek-flash"))
    result = totem.agent("what is here?")

    assert result.code == 0, result.stderr
    assert {r["model"] for r in totem.server.requests} == {"test-model"}
    assert result.of("turnStart")[0]["model"] == "sim/test-model"  # the model asked for
    assert [e["model"] for e in result.of("stepEnd")] == ["sim/deepseek-flash"] * 2
    assert result.of("turnEnd")[0]["model"] == "sim/deepseek-flash"
    session_id = result.of("turnEnd")[0]["sessionId"]
    steps = [p for m in totem.export(session_id)["messages"] for p in m["parts"] if p["type"] == "step"]
    assert [p["data"]["model"] for p in steps] == ["sim/deepseek-flash"] * 2

    totem.server.enqueue(text_reply("Still empty.", model="deepseek-flash"))
    plain = totem.run("run", "--cwd", str(totem.project), "--config", str(totem.config), "--session", session_id, "and now?")
    assert plain.code == 0, plain.stderr
    assert "— sim/deepseek-flash" in plain.stderr.splitlines()  # the plain run's signature line
    shown = totem.run("sessions", "show", session_id)
    assert "(step 1: sim/deepseek-flash" in shown.stdout
