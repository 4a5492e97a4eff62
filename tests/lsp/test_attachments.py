"""``totem/chat`` attachments over the real language server: an attached image reaches each
vendor's simulator (OpenAI-compatible, Anthropic, Gemini, Ollama) in its wire's form in the turn's
first request, and later requests carry its caption; an image the read tool returns follows the
same rule; a model that does not see images gets the caption only."""

from __future__ import annotations

import json

import pytest
from pygls.exceptions import JsonRpcException

from tests.lsp.conftest import start_editor
from tests.support import anthropic_server as anth
from tests.support import gemini_server as gem
from tests.support import ollama_server as oll
from tests.support.images import b64, gif, image_urls, png
from tests.support.model_server import text_reply, tool_reply
from tests.support.reminder import sent_messages

EVENTS = {"permission": True, "question": True, "trust": True, "events": True}
SHOT = png(640, 480)
SHOT_CAPTION = "[image: shot.png, 640x480 PNG, 1 KB]"


def image_blocks(request: dict) -> list[dict]:
    """Anthropic image blocks anywhere: in user content or inside a tool_result's content."""
    found = []
    for message in request["messages"]:
        for block in message["content"] if isinstance(message["content"], list) else []:
            inner = block.get("content") if block.get("type") == "tool_result" else [block]
            found += [b for b in inner if isinstance(inner, list) and b.get("type") == "image"]
    return found


async def test_an_attached_image_reaches_the_openai_simulator_once_then_its_caption(tmp_path, model):
    editor = await start_editor(tmp_path, model, totem=EVENTS, extra_config='[models."sim/test-model"]\nvision = true\n')
    try:
        (editor.project / "app.css").write_text("button { width: 20px; }\n")
        model.enqueue(tool_reply([("read", {"path": "app.css"})]), text_reply("Too narrow."), text_reply("Yes."))
        attachment = {"type": "image", "mimeType": "image/png", "data": b64(SHOT), "name": "shot.png"}
        result = await editor.request("totem/chat", {"text": "Why is the button cut off?", "attachments": [attachment]})
        assert result.stopReason == "finished"
        again = await editor.request("totem/chat", {"text": "Sure?", "sessionId": result.sessionId})
        assert again.stopReason == "finished"

        first, second, third = model.requests
        assert sent_messages(first)[1]["content"] == [
            {"type": "text", "text": f"Why is the button cut off?\n\n{SHOT_CAPTION}"},
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{b64(SHOT)}"}},
        ]
        for later in (second, third):
            assert image_urls(later) == []
            assert later["messages"][1] == {"role": "user", "content": f"Why is the button cut off?\n\n{SHOT_CAPTION}"}

        session = await editor.request("totem/session", {"sessionId": result.sessionId})
        images = [p for m in session.messages for p in m.parts if p.type == "image"]
        assert [(p.status, p.data.name, p.data.width) for p in images] == [("captioned", "shot.png", 640)]
    finally:
        await editor.client.shutdown_session()


async def test_a_file_uri_attachment_is_read_by_the_server(tmp_path, model):
    editor = await start_editor(tmp_path, model, totem=EVENTS, extra_config='[models."sim/test-model"]\nvision = true\n')
    try:
        picture = tmp_path / "elsewhere" / "diagram.gif"
        picture.parent.mkdir()
        picture.write_bytes(gif(30, 20))
        model.enqueue(text_reply("A diagram."))
        attachment = {"type": "image", "mimeType": "image/gif", "uri": picture.as_uri()}
        result = await editor.request("totem/chat", {"text": "What is this?", "attachments": [attachment]})
        assert result.stopReason == "finished"
        user = sent_messages(model.requests[0])[1]
        assert user["content"][0]["text"].endswith("[image: diagram.gif, 30x20 GIF, 1 KB]")
        assert image_urls(model.requests[0]) == [f"data:image/gif;base64,{b64(gif(30, 20))}"]
    finally:
        await editor.client.shutdown_session()


