"""Images through the real ``totem run``: a ``read`` of a PNG and ``--attach`` reach a model that
sees images once, in the OpenAI-compatible wire's form, and every later request carries only
the caption; a model that does not see images gets only the caption."""

from __future__ import annotations

import json

from tests.support.images import b64, image_urls, png
from tests.support.model_server import text_reply, tool_reply

CAPTION = "[image: logo.png, 320x200 PNG, 1 KB]"


def sees_images(totem) -> None:
    """The test model's capability record says ``vision`` (the user's override)."""
    totem.config.write_text(totem.config.read_text() + '\n[models."sim/test-model"]\nvision = true\n')


def tool_contents(request: dict) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


def test_a_png_read_reaches_a_vision_model_once_then_only_its_caption(totem):
    sees_images(totem)
    (totem.project / "logo.png").write_bytes(png(320, 200))
    (totem.project / "notes.txt").write_text("logo colours: blue\n")
    totem.server.enqueue(
        tool_reply([("read", {"path": "logo.png"})]),
        tool_reply([("read", {"path": "notes.txt"})]),
        text_reply("The logo is blue, as the notes say."),
    )
    result = totem.agent("Does logo.png match the notes?")
    assert result.code == 0, result.stderr

    first, second, third = totem.server.requests
    assert image_urls(first) == []
    # The request right after the read: the tool message says what it is, and the image follows
    # it as a user message (a tool message cannot carry one on this wire).
    assert tool_contents(second) == [f"Image file logo.png.\n{CAPTION}"]
    after = second["messages"][second["messages"].index(next(m for m in second["messages"] if m["role"] == "tool")) + 1]
    assert after["role"] == "user"
    assert {"type": "text", "text": CAPTION} in after["content"]
    assert image_urls(second) == [f"data:image/png;base64,{b64(png(320, 200))}"]
    # Every later request: the caption, no image.
    assert image_urls(third) == []
    assert tool_contents(third)[0] == f"Image file logo.png.\n{CAPTION}"
    assert b64(png(320, 200)) not in json.dumps(third)

    end = result.of("turnEnd")[0]
    totem.server.enqueue(text_reply("Still blue."))
    again = totem.agent("And now?", extra=("--session", end["sessionId"]))
    assert again.code == 0, again.stderr
    assert image_urls(totem.server.requests[3]) == []
    assert CAPTION in json.dumps(totem.server.requests[3])

    stored = [p for m in totem.export(end["sessionId"])["messages"] for p in m["parts"] if p["type"] == "image"]
    assert [(p["status"], p["data"]["callId"], p["data"]["width"]) for p in stored] == [("captioned", "call_1", 320)]
    shown = totem.run("sessions", "show", end["sessionId"])
    assert shown.code == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[lines.index("→ Read logo.png [ok]") + 2] == f"   {CAPTION}"


def test_a_model_that_does_not_see_images_gets_the_caption_only(totem):
    (totem.project / "logo.png").write_bytes(png(320, 200))
    totem.server.enqueue(tool_reply([("read", {"path": "logo.png"})]), text_reply("I cannot see it, but it is 320x200."))
    result = totem.agent("What is logo.png?")
    assert result.code == 0, result.stderr
    assert all(image_urls(request) == [] for request in totem.server.requests)
    assert tool_contents(totem.server.requests[1]) == [f"Image file logo.png.\n{CAPTION}"]
    assert result.of("toolEnd")[0]["summary"] == "PNG image, 320x200, 1 KB"


def test_attach_sends_an_image_with_the_prompt_once(totem, tmp_path):
    sees_images(totem)
    shot = tmp_path / "shot.png"
    shot.write_bytes(png(640, 480))
    (totem.project / "app.css").write_text("button { width: 20px; }\n")
    totem.server.enqueue(tool_reply([("read", {"path": "app.css"})]), text_reply("The button is too narrow."))
    result = totem.agent("Why is the button cut off?", extra=("--attach", str(shot)))
    assert result.code == 0, result.stderr

    first, second = totem.server.requests
    user = first["messages"][1]
    assert user["content"][0] == {"type": "text", "text": "Why is the button cut off?\n\n[image: shot.png, 640x480 PNG, 1 KB]"}
    assert image_urls(first) == [f"data:image/png;base64,{b64(png(640, 480))}"]
    assert image_urls(second) == []
    assert second["messages"][1] == {"role": "user", "content": "Why is the button cut off?\n\n[image: shot.png, 640x480 PNG, 1 KB]"}


def test_attach_refuses_what_is_not_an_image(totem, tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("not an image\n")
    result = totem.agent("look", extra=("--attach", str(text)))
    assert result.code == 2
    assert "--attach" in result.stderr and "not a PNG, JPEG, GIF or WebP image" in result.stderr
    assert totem.server.requests == []
