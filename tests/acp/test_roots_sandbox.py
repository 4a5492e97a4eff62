"""``additionalDirectories`` in the bubblewrap sandbox, through ``totem acp`` and the SDK's client:
a sandboxed command writes in an additional directory (under /tmp, which a command sees as its
own private folder, so the directory is mounted again), what it wrote is on disk and undone by
``/undo``, a folder beside it stays read-only, its ``.git`` is read-only, its secret files are
empty to a command run unasked, and a read-only command naming it runs unasked."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from tests.acp.conftest import running_acp
from tests.acp.test_roots import text, tool_results
from tests.support.model_server import text_reply, tool_reply


@pytest.fixture
async def boxed(tmp_path, model):
    async with running_acp(tmp_path, model, config='sandbox = "always"') as running:
        yield running


@pytest.fixture
def shared(tmp_path: Path) -> Path:
    folder = tmp_path / "shared"
    folder.mkdir()
    (folder / "lib.py").write_text("VALUE = 1\n")
    (folder / ".git").mkdir()
    (folder / ".env").write_text("TOKEN=sk-shared-secret\n")
    return folder


async def test_a_sandboxed_command_writes_in_an_additional_directory_and_undo_restores_it(boxed, shared, tmp_path):
    assert str(shared.resolve()).startswith("/tmp/")  # a command's /tmp is its own: the root is mounted again
    sibling = tmp_path / "sibling"
    sibling.mkdir()
    command = (
        f"sed -i s/1/2/ {shared}/lib.py && echo made > {shared}/made.txt && rm {shared}/.env ; "
        f"echo no > {sibling}/x.txt ; echo no > {shared}/.git/hook ; echo no > {boxed.project}/../escape.txt ; "
        f"echo in-project > here.txt ; cat {shared}/lib.py"
    )
    await boxed.initialize()
    session_id = await boxed.new_session(additional_directories=[str(shared)])
    boxed.model.enqueue(tool_reply([("bash", {"command": command})]), text_reply("Done."))
    boxed.client.answers.append("allow_once")
    response = await boxed.conn.prompt(session_id=session_id, prompt=text("change the shared library"))
    assert response.stop_reason == "end_turn"

    result = tool_results(boxed, 1)[0]
    assert "VALUE = 2" in result  # the command saw its own write through the overlay
    assert (shared / "lib.py").read_text() == "VALUE = 2\n"
    assert (shared / "made.txt").read_text() == "made\n"
    assert not (shared / ".env").exists()
    assert (boxed.project / "here.txt").read_text() == "in-project\n"
    # Outside every root, and in the extra root's .git: nothing written.
    assert not (sibling / "x.txt").exists() and not (tmp_path / "escape.txt").exists()
    assert not (shared / ".git" / "hook").exists()
    assert result.count("Read-only file system") >= 3
    real = shared.resolve()
    assert f"{real}/lib.py" in result and f"{real}/made.txt (new)" in result and f"{real}/.env (deleted)" in result

    await boxed.conn.prompt(session_id=session_id, prompt=text("/undo"))
    assert (shared / "lib.py").read_text() == "VALUE = 1\n"
    assert not (shared / "made.txt").exists()
    assert (shared / ".env").read_text() == "TOKEN=sk-shared-secret\n"
    assert not (boxed.project / "here.txt").exists()


async def test_a_read_only_command_in_an_additional_directory_runs_unasked_and_sees_no_secret(boxed, shared):
    await boxed.initialize()
    session_id = await boxed.new_session(additional_directories=[str(shared)])
    boxed.model.enqueue(
        tool_reply([("bash", {"command": f"cat {shared}/lib.py && grep -r -c . {shared}"})]), text_reply("Read."),
    )
    await boxed.conn.prompt(session_id=session_id, prompt=text("look at the shared library"))
    result = tool_results(boxed, 1)[0]
    assert boxed.client.permissions == []  # its paths are inside the project's roots: nobody asked
    assert "VALUE = 1" in result
    assert f"{shared}/.env:0" in result  # masked: empty to a command run unasked
    assert "sk-shared-secret" not in result


async def test_without_additional_directories_a_command_naming_the_folder_is_asked(boxed, shared):
    await boxed.initialize()
    session_id = await boxed.new_session()
    boxed.model.enqueue(tool_reply([("bash", {"command": f"cat {shared}/lib.py"})]), text_reply("Asked."))
    await boxed.conn.prompt(session_id=session_id, prompt=text("look at the shared library"))
    assert len(boxed.client.permissions) == 1  # outside the project: a question (refused by default)
    assert "VALUE = 1" not in tool_results(boxed, 1)[0]


@pytest.fixture
def own_tmp_root():
    """An additional directory straight under /tmp, apart from the project's folder there."""
    folder = Path(tempfile.mkdtemp(prefix="totem-extra-root-", dir="/tmp"))
    (folder / "notes.txt").write_text("seen from the sandbox\n")
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


async def test_an_additional_directory_of_its_own_under_tmp_is_visible_and_writable(boxed, own_tmp_root):
    await boxed.initialize()
    session_id = await boxed.new_session(additional_directories=[str(own_tmp_root)])
    command = f"cat {own_tmp_root}/notes.txt && echo written > {own_tmp_root}/out.txt && ls /tmp"
    boxed.model.enqueue(tool_reply([("bash", {"command": command})]), text_reply("Done."))
    boxed.client.answers.append("allow_once")
    await boxed.conn.prompt(session_id=session_id, prompt=text("use the folder under /tmp"))
    result = tool_results(boxed, 1)[0]
    assert "seen from the sandbox" in result
    assert (own_tmp_root / "out.txt").read_text() == "written\n"
    listed = result.split("seen from the sandbox\n", 1)[1]
    assert own_tmp_root.name in listed and "pytest-of" in listed  # /tmp: the session's, with the roots shown again
    assert f"{own_tmp_root}/out.txt (new)" in result