async def test_a_model_that_does_not_see_images_gets_the_caption_only(editor):
    editor.model.enqueue(text_reply("I cannot see images."))
    attachment = {"type": "image", "mimeType": "image/png", "data": b64(SHOT), "name": "shot.png"}
    result = await editor.request("totem/chat", {"text": "Look", "attachments": [attachment]})
    assert result.stopReason == "finished"
    [request] = editor.model.requests
    assert image_urls(request) == [] and b64(SHOT) not in json.dumps(request)
    assert sent_messages(request)[1] == {"role": "user", "content": f"Look\n\n{SHOT_CAPTION}"}


@pytest.mark.parametrize(
    ("attachment", "reason"),
    [
        ({"type": "image", "mimeType": "image/png", "data": b64(b"plain text, not an image")}, "not a PNG, JPEG, GIF or WebP"),
        ({"type": "image", "mimeType": "image/bmp", "data": b64(SHOT)}, "is not one of image/png"),
        ({"type": "image", "mimeType": "image/png", "data": "@@@"}, "not base64"),
        ({"type": "image", "mimeType": "image/png", "uri": "https://example.invalid/a.png"}, "neither a file: nor a data: URI"),
        ({"type": "image", "mimeType": "image/png"}, "either data"),
    ],
)
async def test_a_bad_attachment_is_invalid_params_and_starts_no_turn(editor, attachment, reason):
    with pytest.raises(JsonRpcException, match=reason):
        await editor.request("totem/chat", {"text": "Look", "attachments": [attachment]})
    assert editor.model.requests == [] and editor.of("turnStart") == []


