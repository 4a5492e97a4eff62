"""Opening and closing a project's engine (totem_engine.opening.open_runtime): the trust
question, the local model's default and its lease, which store is closed."""

from __future__ import annotations

import os

import pytest

from tests.unit.test_local_server import fake_install
from totem_engine.local import server
from totem_engine.local.model import MODEL_ID
from totem_engine.opening import open_runtime
from totem_engine.store import Store


@pytest.fixture
def local(tmp_path):
    root = tmp_path / "local"
    yield root
    server.stop(root)


def user_config(tmp_path, text: str):
    path = tmp_path / "totem.toml"
    path.write_text(text, encoding="utf-8")
    return path


async def test_the_local_model_serves_while_the_project_is_open(root, local, tmp_path):
    fake_install(local)
    config_file = user_config(tmp_path, f'local_dir = "{local}"\n')
    async with open_runtime(root, config_file=config_file) as runtime:
        assert runtime.resolve_model(None) == f"local/{MODEL_ID}"
        state = server.read_state(local)
        assert server.live_leases(local) == [os.getpid()]
    # Closed: this process started the server and holds no other lease, so it stopped.
    assert not server.pid_alive(state.pid)
    assert server.live_leases(local) == []


async def test_a_front_end_that_names_a_model_or_refuses_the_local_one_gets_no_server(root, local, tmp_path):
    fake_install(local)
    config_file = user_config(tmp_path, f'local_dir = "{local}"\n')
    async with open_runtime(root, config_file=config_file, model="ollama/qwen") as runtime:
        assert "local" not in runtime.config.providers
    async with open_runtime(root, config_file=config_file, start_local=False) as runtime:
        assert "local" not in runtime.config.providers
    assert server.read_state(local) is None


async def test_an_untrusted_project_is_asked_about_and_restricted_when_refused(root):
    (root / ".totem").mkdir()
    (root / ".totem" / "config.toml").write_text('[permission]\nbash = "allow"\n', encoding="utf-8")
    asked = []

    async def refuse(where, reasons):
        asked.append((where, reasons))
        return False

    async with open_runtime(root, ask_trust=refuse, start_local=False) as runtime:
        assert asked == [(root, ["permission bash = allow"])]
        assert "not trusted" in runtime.trust_notice
        assert not any(rule.source == "project" for rule in runtime.agent.rules)


async def test_a_shared_store_stays_open_and_an_own_store_is_closed(root):
    shared = Store()
    async with open_runtime(root, start_local=False, store=shared) as runtime:
        assert runtime.store is shared
    assert await shared.list_sessions() == []  # still usable
    await shared.close()
    async with open_runtime(root, start_local=False) as runtime:
        own = runtime.store
        session = await runtime.new_session(model="m/x", mode="build", text="Fix the parser\nplease")
        assert session.title == "Fix the parser please"  # one line
    with pytest.raises(RuntimeError, match="store is closed"):
        await own.list_sessions()


class Quiet:
    """A front end that records events and is never asked anything."""

    def __init__(self):
        self.events = []

    async def emit(self, event):
        self.events.append(event)

    async def permission(self, request):
        raise AssertionError("nothing should ask")

    async def question(self, request):
        raise AssertionError("nothing should ask")


async def test_a_turn_reads_its_session_not_again_and_sets_no_title(root, tmp_path):
    from tests.support.model_server import ModelServer, text_reply

    with ModelServer() as model:
        config_file = user_config(tmp_path, f'model = "sim/m"\nforge = false\n[providers.sim]\nkind = "openai"\nbase_url = "{model.base_url}"\n')
        async with open_runtime(root, config_file=config_file) as runtime:
            reads = []
            get_session = runtime.store.get_session

            async def counted(session_id):
                reads.append(session_id)
                return await get_session(session_id)

            runtime.store.get_session = counted
            model.enqueue(text_reply("Hello."))
            session = await runtime.open_session(None, model="sim/m", mode="build", text="say hello")
            result = await runtime.turn("<context/>\n\nsay hello", Quiet(), session=session, model="sim/m").run()
            assert result.stop_reason == "finished" and reads == []  # created, then handed to the turn

            model.enqueue(text_reply("Again."))
            again = await runtime.open_session(session.id, model="sim/m", mode="build", text="ignored")
            result = await runtime.turn("and again", Quiet(), session=again, model="sim/m").run()
            assert result.stop_reason == "finished" and reads == [session.id]  # one read, by open_session
            runtime.store.get_session = get_session
            assert (await runtime.store.get_session(session.id)).title == "say hello"
