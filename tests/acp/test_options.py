"""What the client is told of a session as it changes: the title (``session_info_update``), the
options (``config_option_update``, the thought level of a model that reasons, CodeCompanion's
``session/set_model``), the context window (``usage_update``)."""

from __future__ import annotations

from tests.acp.conftest import running_acp
from tests.support.model_server import text_reply

THINKER = "sim/claude-sonnet-4-5"  # the shipped table: it reasons, a 200K window


def text(words: str) -> list[dict]:
    return [{"type": "text", "text": words}]


def option(options, option_id):
    return next((o for o in options if o.id == option_id), None)


async def test_the_title_and_an_option_changed_outside_set_config_option_are_told(acp):
    await acp.initialize()
    new = await acp.conn.new_session(cwd=str(acp.project), mcp_servers=[])
    session_id = new.session_id
    assert option(new.config_options, "thought_level") is None  # test-model does not reason
    acp.model.enqueue(text_reply("Hello."))
    await acp.conn.prompt(session_id=session_id, prompt=text("say hello"))
    [info] = acp.client.of("session_info_update")
    assert info.title == "say hello" and info.updated_at
    assert not acp.client.of("config_option_update")  # nothing changed

    await acp.conn.set_session_mode(session_id=session_id, mode_id="plan")
    [update] = acp.client.of("config_option_update")
    assert option(update.config_options, "mode").current_value == "plan"

    acp.model.enqueue(text_reply("Again."))
    await acp.conn.prompt(session_id=session_id, prompt=text("and again"))
    assert len(acp.client.of("session_info_update")) == 1  # the title did not change
    assert len(acp.client.of("config_option_update")) == 1


async def test_set_model_is_the_model_options_alias(tmp_path, model):
    model.models.append({"id": "other-model", "object": "model"})
    async with running_acp(tmp_path, model) as acp:
        await acp.initialize()
        session_id = await acp.new_session()
        answer = await acp.conn._conn.send_request("session/set_model", {"sessionId": session_id, "modelId": "sim/other-model"})
        assert answer == {}
        [update] = acp.client.of("config_option_update")
        assert option(update.config_options, "model").current_value == "sim/other-model"
        model.enqueue(text_reply("Other."))
        await acp.conn.prompt(session_id=session_id, prompt=text("hi"))
        assert model.requests[-1]["model"] == "other-model"


async def test_a_reasoning_model_has_a_thought_level_and_usage_is_reported(tmp_path, model):
    model.models.append({"id": "claude-sonnet-4-5", "object": "model"})
    async with running_acp(tmp_path, model) as acp:
        await acp.initialize()
        new = await acp.conn.new_session(cwd=str(acp.project), mcp_servers=[])
        assert option(new.config_options, "thought_level") is None
        chosen = await acp.conn.set_config_option(config_id="model", session_id=new.session_id, value=THINKER)
        level = option(chosen.config_options, "thought_level")  # offered once the model reasons
        assert level.category == "thought_level" and level.current_value == "default"
        assert [o.value for o in level.options] == ["default", "none", "low", "medium", "high"]

        answer = await acp.conn.set_config_option(config_id="thought_level", session_id=new.session_id, value="high")
        assert option(answer.config_options, "thought_level").current_value == "high"
        model.enqueue(text_reply("Thought hard."))
        await acp.conn.prompt(session_id=new.session_id, prompt=text("think hard"))
        assert model.requests[-1]["reasoning_effort"] == "high"
        usage = acp.client.of("usage_update")
        assert usage and usage[-1].size == 200_000 and 0 < usage[-1].used < 200_000
        assert not acp.client.of("config_option_update")  # the answer told it

    async with running_acp(tmp_path, model) as again:  # kept with the session
        await again.initialize()
        loaded = await again.conn.load_session(cwd=str(again.project), session_id=new.session_id, mcp_servers=[])
        assert option(loaded.config_options, "thought_level").current_value == "high"