async def test_attached_and_read_images_reach_the_anthropic_simulator_as_image_blocks(tmp_path, model):
    with anth.AnthropicServer(api_key="sk-ant-test") as claude:
        extra = f'[providers.claude]\nkind = "anthropic"\nbase_url = "{claude.base_url}"\napi_key = "sk-ant-test"\n'
        editor = await start_editor(tmp_path, model, totem=EVENTS, extra_config=extra)
        try:
            (editor.project / "logo.png").write_bytes(png(64, 32))
            claude.enqueue(
                anth.message_reply(anth.tool_use("toolu_1", "read", {"path": "logo.png"})),
                anth.message_reply(anth.text("The logo matches the screenshot.")),
                anth.message_reply(anth.text("Yes.")),
            )
            attachment = {"type": "image", "mimeType": "image/png", "data": b64(SHOT), "name": "shot.png"}
            params = {"text": "Is logo.png the one in the screenshot?", "model": "claude/claude-sonnet-4-5", "attachments": [attachment]}
            result = await editor.request("totem/chat", params)
            assert result.stopReason == "finished", editor.of("error")
            again = await editor.request("totem/chat", {"text": "Sure?", "sessionId": result.sessionId})
            assert again.stopReason == "finished"

            first, second, third = claude.requests
            assert sent_messages(first)[0]["content"] == [
                {"type": "text", "text": f"Is logo.png the one in the screenshot?\n\n{SHOT_CAPTION}"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": b64(SHOT)}},
            ]
            # The read's image inside its tool_result, in the next request only; the user's is a caption now.
            assert image_blocks(second) == [{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": b64(png(64, 32))}}]
            [result_block] = [b for b in second["messages"][2]["content"] if b["type"] == "tool_result"]
            assert result_block["content"][0] == {"type": "text", "text": "Image file logo.png.\n[image: logo.png, 64x32 PNG, 1 KB]"}
            assert image_blocks(third) == []
            assert "[image: logo.png, 64x32 PNG, 1 KB]" in json.dumps(third) and SHOT_CAPTION in json.dumps(third)
            assert model.requests == []
        finally:
            await editor.client.shutdown_session()


async def test_an_attached_image_reaches_the_gemini_simulator_inline_once(tmp_path, model):
    with gem.GeminiServer(api_key="g-key") as gemini:
        extra = f'[providers.gemini]\nkind = "gemini"\nbase_url = "{gemini.base_url}"\napi_key = "g-key"\n'
        editor = await start_editor(tmp_path, model, totem=EVENTS, extra_config=extra)
        try:
            gemini.enqueue(gem.text_reply("A cut-off button."), gem.text_reply("Yes."))
            attachment = {"type": "image", "mimeType": "image/png", "data": b64(SHOT), "name": "shot.png"}
            result = await editor.request("totem/chat", {"text": "What is wrong?", "model": "gemini/gemini-2.5-flash", "attachments": [attachment]})
            assert result.stopReason == "finished", editor.of("error")
            await editor.request("totem/chat", {"text": "Sure?", "sessionId": result.sessionId})
            first, second = gemini.requests
            assert sent_messages(first)[0] == {
                "role": "user",
                "parts": [{"text": f"What is wrong?\n\n{SHOT_CAPTION}"}, {"inlineData": {"mimeType": "image/png", "data": b64(SHOT)}}],
            }
            assert second["contents"][0] == {"role": "user", "parts": [{"text": f"What is wrong?\n\n{SHOT_CAPTION}"}]}
            assert "inlineData" not in json.dumps(second)
        finally:
            await editor.client.shutdown_session()


async def test_an_attached_image_reaches_the_ollama_simulator_once_for_a_model_that_sees(tmp_path, model):
    with oll.OllamaServer() as ollama:
        ollama.add_model("llava", capabilities=["completion", "tools", "vision"])
        extra = f'[providers.ollama]\nkind = "ollama"\nbase_url = "{ollama.base_url}"\n'
        editor = await start_editor(tmp_path, model, totem=EVENTS, extra_config=extra)
        try:
            ollama.enqueue(oll.text_reply("A cut-off button.", model="llava"), oll.text_reply("Yes.", model="llava"))
            ollama.enqueue(oll.text_reply("I see no image.", model="test-model"))
            attachment = {"type": "image", "mimeType": "image/png", "data": b64(SHOT), "name": "shot.png"}
            result = await editor.request("totem/chat", {"text": "What is wrong?", "model": "ollama/llava", "attachments": [attachment]})
            assert result.stopReason == "finished", editor.of("error")
            await editor.request("totem/chat", {"text": "Sure?", "sessionId": result.sessionId})
            # A model whose /api/show lists no "vision" capability gets the caption only.
            blind = await editor.request("totem/chat", {"text": "And you?", "model": "ollama/test-model", "attachments": [attachment]})
            assert blind.stopReason == "finished", editor.of("error")
            first, second, third = ollama.requests
            assert sent_messages(first)[1] == {"role": "user", "content": f"What is wrong?\n\n{SHOT_CAPTION}", "images": [b64(SHOT)]}
            assert second["messages"][1] == {"role": "user", "content": f"What is wrong?\n\n{SHOT_CAPTION}"}
            assert sent_messages(third)[1] == {"role": "user", "content": f"And you?\n\n{SHOT_CAPTION}"}
        finally:
            await editor.client.shutdown_session()


async def test_a_regenerated_answer_sees_the_requests_image_again(tmp_path, model):
    editor = await start_editor(tmp_path, model, totem=EVENTS, extra_config='[models."sim/test-model"]\nvision = true\n')
    try:
        model.enqueue(text_reply("A button."), text_reply("A cut-off button."), text_reply("Yes."))
        attachment = {"type": "image", "mimeType": "image/png", "data": b64(SHOT), "name": "shot.png"}
        first = await editor.request("totem/chat", {"text": "What is this?", "attachments": [attachment]})
        session = await editor.request("totem/session", {"sessionId": first.sessionId})
        request = session.messages[0].id
        again = await editor.request("totem/regenerate", {"sessionId": first.sessionId, "messageId": request})
        assert again.stopReason == "finished" and again.text == "A cut-off button."
        await editor.request("totem/chat", {"text": "Sure?", "sessionId": first.sessionId})
        assert [len(image_urls(r)) for r in model.requests] == [1, 1, 0]
    finally:
        await editor.client.shutdown_session()
