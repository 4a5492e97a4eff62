"""One scripted session driven through all four doors (``totem run``, ``totem lsp``, ``totem acp``,
``totem mcp serve``), each the real process with its real client, against the same scripted
loopback model: every session action of the engine API does the same thing at each door, the
same files on disk, the same messages stored, the same words for the same built-in reply.

The session: two turns that each write a file, then ``/diff``, ``/undo``, ``/redo``, ``/rewind``,
``/compact``, a turn the model server fails (400), ``/retry``, ``/regenerate``, ``/fork``; at the MCP server the
actions that have tools of their own (``undo_turn``, ``redo_turn``, ``rewind``, ``retry_turn``,
``fork_session``) are called as tools as well, and must agree with the typed action.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from tests.acp.conftest import running_acp
from tests.cli.conftest import Totem
from tests.lsp.conftest import start_editor
from tests.mcp_server.conftest import Served
from tests.support.model_server import ModelServer, Reply, text_reply, tool_reply
from totem_engine.api.history import History
from totem_engine.store import Store

ALLOW = '[permission]\nedit = "allow"\n'  # write's permission; the MCP server's test config has it already
WAIT = 60.0


def script(model: ModelServer) -> None:
    """The model's side of the whole session, the same for every door."""
    model.enqueue(tool_reply([("write", {"path": "b.txt", "content": "two\n"})]))
    model.enqueue(text_reply("made b"))
    model.enqueue(tool_reply([("write", {"path": "c.txt", "content": "three\n"})]))
    model.enqueue(text_reply("made c"))
    model.enqueue(text_reply("The user had b.txt written."))  # /compact's summary
    model.enqueue(Reply(status=400, body=json.dumps({"error": {"message": "scripted failure"}})))
    model.enqueue(text_reply("recovered"))  # /retry
    model.enqueue(text_reply("recovered again"))  # /regenerate


class Door(Protocol):
    session_id: str | None
    last: str  # the text of the last thing sent, as the door showed it

    async def send(self, text: str) -> str:
        """What the user typed, at this door; the text the door shows for it (the answer, or the
        built-in action's reply)."""


def files(root: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(root.glob("*.txt"))}


def same_ids(text: str) -> str:
    return re.sub(r"\bses_[A-Za-z0-9_-]+", "ses_*", text)


@dataclass
class Record:
    """What one door did: the project's files after each step, the replies, the stored messages."""

    steps: list[tuple[str, dict[str, str], str]] = field(default_factory=list)
    conversation: list[tuple[str, list[str]]] = field(default_factory=list)
    forked: list[tuple[str, list[str]]] = field(default_factory=list)


async def drive(door: Door, project: Path, data: Path) -> Record:
    record = Record()
    for text in ("make b", "make c", "/diff", "/undo", "/redo", "/rewind", "/compact", "fail", "/retry", "/regenerate", "/fork"):
        shown = await door.send(text)
        if text == "fail":
            shown = ""  # each door words a failed turn in its own way (an error, an exit code)
        record.steps.append((text, files(project), same_ids(shown.strip())))
    assert door.session_id is not None
    forked = re.search(r"into (ses_[A-Za-z0-9_-]+)", door.last)
    async with History(Store(data / "totem" / "totem.db")) as history:
        record.conversation = await _conversation(history, door.session_id)
        assert forked is not None
        record.forked = await _conversation(history, forked.group(1))
    return record


async def _conversation(history: History, session_id: str) -> list[tuple[str, list[str]]]:
    out = []
    for message in await history.messages(session_id):
        parts = []
        for part in message.parts:
            if part.type == "text":
                parts.append(f"text:{part.data.get('typed') or part.data.get('text', '')}")
            elif part.type == "tool":
                parts.append(f"tool:{part.data.get('tool')}:{part.status}")
            elif part.type in ("checkpoint", "error"):
                parts.append(part.type)
        out.append((message.role, parts))
    return out


# --- the four doors --------------------------------------------------------------------------


