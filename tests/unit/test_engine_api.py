"""The engine API (totem_engine/api/): one project's prompts and session actions, in process,
against the scripted loopback model server: what a door gets from ``Engine`` and ``Running``."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.support.model_server import ModelServer, text_reply, tool_reply
from tests.support.turns import RecordingFrontEnd
from totem_engine.api.engine import open_project
from totem_engine.api.errors import EngineError, SessionBusy


@pytest.fixture
def server():
    with ModelServer() as srv:
        yield srv


@pytest.fixture
def project(tmp_path: Path, server: ModelServer) -> tuple[Path, Path]:
    root = tmp_path / "project"
    root.mkdir()
    config = tmp_path / "totem.toml"
    config.write_text(
        'model = "sim/test-model"\nforge = false\nretry_max_wait = 0.5\n'
        f'[providers.sim]\nkind = "openai"\nbase_url = "{server.base_url}"\napi_key = "k"\n'
        '[permission]\nedit = "allow"\nwrite = "allow"\n'
    )
    return root, config


async def _edit_turn(engine, server: ModelServer, session_id: str | None, text: str) -> str:
    server.enqueue(tool_reply([("write", {"path": "b.txt", "content": text})]))
    server.enqueue(text_reply("done"))
    running = await engine.prompt(f"write {text}", RecordingFrontEnd(), session_id=session_id)
    result = await running.result()
    assert result.stop_reason == "finished", result
    return result.session_id


async def test_a_prompt_makes_a_titled_session_and_its_actions_answer_the_same_replies(project, server):
    root, config = project
    async with open_project(root, holder="test", config_file=config, start_local=False) as engine:
        session_id = await _edit_turn(engine, server, None, "two\n")
        assert (root / "b.txt").read_text() == "two\n"
        assert (await engine.session(session_id)).title == "write two"

        undone = await (await engine.prompt("/undo", RecordingFrontEnd(), session_id=session_id)).result()
        assert undone.reply is not None and undone.reply.action == "undo"
        assert undone.text == "deleted b.txt" and not (root / "b.txt").exists()
        redone = await (await engine.prompt("/redo", RecordingFrontEnd())).result()  # the newest session
        assert redone.text == "restored b.txt" and (root / "b.txt").read_text() == "two\n"
        assert len(server.requests) == 2  # the actions asked the model nothing

        forked = (await engine.fork(session_id)).forked
        assert forked and forked != session_id
        assert [m.role for m in await engine.history.messages(forked)] == ["user", "assistant", "assistant"]

        rewound = await (await engine.prompt("/rewind", RecordingFrontEnd(), session_id=session_id)).result()
        assert rewound.text.startswith("Rewound 1 turn (3 messages set aside")
        assert not (root / "b.txt").exists()
        assert await engine.history.messages(session_id) == []


async def test_a_session_is_busy_from_the_prompt_until_its_result(project, server):
    root, config = project
    async with open_project(root, holder="test", config_file=config, start_local=False) as engine:
        session_id = await _edit_turn(engine, server, None, "two\n")
        slow = text_reply("slow")
        slow.hold = 5.0  # the stream stays open until the abort
        server.enqueue(slow)
        running = await engine.prompt("again", RecordingFrontEnd(), session_id=session_id)
        assert engine.busy(session_id)
        with pytest.raises(SessionBusy) as caught:
            await engine.undo(session_id)
        assert caught.value.kind == "busy"
        with pytest.raises(SessionBusy):
            await engine.prompt("more", RecordingFrontEnd(), session_id=session_id)
        assert engine.abort(session_id)
        assert (await running.result()).stop_reason == "aborted"
        assert not engine.busy(session_id)


async def test_errors_carry_their_kind(project, tmp_path, server):
    root, config = project
    other = tmp_path / "other"
    other.mkdir()
    async with open_project(root, holder="test", config_file=config, start_local=False) as engine:
        session_id = await _edit_turn(engine, server, None, "two\n")
        for call, kind in [
            (engine.session("ses_nope"), "not_found"),
            (engine.session(session_id, root=other), "invalid"),
            (engine.set_mode(session_id, "yolo"), "invalid"),
            (engine.prompt("/retry", RecordingFrontEnd(), session_id=session_id), "invalid"),
            (engine.prompt("/rewind x", RecordingFrontEnd(), session_id=session_id), "invalid"),
        ]:
            with pytest.raises(EngineError) as caught:
                await call
            assert caught.value.kind == kind, (caught.value, kind)
    async with open_project(other, holder="test", config_file=config, start_local=False) as engine:
        with pytest.raises(EngineError) as caught:
            await engine.prompt("/undo", RecordingFrontEnd())
        assert "has none yet" in str(caught.value)
        with pytest.raises(EngineError) as caught:
            await engine.undo(session_id)
        assert caught.value.kind == "invalid"  # another project's session


async def test_a_prompt_to_an_untitled_session_titles_it_and_runs_the_turn(project, server):
    root, config = project
    async with open_project(root, holder="test", config_file=config, start_local=False) as engine:
        session = await engine.new_session()
        assert session.title == ""
        server.enqueue(text_reply("hello"))
        result = await (await engine.prompt("say hello", RecordingFrontEnd(), session_id=session.id)).result()
        assert result.stop_reason == "finished" and result.text == "hello"
        assert (await engine.session(session.id)).title == "say hello"


async def test_history_says_who_runs_a_session_and_rewind_turns_can_leave_the_files(project, server):
    root, config = project
    async with open_project(root, holder="test", config_file=config, start_local=False) as engine:
        session_id = await _edit_turn(engine, server, None, "two\n")
        assert await engine.history.leases() == {} and await engine.history.lease(session_id) is None
        assert await engine.history.request_abort(session_id) is None
        assert [(root_, count) for root_, count, _ in await engine.history.projects()] == [(str(root.resolve()), 1)]
        slow = text_reply("slow")
        slow.hold = 5.0
        server.enqueue(slow)
        running = await engine.prompt("again", RecordingFrontEnd(), session_id=session_id)
        with anyio.fail_after(10):
            async with anyio.create_task_group() as group:
                group.start_soon(running.result)
                while await engine.history.lease(session_id) is None:
                    await anyio.sleep(0.02)
                lease = await engine.history.request_abort(session_id)
                assert lease is not None and lease.holder == "test"
                assert list(await engine.history.leases()) == [session_id]
        assert (await running.result()).stop_reason == "aborted"  # the abort asked through the store

        reply = await engine.rewind_turns(session_id, 2, files=False)
        assert reply.text.startswith("Rewound 2 turns") and reply.files == []
        assert (root / "b.txt").read_text() == "two\n"  # the files left as they are
        assert await engine.history.messages(session_id) == []


async def test_an_empty_session_is_titled_by_its_first_prompt_and_set_mode_answers_the_session(project, server):
    root, config = project
    async with open_project(root, holder="test", config_file=config, start_local=False) as engine:
        empty = await engine.new_session()
        assert empty.title == ""
        assert await _edit_turn(engine, server, empty.id, "one\n") == empty.id
        assert (await engine.session(empty.id)).title == "write one"
        assert (await engine.set_mode(empty.id, "plan")).mode == "plan"
        assert (await engine.set_model(empty.id, "sim/other")).model == "sim/other"


async def test_diff_and_regenerate_typed_as_actions(project, server):
    root, config = project
    async with open_project(root, holder="test", config_file=config, start_local=False) as engine:
        session_id = await _edit_turn(engine, server, None, "two\n")
        shown = await (await engine.prompt("/diff", RecordingFrontEnd(), session_id=session_id)).result()
        assert shown.reply is not None and shown.reply.action == "diff"
        assert "+++ b/b.txt" in shown.text and "+two" in shown.text
        server.enqueue(text_reply("another answer"))
        again = await (await engine.prompt("/regenerate", RecordingFrontEnd(), session_id=session_id)).result()
        assert again.reply is None and again.text == "another answer"
        conversation = await engine.history.conversation(session_id)
        request = conversation.tree.requests()[-1]
        assert len(conversation.tree.variants(request)) == 2
    other = root.parent / "other"
    other.mkdir()
    async with open_project(other, holder="test", config_file=config, start_local=False) as engine:
        session = await engine.new_session()
        empty = await (await engine.prompt("/diff", RecordingFrontEnd(), session_id=session.id)).result()
        assert empty.text == "This session changed no file."
        with pytest.raises(EngineError) as caught:  # the same words as `totem sessions fork`
            await engine.prompt("/fork", RecordingFrontEnd(), session_id=session.id)
        assert str(caught.value) == f"session {session.id} has no messages to fork"


async def test_an_abort_while_a_prompt_is_prepared_ends_its_turn_at_once(project, server):
    root, config = project
    async with open_project(root, holder="test", config_file=config, start_local=False) as engine:
        session_id = await _edit_turn(engine, server, None, "two\n")
        server.enqueue(text_reply("never asked for"))
        # The prompt's preparation held at its first await (reading the session), as a slow store would.
        runtime = engine._runtime
        read, go = runtime.project_session, anyio.Event()

        async def held(session_id: str):
            await go.wait()
            return await read(session_id)

        runtime.project_session = held
        started: list = []
        async with anyio.create_task_group() as group:
            async def start() -> None:
                started.append(await engine.prompt("again", RecordingFrontEnd(), session_id=session_id))

            group.start_soon(start)
            while not engine.busy(session_id):
                await anyio.sleep(0.01)
            assert engine.abort(session_id)  # the editor's stop, while the prompt is prepared
            go.set()
        result = await started[0].result()
        assert result.stop_reason == "aborted"
        assert len(server.requests) == 2  # the first turn's two; the aborted one asked nothing


async def test_engines_keep_no_engine_opened_on_settings_replaced_meanwhile(project, server, tmp_path):
    from totem_engine.api.engines import Engines

    root, config = project
    async with Engines(holder="test", config_file=config, editor_settings={"max_steps": 20}) as engines:
        first = await engines.engine(root)
        assert first.config.max_steps == 20
        engines.reconfigure({"max_steps": 30})
        second = await engines.engine(root)
        assert second is not first and second.config.max_steps == 30
        engines.set_defaults(mode="plan")
        assert second.default_mode() == "plan"
        with pytest.raises(EngineError):
            engines.set_defaults(model="nope/nothing", mode="build")
        assert second.default_mode() == "plan"  # all or none
