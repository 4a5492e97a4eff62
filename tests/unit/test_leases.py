"""Session leases (totem_engine/leases.py): one holder at a time, a dead or stale holder's lease
taken over, an abort asked through the store read at the holder's next heartbeat, and a turn
that refuses to start in a session another process runs, before it stores anything."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

from tests.support.turns import Scene, answer
from totem_engine import leases
from totem_engine.leases import holding, in_force, lease_in_force, request_abort
from totem_engine.store import (
    THIS_HOST,
    Lease,
    SessionInUse,
    SessionNotFound,
    SessionUnavailable,
    Store,
)


@pytest.fixture
async def store(tmp_path: Path):
    async with Store(tmp_path / "totem.db") as store:
        yield store


@pytest.fixture
def fast_beats(monkeypatch):
    monkeypatch.setattr(leases, "HEARTBEAT", 0.02)


def _dead_pid() -> int:
    """The pid of a process that has exited (and been reaped)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


async def _recorded(store: Store, session_id: str, *, pid: int, host: str = THIS_HOST, age: float = 0.0) -> Lease:
    """A lease recorded as another process took it ``age`` seconds ago."""
    then = time.time() - age
    lease = Lease(session_id, "lse_other", pid, host, "totem lsp", then, then)
    return await store.take_lease(lease, in_force=lambda _: False)


async def test_a_second_taker_is_refused_with_the_holder_named(store):
    session = await store.create_session(cwd="/p", model="m")
    async with holding(store, session.id, holder="totem run") as held:
        with pytest.raises(SessionInUse) as refused:
            async with holding(store, session.id, holder="totem mcp serve"):
                pass
        assert refused.value.lease.token == held.lease.token
        assert "totem run" in str(refused.value) and str(held.lease.pid) in str(refused.value)
        assert isinstance(refused.value, SessionUnavailable)
    assert await store.leases(session.id) == []  # released at the end of the block
    async with holding(store, session.id, holder="totem mcp serve"):
        pass


async def test_a_dead_holders_lease_is_taken_over(store):
    session = await store.create_session(cwd="/p", model="m")
    dead = await _recorded(store, session.id, pid=_dead_pid())
    assert not in_force(dead)
    assert await lease_in_force(store, session.id) is None
    async with holding(store, session.id, holder="totem run") as held:
        assert held.lease.token != dead.token


async def test_a_stale_heartbeat_is_taken_over_even_when_the_pid_lives(store):
    session = await store.create_session(cwd="/p", model="m")
    await _recorded(store, session.id, pid=1, age=leases.STALE_AFTER + 5)  # pid 1 is alive
    async with holding(store, session.id, holder="totem run"):
        pass


async def test_another_machines_fresh_lease_is_in_force(store):
    session = await store.create_session(cwd="/p", model="m")
    await _recorded(store, session.id, pid=_dead_pid(), host=THIS_HOST + "-elsewhere")
    with pytest.raises(SessionInUse, match="on " + THIS_HOST + "-elsewhere"):
        async with holding(store, session.id, holder="totem run"):
            pass


async def test_a_session_that_does_not_exist_has_no_lease(store):
    with pytest.raises(SessionNotFound):
        async with holding(store, "ses_missing", holder="totem run"):
            pass


async def test_an_abort_asked_through_the_store_reaches_the_holder(store, fast_beats):
    session = await store.create_session(cwd="/p", model="m")
    aborted = anyio.Event()
    async with holding(store, session.id, holder="totem run") as held:

        async def work() -> str:
            asked = await request_abort(store, session.id)
            assert asked is not None and asked.token == held.lease.token
            await aborted.wait()
            return "ended"

        assert await held.run(work, aborted.set) == "ended"
    assert await request_abort(store, session.id) is None  # nothing runs now


async def test_a_holder_whose_lease_was_taken_over_aborts(store, fast_beats):
    session = await store.create_session(cwd="/p", model="m")
    aborted = anyio.Event()
    async with holding(store, session.id, holder="totem run") as held:

        async def work() -> None:
            await _recorded(store, session.id, pid=1)  # another process found it stale
            await aborted.wait()

        await held.run(work, aborted.set)


async def test_what_the_work_raises_is_raised_as_it_is(store):
    session = await store.create_session(cwd="/p", model="m")

    async def work() -> None:
        raise SessionNotFound("ses_x")

    async with holding(store, session.id, holder="totem run") as held:
        with pytest.raises(SessionNotFound):
            await held.run(work, lambda: None)


async def test_a_turn_in_a_session_another_process_runs_is_refused_before_it_stores_anything(tmp_path):
    scene = Scene(tmp_path)
    scene.agent.lease_holder = "totem run"
    try:
        scene.provider.enqueue(answer("first"))
        assert (await scene.run("hello")).stop_reason == "finished"
        before = await scene.store.messages(scene.session_id)
        await _recorded(scene.store, scene.session_id, pid=1)  # a live process runs it now
        with pytest.raises(SessionInUse, match="totem lsp"):
            await scene.run("again")
        assert await scene.store.messages(scene.session_id) == before
        assert scene.provider.requests[1:] == []
    finally:
        await scene.close()


async def test_a_turn_aborted_through_the_store_ends_aborted(tmp_path, fast_beats):
    scene = Scene(tmp_path)
    scene.agent.lease_holder = "totem run"
    try:
        stalled = anyio.Event()

        async def never_answers(*args, **kwargs):
            stalled.set()
            await anyio.sleep_forever()
            yield  # an async generator, as a provider's stream is

        scene.provider.stream = never_answers
        turn = await scene.turn("wait for me")
        async with anyio.create_task_group() as group:
            results = []

            async def run() -> None:
                results.append(await turn.run())

            group.start_soon(run)
            await stalled.wait()
            assert await request_abort(scene.store, scene.session_id) is not None
        assert results[0].stop_reason == "aborted"
        assert await scene.store.leases(scene.session_id) == []
    finally:
        await scene.close()
