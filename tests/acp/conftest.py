"""The real ``totem acp`` subprocess, driven by the ACP SDK's own client side, against a loopback
scripted model server (tests/support/model_server.py)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from acp import PROTOCOL_VERSION, RequestError, spawn_agent_process
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    ElicitationCapabilities,
    ElicitationFormCapabilities,
    FileSystemCapabilities,
    Implementation,
    ReadTextFileResponse,
    RequestPermissionResponse,
    WriteTextFileResponse,
)

from tests.support.model_server import ModelServer

ROOT = Path(__file__).resolve().parents[2]
AGENT = [sys.executable, "-m", "totem_cli.main", "acp"]


async def eventually(predicate, timeout: float = 20.0) -> None:
    async def poll() -> None:
        while not predicate():
            await asyncio.sleep(0.02)

    await asyncio.wait_for(poll(), timeout)


@dataclass
class Client:
    """The editor's side: what the agent sent, and the answers it gets.

    ``answers``: option ids for the permission requests, in order (default ``reject_once``);
    ``"hold"`` keeps a request open until the test cancels the prompt, then answers it
    ``cancelled`` as ACP clients do. ``files``: when not None, the client's own buffers, which
    ``fs/read_text_file`` and ``fs/write_text_file`` use (the disk is read for a file not in it)."""

    updates: list[Any] = field(default_factory=list)
    permissions: list[Any] = field(default_factory=list)
    answers: list[str] = field(default_factory=list)
    files: dict[str, str] | None = None
    writes: list[tuple[str, str]] = field(default_factory=list)
    reads: list[str] = field(default_factory=list)
    cancelled: asyncio.Event = field(default_factory=asyncio.Event)

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        self.updates.append(update)

    async def request_permission(self, session_id: str, tool_call: Any, options: list, **_: Any) -> RequestPermissionResponse:
        self.permissions.append((tool_call, options))
        answer = self.answers.pop(0) if self.answers else "reject_once"
        if answer == "hold":
            await self.cancelled.wait()
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=answer))

    async def read_text_file(self, session_id: str, path: str, line: int | None = None, limit: int | None = None, **_: Any):
        self.reads.append(path)
        if self.files is not None and path in self.files:
            return ReadTextFileResponse(content=self.files[path])
        try:
            return ReadTextFileResponse(content=Path(path).read_text())
        except OSError:
            raise RequestError.resource_not_found(path) from None

    async def write_text_file(self, session_id: str, path: str, content: str, **_: Any) -> WriteTextFileResponse:
        self.writes.append((path, content))
        assert self.files is not None, "fs/write_text_file sent to a client that did not offer it"
        self.files[path] = content
        return WriteTextFileResponse()

    def of(self, kind: str) -> list[Any]:
        return [u for u in self.updates if u.session_update == kind]

    def message_text(self) -> str:
        return "".join(u.content.text for u in self.of("agent_message_chunk"))


@dataclass
class Acp:
    """A running ``totem acp``: the SDK connection, the recording client, the project, the model."""

    conn: Any
    process: Any
    client: Client
    project: Path
    model: ModelServer
    stderr: Path
    home: Path

    async def initialize(self, *, fs: bool = False, terminal: bool = False, forms: bool = False):
        """``forms``: the client takes form elicitation (``elicitation/create``, unstable)."""
        capabilities = ClientCapabilities(
            fs=FileSystemCapabilities(read_text_file=fs, write_text_file=fs), terminal=terminal,
            elicitation=ElicitationCapabilities(form=ElicitationFormCapabilities()) if forms else None,
        )
        return await self.conn.initialize(
            protocol_version=PROTOCOL_VERSION, client_capabilities=capabilities,
            client_info=Implementation(name="pytest", version="1"),
        )

    async def new_session(self, **kwargs: Any) -> str:
        response = await self.conn.new_session(cwd=str(self.project), mcp_servers=kwargs.pop("mcp_servers", []), **kwargs)
        return response.session_id

    def send_cancel(self, session_id: str) -> None:
        """session/cancel, then the open permission requests answered ``cancelled`` (ACP's order)."""
        async def both() -> None:
            await self.conn.cancel(session_id=session_id)
            self.client.cancelled.set()

        asyncio.ensure_future(both())


def write_config(home: Path, model: ModelServer, extra: str = "") -> None:
    folder = home / "config" / "totem"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.toml").write_text(
        # forge = false: the empty project is a Total.js one, whose Forge connection would be asked first.
        'model = "sim/test-model"\nretry_max_wait = 1.0\npermission_timeout = 30.0\nforge = false\n'
        f"{extra}\n"
        f'[providers.sim]\nkind = "openai"\nbase_url = "{model.base_url}"\n'
    )


@contextlib.asynccontextmanager
async def running_acp(
    tmp_path: Path, model: ModelServer, client: Client | None = None, *, config: str = "", observers: list[Any] | None = None,
) -> AsyncIterator[Acp]:
    """``config``: lines added to the user's config file; ``observers``: the connection's
    observers of every message in and out (tests/acp/schema_check.py's ``Traffic``)."""
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    home = tmp_path / "home"
    write_config(home, model, config)
    env = dict(os.environ, XDG_DATA_HOME=str(home / "data"), XDG_CONFIG_HOME=str(home / "config"), PYTHONPATH=str(ROOT))
    client = client or Client()
    stderr = tmp_path / "acp.stderr"
    with stderr.open("wb") as err:
        async with spawn_agent_process(
            client, AGENT[0], *AGENT[1:], env=env, cwd=ROOT, transport_kwargs={"stderr": err.fileno(), "shutdown_timeout": 15.0},
            use_unstable_protocol=True,  # the client side answers elicitation/create
            observers=observers,
        ) as (conn, process):
            yield Acp(conn=conn, process=process, client=client, project=project, model=model, stderr=stderr, home=home)


@pytest.fixture
def model():
    with ModelServer() as server:
        yield server


@pytest_asyncio.fixture
async def acp(tmp_path, model):
    async with running_acp(tmp_path, model) as running:
        yield running
