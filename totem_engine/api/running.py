"""``Running``: the one handle a door has on a turn (or on a built-in action's reply), and the
registry that keeps one turn per session at a time in this process.

A door gets a ``Running`` from ``Engine.prompt``, ``retry`` or ``regenerate``, may ``abort()`` it
at any time (before ``result()`` too: the turn then ends at once as aborted), and awaits
``result()`` once. The session counts as busy from the moment the ``Running`` exists until its
``result()`` has returned, so a second prompt, an undo or a rewind in between is refused with
``SessionBusy`` (another process is kept out by the session's lease, leases.py), unless the
prompt asks to wait (``Engine.prompt(wait=True)``): it then waits in the session's line, in the
order prompts came, and the session passes to it straight from the turn before (``Turns.wait``);
an abort of the session drops every prompt still waiting, unrun (``Running.dropped``).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import anyio

from totem_engine.api.errors import SessionBusy

if TYPE_CHECKING:
    from totem_engine.snapshots import FileOutcome
    from totem_engine.turn.loop import Turn
    from totem_engine.turn.terms import TurnResult


@dataclass(frozen=True)
class Reply:
    """What a built-in action did, said the same at every door: ``action`` (``undo``, ``redo``,
    ``compact``, ``rewind``, ``fork``), ``text`` (the reply a person reads), ``files`` (what
    became of each file: restored, deleted, conflict, unrestorable), ``forked`` (the new
    session's id), ``ok`` (False when a file could not be put back)."""

    action: str
    text: str
    files: list["FileOutcome"] = field(default_factory=list)
    forked: str | None = None
    compacted: int | None = None  # the messages a /compact summarised (0: nothing new)

    @property
    def ok(self) -> bool:
        return not any(f.action in ("conflict", "unrestorable") for f in self.files)


@dataclass(frozen=True)
class Result:
    """How a prompt ended: ``stop_reason`` (docs/events.md: finished, aborted, step_limit,
    guard, error), ``text`` (the answer, or the action's reply), ``reason`` (the visible reason
    for any end but finished), ``model`` (``provider/model`` that answered; "" for an action),
    ``reply`` (a built-in action's, None for a turn)."""

    session_id: str
    stop_reason: str
    text: str
    model: str = ""
    turn_id: str = ""
    reason: str | None = None
    reply: Reply | None = None

    @classmethod
    def of_turn(cls, result: "TurnResult") -> "Result":
        return cls(
            session_id=result.session_id, stop_reason=result.stop_reason, text=result.text, model=result.model,
            turn_id=result.turn_id, reason=result.reason,
        )


class Turns:
    """The turns running in this process, by session id; shared by every engine over one store
    (``Engines``), so a session is busy whichever engine started its turn."""

    def __init__(self) -> None:
        self._running: dict[str, Running] = {}
        # Prompts waiting for a session to be free, in the order they came (``wait``).
        self._waiting: dict[str, deque[Waiting]] = {}
        self._closing = False

    def busy(self, session_id: str) -> bool:
        return session_id in self._running

    def claim(self, session_id: str, what: str = "a turn is still running") -> "Claim":
        """Reserve the session while a turn is being prepared or an action runs (``SessionBusy``
        when it is taken, or when this process is closing)."""
        if session_id in self._running:
            raise SessionBusy(session_id, what)
        if self._closing:
            raise SessionBusy(session_id, "Totem is stopping")
        claim = Claim(session_id, self)
        self._running[session_id] = claim
        return claim

    async def wait(self, session_id: str, what: str = "a turn is still running") -> "Claim | None":
        """The session claimed as ``claim`` does, once every turn before this one is done: a
        prompt that comes while a turn runs (or others wait) waits its place in line and gets
        the session straight from the one before it. None when an abort dropped it meanwhile."""
        if session_id not in self._running and not self._waiting.get(session_id):
            return self.claim(session_id, what)
        if self._closing:
            raise SessionBusy(session_id, "Totem is stopping")
        waiting = Waiting()
        self._waiting.setdefault(session_id, deque()).append(waiting)
        try:
            await waiting.turn.wait()
        except BaseException:
            self._leave(session_id, waiting)
            raise
        if waiting.claim is None and self._closing:
            raise SessionBusy(session_id, "Totem is stopping")
        return waiting.claim

    def waiting(self, session_id: str) -> int:
        """How many prompts wait for the session."""
        return len(self._waiting.get(session_id, ()))

    def register(self, running: "Running") -> None:
        self._running[running.session_id] = running

    def release(self, running: "Running") -> None:
        if self._running.get(running.session_id) is running:
            del self._running[running.session_id]
            self._pass_on(running.session_id)

    def _pass_on(self, session_id: str) -> None:
        """The free session claimed for the first prompt waiting for it, which is woken."""
        line = self._waiting.get(session_id)
        if not line:
            return
        waiting = line.popleft()
        if not line:
            del self._waiting[session_id]
        if not self._closing:
            waiting.claim = Claim(session_id, self)
            self._running[session_id] = waiting.claim
        waiting.turn.set()

    def _leave(self, session_id: str, waiting: "Waiting") -> None:
        """A waiting prompt gone (its request cancelled): out of line, or, when the session had
        already passed to it, the session passed on."""
        line = self._waiting.get(session_id)
        if line is not None and waiting in line:
            line.remove(waiting)
            if not line:
                del self._waiting[session_id]
        elif waiting.claim is not None:
            waiting.claim.free()

    def abort(self, session_id: str) -> bool:
        """Abort the session's turn (or the prompt being prepared) and drop the prompts waiting
        for it; False when none runs here."""
        dropped = self._waiting.pop(session_id, deque())
        for waiting in dropped:
            waiting.turn.set()  # no claim: dropped
        running = self._running.get(session_id)
        if running is None:
            return bool(dropped)
        running.abort()
        return True

    def all(self) -> list["Running"]:
        return list(self._running.values())

    async def abort_all(self, timeout: float) -> None:
        """Every running turn aborted, and waited for up to ``timeout`` seconds; from here on no
        session can be claimed, and a turn that was being prepared is aborted as it starts."""
        self._closing = True
        for session_id in list(self._waiting):
            for waiting in self._waiting.pop(session_id):
                waiting.turn.set()
        with anyio.move_on_after(timeout):
            while self._running:
                for running in self.all():
                    running.abort()
                await anyio.sleep(0.02)


class Waiting:
    """A prompt in a session's line: woken (``turn``) with the session claimed for it, or with
    no ``claim`` when an abort dropped it."""

    def __init__(self) -> None:
        self.turn = anyio.Event()
        self.claim: Claim | None = None


class Running:
    """A turn under way (``turn``) or an action already done (``reply``)."""

    def __init__(
        self, session_id: str, *, turn: "Turn | None" = None, reply: Reply | None = None, turns: Turns | None,
        aborted: bool = False,
    ):
        """``aborted``: an abort came while the turn was being prepared (``Claim``): it ends at once."""
        self.session_id = session_id
        self._turn = turn
        self._reply = reply
        self._turns = turns
        self._result: Result | None = None
        if turns is not None and turn is not None:
            turns.register(self)
        if aborted:
            self.abort()

    @classmethod
    def dropped(cls, session_id: str) -> "Running":
        """A prompt dropped while it waited for the turn before it (an abort): it never ran,
        nothing of it is stored, and it ends as aborted."""
        running = cls(session_id, turns=None)
        running._result = Result(session_id=session_id, stop_reason="aborted", text="", reason="stopped before it started")
        return running

    @property
    def turn_id(self) -> str:
        return self._turn.turn_id if self._turn is not None else ""

    @property
    def is_action(self) -> bool:
        return self._reply is not None

    def abort(self) -> None:
        """Abort the turn: its processes killed, its open calls closed, the partial answer kept."""
        if self._turn is not None:
            self._turn.abort()


    async def result(self) -> Result:
        """The turn run to its end (or the action's reply). Raises what the turn raises before it
        starts: ``SessionInUse`` when another process runs the session."""
        if self._result is not None:
            return self._result
        if self._reply is not None:
            self._result = Result(session_id=self.session_id, stop_reason="finished", text=self._reply.text, reply=self._reply)
            return self._result
        assert self._turn is not None
        try:
            self._result = Result.of_turn(await self._turn.run())
        finally:
            if self._turns is not None:
                self._turns.release(self)
        return self._result


class Claim(Running):
    """A session reserved while its turn is prepared or an action runs: busy to every other
    request, and an abort meanwhile is kept for the turn it becomes (``aborted``)."""

    def __init__(self, session_id: str, turns: Turns):
        super().__init__(session_id, reply=Reply("", ""), turns=None)
        self._owner = turns
        self.aborted = False

    def abort(self) -> None:
        self.aborted = True

    def free(self) -> None:
        self._owner.release(self)
