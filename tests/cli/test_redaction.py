"""The credentials of a ``base_url`` never leave the engine (issue 34, hole 6): a provider that
cannot be reached is named in the error, its hint and the store, the password of its URL in none
of them, through ``totem run`` as the user runs it and with ``--json``."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

PASSWORD = "Hunter2-s3cret-pw"


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def database_bytes(home: Path) -> bytes:
    """Every file of the data folder (the session database with its -wal and -shm, snapshots)."""
    files = [path for path in (home / "data").rglob("*") if path.is_file()]
    assert any(path.name == "totem.db" for path in files)
    return b"".join(path.read_bytes() for path in files)


@pytest.mark.parametrize("json_events", [True, False], ids=["json", "text"])
def test_the_password_of_an_unreachable_base_url_appears_nowhere(totem, json_events):
    config = totem.home / "closed.toml"
    config.write_text(
        'model = "closed/test-model"\nretry_max_wait = 0.2\nforge = false\n'
        f'[providers.closed]\nkind = "openai"\nbase_url = "http://alice:{PASSWORD}@127.0.0.1:{closed_port()}/v1"\n'
        'api_key = "sk-not-to-be-seen-0123"\n'
    )
    extra = ("--json",) if json_events else ()
    result = totem.run("run", "--cwd", str(totem.project), "--config", str(config), *extra, "hello")
    assert result.code != 0
    shown = result.stdout + result.stderr
    assert "could not be reached at http://" in shown  # the hint is there, and names the address
    assert "127.0.0.1" in shown
    assert PASSWORD not in shown
    stored = database_bytes(totem.home)
    assert b"could not be reached" in stored  # the error and its hint were stored
    assert PASSWORD.encode() not in stored
    assert b"sk-not-to-be-seen-0123" not in stored
    if json_events:
        [error] = result.of("error")
        assert error["errorClass"] == "ConnectionFailed"
        assert "***" in error["hint"]
