"""Images on each wire: the request bodies each provider builds, the vendor simulators' checks of
them (which refuse the forms the vendors refuse), and in-process turns against the Gemini and
Ollama loopback servers: an image reaches the server in that wire's form once, later requests
carry its caption."""

from __future__ import annotations

import json

import pytest

from tests.support import anthropic_server as anth
from tests.support import gemini_server as gem
from tests.support import ollama_server as oll
from tests.support.images import b64, gif, png
from tests.support.model_server import ModelServer, check_images, text_reply
from tests.support.streams import stream_once
from tests.support.turns import Scene
from totem_engine.images import image_from_bytes
from totem_engine.prompt_files import prompt
from totem_engine.providers import anthropic, gemini, ollama, openai
from totem_engine.providers.anthropic import AnthropicProvider
from totem_engine.providers.capabilities import CapabilityRecord
from totem_engine.providers.gemini import GeminiProvider
from totem_engine.providers.ollama import OllamaProvider
from totem_engine.providers.openai import OpenAIProvider
from totem_engine.vocab.chat import ChatRequest
from totem_engine.vocab.messages import Message
from totem_engine.vocab.tools import ToolCall

SCREEN = image_from_bytes(png(640, 480), "screen.png")
LOGO = image_from_bytes(gif(10, 10), "logo.gif")
CALLS = (ToolCall("call_1", "read", '{"path": "logo.gif"}'), ToolCall("call_2", "read", '{"path": "a.txt"}'))


def conversation() -> tuple[Message, ...]:
    """A user message with an image, a step of two calls, the first returning an image, a question."""
    return (
        Message(role="user", text=f"What is wrong?\n\n{SCREEN.caption}", images=(SCREEN,)),
        Message(role="assistant", text="Looking.", tool_calls=CALLS),
        Message(role="tool", text=f"Image file logo.gif.\n{LOGO.caption}", tool_call_id="call_1", name="read", images=(LOGO,)),
        Message(role="tool", text="1\thello", tool_call_id="call_2", name="read"),
        Message(role="user", text="And the logo?"),
    )


def request(model: str = "m") -> ChatRequest:
    return ChatRequest(model=model, system="Be brief.", messages=conversation())


# -- OpenAI-compatible ----------------------------------------------------------------------------


def test_openai_user_images_are_content_parts_and_tool_images_follow_as_a_user_message():
    body = openai.build_body(request())
    _, user, _, first, second, images, question = body["messages"]
    assert user == {
        "role": "user",
        "content": [
            {"type": "text", "text": f"What is wrong?\n\n{SCREEN.caption}"},
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{SCREEN.data}"}},
        ],
    }
    assert first == {"role": "tool", "tool_call_id": "call_1", "content": f"Image file logo.gif.\n{LOGO.caption}"}
    assert second["role"] == "tool" and second["tool_call_id"] == "call_2"
    assert images == {
        "role": "user",
        "content": [
            {"type": "text", "text": prompt("tool_images.txt")},
            {"type": "text", "text": LOGO.caption},
            {"type": "image_url", "image_url": {"url": f"data:image/gif;base64,{LOGO.data}"}},
        ],
    }
    assert question == {"role": "user", "content": "And the logo?"}
    assert check_images(body) is None


def test_the_openai_simulator_refuses_what_the_api_refuses():
    body = openai.build_body(request())
    in_tool = json.loads(json.dumps(body))
    in_tool["messages"][3]["content"] = [{"type": "image_url", "image_url": {"url": f"data:image/gif;base64,{LOGO.data}"}}]
    assert "Image URLs are only allowed for messages with role 'user'" in check_images(in_tool)
    wrong_type = json.loads(json.dumps(body))
    wrong_type["messages"][1]["content"][1]["image_url"]["url"] = f"data:image/jpeg;base64,{SCREEN.data}"
    assert "Invalid image data" in check_images(wrong_type)


async def test_openai_images_pass_the_simulator():
    with ModelServer() as server:
        server.enqueue(text_reply("A cut-off button."))
        chunks = await stream_once(OpenAIProvider("sim", server.base_url, "sk-test"), request("test-model"))
        assert server.requests[0]["messages"][1]["content"][1]["type"] == "image_url"
    assert "".join(c.text for c in chunks if hasattr(c, "text")) == "A cut-off button."


# -- Anthropic -------------------------------------------------------------------------------------


