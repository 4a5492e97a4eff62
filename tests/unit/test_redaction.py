"""The known secrets kept out of what leaves the engine (totem_engine/redaction.py): the store's
bytes, events, log records and error messages, each at its one choke point."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from pydantic import SecretStr

from totem_engine.api import events as ev
from totem_engine.config import Config, ConfigError, ProviderConfig
from totem_engine.providers.errors import AuthenticationError
from totem_engine.redaction import (
    RedactingFrontEnd,
    know,
    know_config,
    redacted,
    scrubbed,
    url_secrets,
)
from totem_engine.store import Store

# Unique to this module: the known secrets are the process's, so no other test's text holds them.
KEY = "sk-redaction-test-key-7f3a9"
PASSWORD = "redaction-pw-0b81c"


@pytest.fixture(autouse=True)
def known():
    know_config(Config(providers={
        "p": ProviderConfig(kind="openai", api_key=SecretStr(KEY), base_url=f"http://bob:{PASSWORD}@127.0.0.1:1/v1"),
    }))


def test_url_secrets_are_the_password_and_the_userinfo_not_a_user_name_beside_a_password():
    assert url_secrets("http://bob:p%40ss-word@host/v1") == ("bob:p%40ss-word", "p%40ss-word", "p@ss-word")
    assert url_secrets("https://ghp_token1234@host") == ("ghp_token1234",)
    assert url_secrets("http://host/v1") == ()
    assert url_secrets(None) == ()


def test_short_secrets_are_not_known_they_would_cut_words_out_of_text():
    know(["abc", "", None, "wrong"])
    assert redacted("abc: wrong or missing X-Token") == "abc: wrong or missing X-Token"


async def test_the_store_holds_no_known_secret_in_any_part_meta_or_title(tmp_path: Path):
    async with Store(tmp_path / "totem.db") as store:
        session = await store.create_session(cwd="/repo", model="m", title=f"about {KEY}")
        message = await store.add_message(session.id, "assistant", turn_id="t")
        part = await store.add_part(message, "error", {"text": f"at http://bob:{PASSWORD}@127.0.0.1", "list": [KEY], KEY: 1})
        await store.update_part(part, data={"text": f"again {PASSWORD}"})
        writes = store.deferred(session.id)
        await writes.add_part(message, "text", {"text": f"queued {KEY}"})
        await writes.flush()
        await store.update_session(session.id, meta={"note": PASSWORD})
        stored = await store.messages(session.id)
        assert [p.data.get("text") for p in stored[0].parts] == ["again ***", "queued ***"]
    raw = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.is_file())
    assert KEY.encode() not in raw and PASSWORD.encode() not in raw
    assert b"queued ***" in raw


async def test_every_event_reaches_the_door_scrubbed():
    got: list[ev.Event] = []

    class Door:
        async def emit(self, event):
            got.append(event)

    door = RedactingFrontEnd(Door())
    await door.emit(ev.ToolStart(session_id="s", call_id="c", tool="bash", input={"command": f"curl -H {KEY}"}, title=KEY))
    await door.emit(ev.Error(session_id="s", error_class="X", message="m", hint=f"at {PASSWORD}"))
    plain = ev.TextDelta(session_id="s", part_id="p", text="nothing secret")
    await door.emit(plain)
    assert got[0].input == {"command": "curl -H ***"} and got[0].title == "***"
    assert got[1].hint == "at ***"
    assert got[2] is plain  # unchanged events are not copied


def test_log_records_are_scrubbed_whichever_logger_made_them(caplog):
    with caplog.at_level(logging.INFO):
        logging.getLogger("some.library").info("sent %s to %s", KEY, "host")
        try:
            raise RuntimeError(f"refused {PASSWORD}")
        except RuntimeError:
            logging.getLogger("totem_engine.x").exception("failed")
    text = caplog.text
    assert "sent *** to host" in text
    assert "RuntimeError: refused ***" in text
    assert KEY not in text and PASSWORD not in text


def test_error_messages_are_scrubbed():
    assert str(ConfigError(f"bad {KEY}")) == "bad ***"
    error = AuthenticationError(f"invalid key {KEY}", status=401)
    assert error.message == "invalid key ***" and str(error) == "invalid key ***"


def test_scrubbed_keeps_values_that_hold_no_secret():
    value = {"a": [1, "x", {"b": None}]}
    assert scrubbed(value) is value
    assert scrubbed({"a": (KEY, 2)}) == {"a": ("***", 2)}