class CliDoor:
    def __init__(self, totem: Totem, config: Path):
        self.totem, self.config = totem, config
        self.session_id: str | None = None
        self.last = ""

    async def send(self, text: str) -> str:
        args = ["run", "--cwd", str(self.totem.project), "--config", str(self.config)]
        if self.session_id:
            args += ["--session", self.session_id]
        done = await asyncio.to_thread(self.totem.run, *args, text)
        found = re.search(r"^session (ses_\S+)$", done.stderr, re.M)
        if self.session_id is None and found:
            self.session_id = found.group(1)
        self.last = done.stdout
        return done.stdout


class LspDoor:
    def __init__(self, editor: Any):
        self.editor = editor
        self.session_id: str | None = None
        self.last = ""

    async def send(self, text: str) -> str:
        params: dict[str, Any] = {"text": text}
        if self.session_id:
            params["sessionId"] = self.session_id
        result = await asyncio.wait_for(self.editor.request("totem/chat", params), WAIT)
        self.session_id = self.session_id or result.sessionId
        self.last = result.text
        return result.text


class AcpDoor:
    def __init__(self, acp: Any, session_id: str):
        self.acp = acp
        self.session_id: str | None = session_id
        self.last = ""

    async def send(self, text: str) -> str:
        from acp import RequestError
        from acp.schema import TextContentBlock

        before = len(self.acp.client.updates)
        with contextlib.suppress(RequestError):  # the failed turn is an error answer
            await asyncio.wait_for(
                self.acp.conn.prompt(session_id=self.session_id, prompt=[TextContentBlock(type="text", text=text)]), WAIT
            )
        chunks = [u for u in self.acp.client.updates[before:] if u.session_update == "agent_message_chunk"]
        self.last = "".join(u.content.text for u in chunks)
        return self.last


class McpDoor:
    def __init__(self, session: Any, project: Path):
        self.session, self.project = session, project
        self.session_id: str | None = None
        self.last = ""

    async def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        called = await asyncio.wait_for(self.session.call_tool(tool, arguments), WAIT)
        if called.is_error:
            return {"error": called.content[0].text}
        return called.structured_content

    async def send(self, text: str) -> str:
        if self.session_id is None:
            self.session_id = (await self.call("start_session", {"project": str(self.project)}))["session_id"]
        answer = await self.call("send_prompt", {"session_id": self.session_id, "prompt": text})
        self.last = answer.get("text", answer.get("error", ""))
        return self.last


# --- the test --------------------------------------------------------------------------------


async def through_cli(tmp_path: Path) -> Record:
    with ModelServer() as model:
        script(model)
        (tmp_path / "project").mkdir()
        totem = Totem(project=tmp_path / "project", home=tmp_path / "home", server=model)
        config = tmp_path / "home" / "run.toml"
        config.parent.mkdir(parents=True)
        config.write_text(totem.config.read_text() + ALLOW)
        return await drive(CliDoor(totem, config), totem.project, totem.home / "data")


async def through_lsp(tmp_path: Path) -> Record:
    with ModelServer() as model:
        script(model)
        editor = await start_editor(tmp_path, model, totem={"permission": True, "question": True, "events": True}, extra_config=ALLOW,
            apply_edit=False,  # the files on disk, as the other doors write them (edits.py writes a closed file itself)
        )
        try:
            return await drive(LspDoor(editor), editor.project, tmp_path / "home" / "data")
        finally:
            await editor.client.shutdown_session()


async def through_acp(tmp_path: Path) -> Record:
    with ModelServer() as model:
        script(model)
        async with running_acp(tmp_path, model, config=ALLOW) as acp:
            await acp.initialize()
            door = AcpDoor(acp, await acp.new_session())
            return await drive(door, acp.project, acp.home / "data")