def test_anthropic_images_are_blocks_in_the_user_message_and_inside_tool_result():
    messages = anthropic.build_messages(conversation())
    user, _, results = messages
    assert user["content"] == [
        {"type": "text", "text": f"What is wrong?\n\n{SCREEN.caption}"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": SCREEN.data}},
    ]
    first, second, question = results["content"]
    assert first == {
        "type": "tool_result",
        "tool_use_id": "call_1",
        "content": [
            {"type": "text", "text": f"Image file logo.gif.\n{LOGO.caption}"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/gif", "data": LOGO.data}},
        ],
    }
    assert second == {"type": "tool_result", "tool_use_id": "call_2", "content": "1\thello"}
    assert question == {"type": "text", "text": "And the logo?"}


async def test_anthropic_images_pass_the_simulator_and_wrong_ones_do_not():
    with anth.AnthropicServer(api_key="sk-ant") as server:
        server.enqueue(anth.message_reply(anth.text("A cut-off button.")))
        await stream_once(AnthropicProvider("claude", server.base_url, "sk-ant"), request("claude-test-1"))
        good = server.requests[0]
        assert server.check(good, {"x-api-key": "sk-ant", "anthropic-version": "2023-06-01"}) is None
    headers = {"x-api-key": "sk-ant", "anthropic-version": "2023-06-01"}
    mislabelled = json.loads(json.dumps(good))
    mislabelled["messages"][2]["content"][0]["content"][1]["source"]["media_type"] = "image/png"
    assert "Image does not match the provided media type image/png" in server.check(mislabelled, headers)[2]
    in_assistant = json.loads(json.dumps(good))
    in_assistant["messages"][1]["content"].append(good["messages"][0]["content"][1])
    assert "only allowed in user messages" in server.check(in_assistant, headers)[2]


# -- Gemini ----------------------------------------------------------------------------------------


def test_gemini_images_are_inline_data_parts_after_the_text_and_the_responses():
    user, model, results = gemini.build_contents(conversation())
    assert user == {
        "role": "user",
        "parts": [{"text": f"What is wrong?\n\n{SCREEN.caption}"}, {"inlineData": {"mimeType": "image/png", "data": SCREEN.data}}],
    }
    parts = results["parts"]
    assert [next(iter(p)) for p in parts] == ["functionResponse", "functionResponse", "text", "inlineData", "text"]
    assert parts[2:4] == [{"text": LOGO.caption}, {"inlineData": {"mimeType": "image/gif", "data": LOGO.data}}]
    assert gem.check_images({"contents": [user, model, results]}) is None
    wrong = {"contents": [{"role": "model", "parts": [user["parts"][1]]}]}
    assert "only accepted in user content" in gem.check_images(wrong)


async def test_gemini_turn_an_attached_image_goes_inline_once_then_its_caption(tmp_path):
    scene = Scene(tmp_path, record=CapabilityRecord(context_window=1_000_000, vision=True))
    (scene.root / "logo.gif").write_bytes(gif(10, 10))
    with gem.GeminiServer(api_key="g-key") as server:
        scene.provider = GeminiProvider("gemini", server.base_url, "g-key")
        server.enqueue(gem.call_reply([("read", {"path": "logo.gif"}, None)]), gem.text_reply("Both seen."))
        assert (await scene.run("Compare these.", images=(SCREEN,))).stop_reason == "finished"
        first, second = server.requests
    inline = [[p for p in c["parts"] if "inlineData" in p] for c in first["contents"]]
    assert inline == [[{"inlineData": {"mimeType": "image/png", "data": SCREEN.data}}]]
    # The second request: the user's image is its caption only; the read's image is new, inline.
    user, _, results = second["contents"]
    assert user["parts"] == [{"text": f"Compare these.\n\n{SCREEN.caption}"}]
    assert {"inlineData": {"mimeType": "image/gif", "data": LOGO.data}} in results["parts"]
    await scene.close()


# -- Ollama ----------------------------------------------------------------------------------------


def test_ollama_images_are_base64_lists_on_their_messages():
    messages = ollama.build_messages("", conversation())
    user, _, first, second, question = messages
    assert user["images"] == [SCREEN.data] and first["images"] == [LOGO.data]
    assert "images" not in second and "images" not in question
    vision = oll.SimModel("llava", capabilities=["completion", "vision"])
    assert oll.check_images({"messages": messages}, vision) is None
    assert "does not support images" in oll.check_images({"messages": messages}, oll.SimModel("test-model"))
    prefixed = [{**user, "images": [f"data:image/png;base64,{SCREEN.data}"]}]
    assert "illegal base64 data" in oll.check_images({"messages": prefixed}, vision)


async def test_ollama_turn_an_image_read_reaches_the_tool_message_once(tmp_path):
    scene = Scene(tmp_path, record=CapabilityRecord(context_window=32768, vision=True))
    (scene.root / "logo.gif").write_bytes(gif(10, 10))
    with oll.OllamaServer() as server:
        server.add_model("llava", capabilities=["completion", "tools", "vision"])
        scene.provider = OllamaProvider("ollama", server.base_url)
        server.enqueue(
            oll.tool_reply([oll.call("read", {"path": "logo.gif"})], model="llava"),
            oll.text_reply("A square.", model="llava"),
            oll.text_reply("Still a square.", model="llava"),
        )
        turn = await scene.turn("What is logo.gif?")
        turn.model = "ollama/llava"
        assert (await turn.run()).stop_reason == "finished"
        follow = await scene.turn("And again?")
        follow.model = "ollama/llava"
        assert (await follow.run()).stop_reason == "finished"
        first, second, third = server.requests
    assert all("images" not in m for m in first["messages"])
    [tool] = [m for m in second["messages"] if m["role"] == "tool"]
    assert tool["images"] == [b64(gif(10, 10))] and tool["content"].endswith(LOGO.caption)
    assert all("images" not in m for m in third["messages"])
    assert next(m for m in third["messages"] if m["role"] == "tool")["content"] == tool["content"]
    await scene.close()


@pytest.mark.parametrize("kind", ["openai", "anthropic", "gemini", "ollama"])
def test_a_request_with_only_captions_carries_no_image_on_any_wire(kind):
    captioned = tuple(
        Message(role=m.role, text=m.text, tool_calls=m.tool_calls, tool_call_id=m.tool_call_id, name=m.name) for m in conversation()
    )
    plain = ChatRequest(model="m", system="", messages=captioned)
    body = {
        "openai": lambda: openai.build_body(plain),
        "anthropic": lambda: anthropic.build_body(plain),
        "gemini": lambda: gemini.build_body(plain),
        "ollama": lambda: ollama.build_body(plain, num_ctx=8192),
    }[kind]()
    text = json.dumps(body)
    assert SCREEN.data not in text and LOGO.data not in text
    assert SCREEN.caption in text and LOGO.caption in text
