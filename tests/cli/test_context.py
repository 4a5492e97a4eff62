"""A long run in a small window: every request fits, nothing stored is lost, overflow recovers once."""

from __future__ import annotations

from tests.support.model_server import ModelServer, Reply, request_tokens, text_reply, tool_reply

WINDOW = 4096


def small_model(totem, window: int = WINDOW) -> None:
    # The provider's catalogue gives the window (as llama.cpp and vLLM do), and the server enforces it.
    totem.server.models = [{"id": "test-model", "object": "model", "context_length": window}]
    totem.server.context_window = window


def with_summariser(totem, summariser: ModelServer) -> None:
    """Summaries go to their own server (``small_model``), so they never take a scripted reply."""
    config = totem.config.read_text()
    totem.config.write_text(
        'small_model = "summ/test-model"\n' + config
        + f'\n[providers.summ]\nkind = "openai"\nbase_url = "{summariser.base_url}"\n'
    )
    for _ in range(40):
        summariser.enqueue(text_reply("Goal: read the data files. Done: read the first files. Next: read the rest.", usage=None))


def test_forty_large_reads_in_a_4096_token_window(totem):
    small_model(totem)
    for n in range(40):
        lines = "".join(f"row {n}-{i}: " + "lorem ipsum dolor sit amet " * 2 + "\n" for i in range(40))
        (totem.project / f"data{n:02}.txt").write_text(lines)
        totem.server.enqueue(tool_reply([("read", {"path": f"data{n:02}.txt"})], usage=None))
    totem.server.enqueue(text_reply("All forty read.", usage=None))
    with ModelServer() as summariser:
        with_summariser(totem, summariser)
        result = totem.agent("read every data file, one by one", extra=("--max-steps", "0"))
        summaries = len(summariser.requests)

    assert result.code == 0, result.stderr[-2000:]
    assert len(totem.server.requests) == 41
    assert max(request_tokens(body) for body in totem.server.requests) <= WINDOW
    estimates = result.of("context")
    assert len(estimates) == 41 and all(e["window"] == WINDOW and e["estimate"] <= WINDOW for e in estimates)

    last = totem.server.requests[-1]["messages"]
    pinned = last[1]["content"]
    assert "read every data file, one by one" in pinned  # the pinned ledger: the first request, verbatim
    # Old results were compacted to stubs on the way (the last request may hold the checkpoint
    # that later replaced them: where it falls depends on the size of the fixed prompt).
    assert any("[compacted] read data" in (m.get("content") or "") for r in totem.server.requests for m in r["messages"])
    assert summaries >= 1 and "Goal: read the data files" in pinned  # a checkpoint replaces old turns

    export = totem.export(result.events[0]["sessionId"])
    outputs = [p["data"]["output"] for m in export["messages"] for p in m["parts"] if p["type"] == "tool"]
    assert len(outputs) == 40 and all("40\trow" in out for out in outputs)  # stored whole, never rewritten


def test_an_overflow_error_leads_to_one_compaction_and_one_retry(totem):
    for n in range(3):
        (totem.project / f"f{n}.txt").write_text(f"file {n}\n" * 300)
        totem.server.enqueue(tool_reply([("read", {"path": f"f{n}.txt"})], usage=None))
    overflow = '{"error": {"message": "This model\'s maximum context length is 4096 tokens.", "code": "context_length_exceeded"}}'
    totem.server.enqueue(Reply(status=400, body=overflow))
    totem.server.enqueue(text_reply("Done after compacting.", usage=None))
    with ModelServer() as summariser:
        with_summariser(totem, summariser)
        result = totem.agent("read the three files")

    assert result.code == 0, result.stderr[-2000:]
    assert len(totem.server.requests) == 5  # 3 reads, the refused request, its one retry
    refused, retried = totem.server.requests[3], totem.server.requests[4]
    assert request_tokens(retried) < request_tokens(refused)
    contents = [m.get("content") or "" for m in retried["messages"]]
    assert any("[compacted]" in c or "Goal: read the data files" in c for c in contents)  # accounts or a summary
    assert len(result.of("stepDiscarded")) == 1
    assert result.of("turnEnd")[0]["text"] == "Done after compacting."


def test_a_second_overflow_ends_the_turn_instead_of_looping(totem):
    overflow = '{"error": {"message": "prompt is too long: 9000 tokens > 4096 maximum", "code": "context_length_exceeded"}}'
    totem.server.enqueue(Reply(status=400, body=overflow), Reply(status=400, body=overflow), text_reply("never"))
    result = totem.agent("hi")
    assert result.code == 1
    assert len(totem.server.requests) == 2
    assert result.of("error")[0]["errorClass"] == "ContextOverflowError"