async def through_mcp(tmp_path: Path) -> Record:
    with ModelServer() as model:
        script(model)
        (tmp_path / "project").mkdir()
        (tmp_path / "home").mkdir()
        served = Served(project=tmp_path / "project", home=tmp_path / "home", server=model)
        async with served.stdio(served.serve_config()) as session:
            return await drive(McpDoor(session, served.project), served.project, served.home / "data")


DOORS = {"cli": through_cli, "lsp": through_lsp, "acp": through_acp, "mcp": through_mcp}


async def test_every_session_action_does_the_same_at_every_door(tmp_path: Path):
    records = {}
    for name, run in DOORS.items():
        (tmp_path / name).mkdir()
        records[name] = await run(tmp_path / name)
    cli = records["cli"]
    # What the session did, read at one door: each step's files and the actions' replies.
    assert [(text, on_disk) for text, on_disk, _ in cli.steps] == [
        ("make b", {"b.txt": "two\n"}),
        ("make c", {"b.txt": "two\n", "c.txt": "three\n"}),
        ("/diff", {"b.txt": "two\n", "c.txt": "three\n"}),
        ("/undo", {"b.txt": "two\n"}),
        ("/redo", {"b.txt": "two\n", "c.txt": "three\n"}),
        ("/rewind", {"b.txt": "two\n"}),
        ("/compact", {"b.txt": "two\n"}),
        ("fail", {"b.txt": "two\n"}),
        ("/retry", {"b.txt": "two\n"}),
        ("/regenerate", {"b.txt": "two\n"}),
        ("/fork", {"b.txt": "two\n"}),
    ]
    replies = {text: shown for text, _, shown in cli.steps}
    assert replies["/undo"] == "deleted c.txt"
    assert replies["/redo"] == "restored c.txt"
    assert replies["/rewind"].startswith("Rewound 1 turn (") and replies["/rewind"].endswith("deleted c.txt")
    assert replies["/compact"].startswith("Compacted: ")
    assert replies["/retry"] == "recovered"
    assert replies["/regenerate"] == "recovered again"
    assert "+++ b/b.txt" in replies["/diff"] and "+three" in replies["/diff"]
    assert replies["/fork"].startswith("Forked session ses_* into ses_*")
    assert cli.conversation and cli.conversation == cli.forked[: len(cli.conversation)]
    for name, record in records.items():
        assert record.steps == cli.steps, name
        assert record.conversation == cli.conversation, name
        assert record.forked == cli.forked, name


async def test_the_mcp_servers_action_tools_agree_with_the_typed_actions(tmp_path: Path):
    with ModelServer() as model:
        for n in (1, 2):
            model.enqueue(tool_reply([("write", {"path": f"f{n}.txt", "content": f"{n}\n"})]))
            model.enqueue(text_reply(f"made {n}"))
        model.enqueue(Reply(status=400, body=json.dumps({"error": {"message": "scripted failure"}})))
        model.enqueue(text_reply("recovered"))
        (tmp_path / "project").mkdir()
        (tmp_path / "home").mkdir()
        served = Served(project=tmp_path / "project", home=tmp_path / "home", server=model)
        async with served.stdio(served.serve_config()) as session:
            door = McpDoor(session, served.project)
            await door.send("make 1")
            await door.send("make 2")
            sid = door.session_id
            undone = await door.call("undo_turn", {"session_id": sid})
            assert [f["path"] for f in undone["files"]] == ["f2.txt"] and files(served.project) == {"f1.txt": "1\n"}
            redone = await door.call("redo_turn", {"session_id": sid})
            assert [f["path"] for f in redone["files"]] == ["f2.txt"] and "f2.txt" in files(served.project)
            rewound = await door.call("rewind", {"session_id": sid})
            assert rewound["text"].startswith("Rewound 1 turn (") and files(served.project) == {"f1.txt": "1\n"}
            await door.send("fail")
            retried = await door.call("retry_turn", {"session_id": sid})
            assert retried["stop_reason"] == "finished" and retried["text"] == "recovered"
            forked = await door.call("fork_session", {"session_id": sid})
            assert forked["session_id"] not in (sid, None)
