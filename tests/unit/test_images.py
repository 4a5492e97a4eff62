"""Images attached to messages (totem_engine/images.py): what the bytes are, their caption,
and the rule that a model that sees images gets one in the next request only (history.py,
compaction/derived.py, the loop), a model that does not gets only the caption."""

from __future__ import annotations

import base64

import pytest

from tests.support.images import b64, gif, jpeg, png, webp
from tests.support.turns import Scene, answer, calls
from totem_engine.compaction import DerivedHistory
from totem_engine.context import message_tokens
from totem_engine.history import to_messages
from totem_engine.images import (
    CAPTIONED,
    FRESH,
    IMAGE_PART,
    MAX_IMAGE_BYTES,
    AttachmentError,
    image_from_base64,
    image_from_bytes,
    image_from_data_uri,
    image_of,
    part_data,
    sniff,
)
from totem_engine.providers.capabilities import CapabilityRecord, record_for
from totem_engine.store import Store
from totem_engine.vocab.messages import Image, Message, size_text

VISION = CapabilityRecord(context_window=128_000, vision=True)
BLIND = CapabilityRecord(context_window=128_000, vision=False)


# -- what the bytes are --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "mime", "caption"),
    [
        (png(640, 480), "image/png", "640x480 PNG"),
        (jpeg(800, 600), "image/jpeg", "800x600 JPEG"),
        (gif(32, 16), "image/gif", "32x16 GIF"),
        (webp(1024, 768), "image/webp", "1024x768 WEBP"),
    ],
)
def test_the_format_and_size_come_from_the_bytes(data, mime, caption):
    image = image_from_bytes(data, "shot")
    assert (image.mime_type, image.size) == (mime, len(data))
    assert image.caption == f"[image: shot, {caption}, 1 KB]"
    assert base64.b64decode(image.data) == data


