"""Whether a session's commands run in the sandbox (command_changes.py ``sandboxed``): ``auto``
says once per session when it does not work here, ``always`` refuses, ``never`` never asks."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from totem_engine import command_changes
from totem_engine.command_changes import (
    CommandChanges,
    SandboxRequired,
    SandboxSettings,
)


def changes(tmp_path: Path, mode: str) -> CommandChanges:
    return CommandChanges(tmp_path, max_file_bytes=1000, sandbox=SandboxSettings(mode=mode))


@pytest.fixture
def unavailable(monkeypatch):
    async def probe() -> str:
        return "no user namespaces"

    monkeypatch.setattr(command_changes, "probe", probe)


def test_auto_says_once_per_session_that_the_sandbox_is_missing(tmp_path, unavailable):
    async def main():
        chosen = changes(tmp_path, "auto")
        assert await chosen.sandboxed("s1") is False
        assert "not available here (no user namespaces)" in chosen.notice("s1")
        assert await chosen.sandboxed("s1") is False
        assert chosen.notice("s1") is None  # said once
        assert await chosen.sandboxed("s2") is False
        assert chosen.notice("s2") is not None  # and once for each session

    anyio.run(main)


def test_always_refuses_where_the_sandbox_is_missing(tmp_path, unavailable):
    async def main():
        with pytest.raises(SandboxRequired, match='sandbox = "always".*no user namespaces'):
            await changes(tmp_path, "always").sandboxed("s1")

    anyio.run(main)


def test_never_does_not_look(tmp_path, monkeypatch):
    async def probe() -> str:
        raise AssertionError("never probes")

    monkeypatch.setattr(command_changes, "probe", probe)

    async def main():
        chosen = changes(tmp_path, "never")
        assert await chosen.sandboxed("s1") is False and chosen.notice("s1") is None

    anyio.run(main)
