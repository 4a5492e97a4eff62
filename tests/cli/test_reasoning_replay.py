"""``totem run`` carries an OpenAI-compatible backend's reasoning across a tool round where the
backend asks for it (Whittl, seed 003: "OpenRouter its reasoning details, DeepSeek its reasoning
content"), and to that provider and model only. Streams in the vendors' recorded shapes:
DeepSeek's ``reasoning_content`` deltas (../shared/captures/openai/deepseek-tool-call), OpenRouter's
``reasoning`` with ``reasoning_details`` pieces sharing an index."""

from __future__ import annotations

from tests.support.model_server import text_reply, tool_reply


def _use(totem, model: str) -> None:
    """The test config, asking ``sim/<model>``, with a second provider ``other`` on the same server."""
    text = totem.config.read_text().replace('model = "sim/test-model"', f'model = "sim/{model}"')
    other = f'[providers.other]\nkind = "openai"\nbase_url = "{totem.server.base_url}"\napi_key = "sk-other-test-key"\n'
    totem.config.write_text(text + other)


def _assistants(request: dict) -> list[dict]:
    return [m for m in request["messages"] if m["role"] == "assistant"]


def _thinking(text: str) -> list[dict]:
    """``text`` as DeepSeek streams it: ``reasoning_content`` deltas, ``content`` null beside them."""
    return [{"content": None, "reasoning_content": piece} for piece in (text[:10], text[10:])]


def test_deepseek_gets_the_reasoning_of_its_tool_call_answers_back_in_every_later_request(totem):
    _use(totem, "deepseek-v4-pro")
    (totem.project / "a.txt").write_text("one line\n")
    first = "The user asks about a.txt. I should read it."
    totem.server.enqueue(tool_reply([("read", {"path": "a.txt"})], model="deepseek-v4-pro", before=_thinking(first)))
    totem.server.enqueue(text_reply("a.txt holds one line.", model="deepseek-v4-pro", reasoning="It says one line."))
    result = totem.agent("what is in a.txt?")
    assert result.code == 0, result.stderr

    [call_step] = _assistants(totem.server.requests[1])
    assert call_step["reasoning_content"] == first and call_step["tool_calls"][0]["function"]["name"] == "read"

    session_id = result.of("turnEnd")[0]["sessionId"]
    totem.server.enqueue(text_reply("Still one line.", model="deepseek-v4-pro"))
    later = totem.agent("and now?", extra=("--session", session_id))
    assert later.code == 0, later.stderr
    call_step, answer = _assistants(totem.server.requests[2])
    # DeepSeek asks for a tool-call answer's reasoning in every later request, later turns too;
    # an answer without tool calls needs none (its reasoning is ignored), so none is sent.
    assert call_step["reasoning_content"] == first
    assert answer["content"] == "a.txt holds one line." and "reasoning_content" not in answer

    # Another provider never gets it, though it names the same model.
    totem.server.enqueue(text_reply("Yes.", model="deepseek-v4-pro"))
    moved = totem.agent("sure?", extra=("--session", session_id, "--model", "other/deepseek-v4-pro"))
    assert moved.code == 0, moved.stderr
    assert all("reasoning_content" not in m for m in _assistants(totem.server.requests[3]))


def test_openrouter_gets_its_reasoning_details_back_unchanged_on_the_tool_call_answer(totem):
    _use(totem, "openrouter/auto")  # the auto router: another model answers
    (totem.project / "a.txt").write_text("one line\n")
    summary = {"type": "reasoning.summary", "format": "openai-responses-v1", "index": 0}
    encrypted = {"type": "reasoning.encrypted", "data": "gAAAAABqJ9x0", "format": "openai-responses-v1", "id": "rs_05a6", "index": 1}
    pieces = [
        {"content": "", "reasoning": "**Reading", "reasoning_details": [{**summary, "summary": "**Reading"}]},
        {"reasoning": " the file**", "reasoning_details": [{**summary, "summary": " the file**"}]},
        {"reasoning": None, "reasoning_details": [encrypted]},
    ]
    totem.server.enqueue(tool_reply([("read", {"path": "a.txt"})], model="openai/gpt-5", before=pieces))
    totem.server.enqueue(text_reply("a.txt holds one line.", model="openai/gpt-5"))
    result = totem.agent("what is in a.txt?")
    assert result.code == 0, result.stderr
    assert "".join(e["text"] for e in result.of("reasoningDelta")) == "**Reading the file**"

    [call_step] = _assistants(totem.server.requests[1])
    assert call_step["reasoning_details"] == [{**summary, "summary": "**Reading the file**"}, encrypted]
    assert "reasoning_content" not in call_step


def test_a_plain_backend_gets_no_reasoning_back(totem):
    (totem.project / "a.txt").write_text("one line\n")
    # reasoning_content beside a tool call, as xAI and vLLM stream it; they do not ask for it back.
    totem.server.enqueue(tool_reply([("read", {"path": "a.txt"})], before=_thinking("I should read a.txt first.")))
    totem.server.enqueue(text_reply("a.txt holds one line."))
    result = totem.agent("what is in a.txt?")
    assert result.code == 0, result.stderr
    assert "".join(e["text"] for e in result.of("reasoningDelta")) == "I should read a.txt first."
    [call_step] = _assistants(totem.server.requests[1])
    assert set(call_step) == {"role", "content", "tool_calls"}
