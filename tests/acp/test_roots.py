"""``additionalDirectories`` (multi-root sessions): the SDK's client gives ``session/new`` folders
beside ``cwd``; the file tools reach them, a path outside every root is refused as today (the
project boundary), undo restores a file changed in one, and a relative folder is refused."""

from __future__ import annotations

import pytest
from acp import RequestError

from tests.support.model_server import text_reply, tool_reply
from tests.support.reminder import sent_messages


def text(value: str) -> list[dict]:
    return [{"type": "text", "text": value}]


def tool_results(acp, request: int) -> list[str]:
    """The tool results the model's request number ``request`` carried, in order."""
    return [m["content"] for m in sent_messages(acp.model.requests[request]) if m["role"] == "tool"]


@pytest.fixture
def shared(tmp_path):
    folder = tmp_path / "shared"
    folder.mkdir()
    (folder / "lib.py").write_text("VALUE = 1\n")
    return folder


async def test_initialize_advertises_additional_directories(acp):
    answer = await acp.initialize()
    assert answer.agent_capabilities.session_capabilities.additional_directories is not None


async def test_a_file_in_an_additional_directory_is_read_edited_and_undone(acp, shared, tmp_path):
    await acp.initialize()
    session_id = await acp.new_session(additional_directories=[str(shared)])
    library = shared / "lib.py"
    acp.model.enqueue(
        tool_reply([("read", {"path": str(library)})]),
        tool_reply([("edit", {"path": str(library), "old_string": "VALUE = 1", "new_string": "VALUE = 2"})]),
        text_reply("Changed it."),
    )
    acp.client.answers.append("allow_once")
    response = await acp.conn.prompt(session_id=session_id, prompt=text("set VALUE to 2 in the shared library"))
    assert response.stop_reason == "end_turn"
    assert "VALUE = 1" in tool_results(acp, 1)[0]
    assert library.read_text() == "VALUE = 2\n"
    edits = [u for u in acp.client.of("tool_call") if u.kind == "edit"]
    assert edits and edits[0].locations[0].path == str(library)

    await acp.conn.prompt(session_id=session_id, prompt=text("/undo"))
    assert library.read_text() == "VALUE = 1\n"


async def test_a_path_outside_every_root_is_refused(acp, shared, tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "secret.txt").write_text("not yours\n")
    await acp.initialize()
    session_id = await acp.new_session(additional_directories=[str(shared)])
    acp.model.enqueue(
        tool_reply([("read", {"path": str(outside / "secret.txt")})]),
        tool_reply([("write", {"path": str(outside / "new.txt"), "content": "x\n"})]),
        text_reply("Could not."),
    )
    await acp.conn.prompt(session_id=session_id, prompt=text("read and write outside"))
    read, write = tool_results(acp, 1)[0], tool_results(acp, 2)[1]
    assert "is outside the project" in read and "not yours" not in read
    assert "is outside the project" in write
    assert not (outside / "new.txt").exists()
    assert acp.client.permissions == []  # a hard deny: nobody is asked


async def test_without_additional_directories_the_folder_stays_outside(acp, shared):
    await acp.initialize()
    session_id = await acp.new_session()
    acp.model.enqueue(tool_reply([("read", {"path": str(shared / "lib.py")})]), text_reply("Could not."))
    await acp.conn.prompt(session_id=session_id, prompt=text("read the shared library"))
    assert "is outside the project" in tool_results(acp, 1)[0]


async def test_grep_in_an_additional_directory_names_files_by_absolute_path(acp, shared):
    await acp.initialize()
    session_id = await acp.new_session(additional_directories=[str(shared)])
    acp.model.enqueue(tool_reply([("grep", {"pattern": "VALUE", "path": str(shared)})]), text_reply("Found."))
    await acp.conn.prompt(session_id=session_id, prompt=text("find VALUE"))
    assert f"{(shared / 'lib.py').resolve()}:1: VALUE = 1" in tool_results(acp, 1)[0]


async def test_a_resource_link_into_an_additional_directory_is_a_project_file(acp, shared):
    await acp.initialize()
    session_id = await acp.new_session(additional_directories=[str(shared)])
    acp.model.enqueue(text_reply("Seen."))
    link = {"type": "resource_link", "uri": (shared / "lib.py").as_uri(), "name": "lib.py"}
    await acp.conn.prompt(session_id=session_id, prompt=[link, *text("look at this")])
    sent = sent_messages(acp.model.requests[0])[-1]["content"]
    assert f'<context file="{(shared / "lib.py").resolve()}"' in sent


async def test_a_relative_additional_directory_is_refused(acp):
    await acp.initialize()
    with pytest.raises(RequestError) as refused:
        await acp.new_session(additional_directories=["shared"])
    assert refused.value.code == -32602
    assert "additionalDirectories" in str(refused.value.data)


async def test_session_load_takes_its_own_additional_directories(acp, shared):
    await acp.initialize()
    session_id = await acp.new_session()
    await acp.conn.load_session(cwd=str(acp.project), session_id=session_id, mcp_servers=[], additional_directories=[str(shared)])
    acp.model.enqueue(tool_reply([("read", {"path": str(shared / "lib.py")})]), text_reply("Read."))
    await acp.conn.prompt(session_id=session_id, prompt=text("read the shared library"))
    assert "VALUE = 1" in tool_results(acp, 1)[0]
    with pytest.raises(RequestError) as refused:
        await acp.conn.resume_session(cwd=str(acp.project), session_id=session_id, mcp_servers=[], additional_directories=["../x"])
    assert refused.value.code == -32602