def test_a_caption_names_the_image_its_shape_and_its_kilobytes():
    image = Image(name="fs__screenshot result", mime_type="image/png", data="", size=38 * 1024 + 100, width=640, height=480)
    assert image.caption == "[image: fs__screenshot result, 640x480 PNG, 38 KB]"
    unread = Image(name="a.gif", mime_type="image/gif", data="", size=3 * 1024 * 1024 // 2)
    assert unread.caption == "[image: a.gif, GIF, 1.5 MB]"
    assert (size_text(10), size_text(2047), size_text(1024 * 1024)) == ("1 KB", "2 KB", "1.0 MB")


def test_what_is_not_one_of_the_four_formats_or_too_large_is_refused():
    assert sniff(b"BM\x00\x00") is None and sniff(b"<svg") is None
    with pytest.raises(AttachmentError, match="not a PNG, JPEG, GIF or WebP"):
        image_from_bytes(b"BM" + bytes(100), "icon.bmp")
    with pytest.raises(AttachmentError, match="over the 5.0 MB"):
        image_from_bytes(png(8, 8) + bytes(MAX_IMAGE_BYTES), "huge.png")
    with pytest.raises(AttachmentError, match="over the 5.0 MB"):
        image_from_base64("A" * (MAX_IMAGE_BYTES * 2), "huge.png")  # refused before decoding
    with pytest.raises(AttachmentError, match="not base64"):
        image_from_base64("not base64!", "x.png")


def test_a_data_uri_in_base64_or_percent_encoded():
    data = gif(4, 4)
    assert image_from_data_uri(f"data:image/gif;base64,{b64(data)}", "g").size == len(data)
    from urllib.parse import quote_from_bytes

    assert image_from_data_uri("data:image/gif," + quote_from_bytes(data), "g").width == 4
    with pytest.raises(AttachmentError):
        image_from_data_uri("file:///x.png", "x")


def test_a_stored_part_gives_the_same_image_back():
    image = image_from_bytes(png(20, 10), "a.png")
    data = part_data(image, call_id="call_7")
    assert data["callId"] == "call_7" and data["mimeType"] == "image/png" and data["width"] == 20
    assert image_of(data) == image


def test_an_image_counts_by_its_size_in_the_estimate():
    small = image_from_bytes(png(64, 64), "s.png")
    large = image_from_bytes(png(1600, 1200), "l.png")
    text = Message(role="user", text="look")
    assert message_tokens(Message(role="user", text="look", images=(small,))) == message_tokens(text) + 85
    assert message_tokens(Message(role="user", text="look", images=(large,))) == message_tokens(text) + 1600


def test_the_user_says_a_model_sees_images():
    assert record_for("openai", "my-local-model").vision is False
    assert record_for("openai", "my-local-model", overrides={"vision": True}).vision is True
    assert record_for("anthropic", "claude-sonnet-4-5", overrides={"vision": False}).vision is False


# -- the rule, on stored messages ----------------------------------------------------------------


async def stored_with_images(tmp_path, status: str = FRESH):
    """A user message with an image, and a step whose read call returned one."""
    store = Store(tmp_path / "totem.db")
    session = await store.create_session(cwd=str(tmp_path), model="sim/m")
    user = await store.add_message(session.id, "user", turn_id="t1")
    await store.add_part(user, "text", {"text": "What is wrong in this screenshot?"})
    await store.add_part(user, IMAGE_PART, part_data(image_from_bytes(png(640, 480), "screen.png")), status=status)
    step = await store.add_message(session.id, "assistant", turn_id="t1", step=1, model="sim/m")
    data = {"callId": "call_1", "tool": "read", "arguments": '{"path": "logo.gif"}', "output": "Image file logo.gif.", "summary": "x"}
    await store.add_part(step, "tool", data, status="ok")
    await store.add_part(step, IMAGE_PART, part_data(image_from_bytes(gif(10, 10), "logo.gif"), call_id="call_1"), status=status)
    return store, session.id


async def test_a_fresh_image_goes_to_a_vision_model_with_its_caption_in_the_text(tmp_path):
    store, session_id = await stored_with_images(tmp_path)
    user, _, tool = to_messages(await store.messages(session_id), vision=True)
    assert user.text == "What is wrong in this screenshot?\n\n[image: screen.png, 640x480 PNG, 1 KB]"
    assert [i.name for i in user.images] == ["screen.png"]
    assert tool.text == "Image file logo.gif.\n[image: logo.gif, 10x10 GIF, 1 KB]"
    assert [i.name for i in tool.images] == ["logo.gif"]


async def test_a_model_that_does_not_see_images_gets_the_caption_only(tmp_path):
    store, session_id = await stored_with_images(tmp_path)
    blind = to_messages(await store.messages(session_id), vision=False)
    assert [m.images for m in blind] == [(), (), ()]
    assert blind[0].text.endswith("[image: screen.png, 640x480 PNG, 1 KB]")
    assert blind[2].text.endswith("[image: logo.gif, 10x10 GIF, 1 KB]")


async def test_a_captioned_image_is_its_caption_even_for_a_vision_model(tmp_path):
    store, session_id = await stored_with_images(tmp_path, status=CAPTIONED)
    seen = to_messages(await store.messages(session_id), vision=True)
    assert [m.images for m in seen] == [(), (), ()]
    assert seen == to_messages(await store.messages(session_id), vision=False)


async def test_the_kept_history_converts_an_image_turned_into_its_caption_again(tmp_path):
    store, session_id = await stored_with_images(tmp_path)
    history = DerivedHistory(vision=True)
    history.update(await store.messages(session_id))
    assert history.converted == 2 and len(history.fresh_images()) == 2
    assert sum(len(m.images) for m in history.messages_from(0)) == 2
    first_tokens = history.tokens_from(0)
    for part_id in history.fresh_images():
        await store.update_part(part_id, status=CAPTIONED)
    history.update(await store.messages(session_id))
    # Both messages changed: both converted again, and the cache now matches a fresh conversion.
    assert history.converted == 4 and history.fresh_images() == []
    assert history.messages_from(0) == to_messages(await store.messages(session_id), vision=True)
    assert all(not m.images for m in history.messages_from(0))
    assert history.tokens_from(0) < first_tokens
    await store.close()


# -- the rule, in turns --------------------------------------------------------------------------


async def test_an_attached_image_reaches_a_vision_model_once_then_its_caption(tmp_path):
    scene = Scene(tmp_path, record=VISION)
    (scene.root / "notes.txt").write_text("hello\n")
    scene.provider.enqueue(calls(("read", {"path": "notes.txt"})), answer("A button is cut off."), answer("Yes."))
    image = image_from_bytes(png(640, 480), "screen.png")
    assert (await scene.run("What is wrong here?", images=(image,))).stop_reason == "finished"
    assert (await scene.run("And now?")).stop_reason == "finished"
    session = scene.session_id

    first, second, third = scene.provider.requests
    assert first.messages[0].images == (image,)
    assert first.messages[0].text == "What is wrong here?\n\n[image: screen.png, 640x480 PNG, 1 KB]"
    for later in (second, third):
        assert not any(m.images for m in later.messages)
        assert later.messages[0].text == first.messages[0].text  # the caption stays in its place
    parts = [p for m in await scene.store.messages(session) for p in m.parts if p.type == IMAGE_PART]
    assert [p.status for p in parts] == [CAPTIONED]
    await scene.close()


async def test_an_image_a_tool_returns_reaches_a_vision_model_once(tmp_path):
    scene = Scene(tmp_path, record=VISION)
    (scene.root / "logo.png").write_bytes(png(64, 32))
    scene.provider.enqueue(calls(("read", {"path": "logo.png"})), calls(("read", {"path": "logo.png"})), answer("A logo."))
    assert (await scene.run("Describe logo.png")).stop_reason == "finished"

    first, second, third = scene.provider.requests
    assert not any(m.images for m in first.messages)
    [result] = [m for m in second.messages if m.role == "tool"]
    assert result.text == "Image file logo.png.\n[image: logo.png, 64x32 PNG, 1 KB]"
    assert [i.name for i in result.images] == ["logo.png"]
    # The third request: the first read is its caption now, the second read's image is fresh.
    results = [m for m in third.messages if m.role == "tool"]
    assert [len(m.images) for m in results] == [0, 1]
    assert results[0].text == result.text
    await scene.close()


async def test_a_model_that_does_not_see_images_never_gets_one(tmp_path):
    scene = Scene(tmp_path, record=BLIND)
    (scene.root / "logo.png").write_bytes(png(64, 32))
    scene.provider.enqueue(calls(("read", {"path": "logo.png"})), answer("It is an image I cannot see."))
    assert (await scene.run("Describe logo.png")).stop_reason == "finished"
    assert not any(m.images for request in scene.provider.requests for m in request.messages)
    [result] = [m for m in scene.provider.requests[1].messages if m.role == "tool"]
    assert result.text.endswith("[image: logo.png, 64x32 PNG, 1 KB]")
    await scene.close()


async def test_a_retried_step_sends_the_image_again(tmp_path):
    from totem_engine.providers.errors import ServerError

    scene = Scene(tmp_path, record=VISION)
    (scene.root / "logo.png").write_bytes(png(64, 32))
    scene.provider.enqueue(calls(("read", {"path": "logo.png"})), [ServerError("busy", status=500)], answer("A logo."))
    assert (await scene.run("Describe logo.png")).stop_reason == "finished"
    failed, retried = scene.provider.requests[1:]
    assert [len(m.images) for m in failed.messages if m.role == "tool"] == [1]
    assert [len(m.images) for m in retried.messages if m.role == "tool"] == [1]  # no answer came with it yet
    await scene.close()


async def test_an_image_too_large_to_attach_is_described(tmp_path):
    scene = Scene(tmp_path, record=VISION)
    (scene.root / "big.png").write_bytes(png(8, 8) + bytes(MAX_IMAGE_BYTES))
    scene.provider.enqueue(calls(("read", {"path": "big.png"})), answer("Too big."))
    assert (await scene.run("Look at big.png")).stop_reason == "finished"
    [result] = [m for m in scene.provider.requests[1].messages if m.role == "tool"]
    assert result.images == () and result.text.startswith("Image file big.png, not attached: big.png is 5.0 MB, over the 5.0 MB")
    await scene.close()
