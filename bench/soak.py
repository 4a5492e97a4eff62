"""Soak: 200 turns in one ``totem lsp`` process, with faults, and what the process kept after them.

A scripted OpenAI-format model server on loopback (tests/support/model_server.py, in this
process) answers each turn as its kind says; the kinds repeat in a cycle of ten:

- ``good``: a streamed answer. ``tool``: a ``read`` call, then an answer.
- ``malformed``: a stream whose payload is not JSON (the turn ends with ``error``).
- ``cut``: a stream dropped mid-answer, retried, then an answer.
- ``429``: a 429 with ``Retry-After: 0``, retried, then an answer.
- ``cancel_stream``: an answer that stalls after its first delta; the client sends
  ``$/cancelRequest`` for the ``totem/chat`` (the turn ends ``aborted``).
- ``reject``: a ``write`` call the client rejects, then an answer (the file is not written).
- ``cancel_command``: a ``bash`` call (``sleep``) the client allows; once the command runs, the
  client sends ``totem/abort`` (the turn ends ``aborted``; the command must be gone).

Five turns share a session, then a new one starts (40 sessions). The server is the console
script ``totem lsp`` next to ``sys.executable``, with XDG dirs in a temp dir. Before the first
turn, every 20 turns and after the last one the script reads the server's resident memory
(``VmRSS`` in /proc/PID/status) and its open descriptors (/proc/PID/fd), and prints them. At the end every session is read back
with ``totem/session``, the processes the server left are counted (its descendants in /proc,
and any process running one of the soak's commands), and the server is shut down.

Bounds: memory and open descriptors at the end each within 10 % of their value after the
warm-up (turn 20: the caches, the imports a first tool call pays and the database pages have
filled by then, so what grows after it is a leak, not a cache filling up), every
session readable, no process left, every turn ending as its kind expects, exit status 0 after
``shutdown`` and ``exit``. The script prints the figures and exits 1 when a bound is broken.

    .venv/bin/python bench/soak.py [--turns N]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import os
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.support.model_server import ModelServer, Reply, text_reply, tool_reply

CYCLE = ["good", "tool", "malformed", "good", "cut", "429", "cancel_stream", "reject", "cancel_command", "good"]
EXPECTED = {"malformed": "error", "cancel_stream": "aborted", "cancel_command": "aborted"}  # others: finished
FAULTS = {"malformed", "cut", "429", "cancel_stream", "reject", "cancel_command"}
TURNS_PER_SESSION = 5
BASELINE_TURN = 20
GROWTH_BOUND = 0.10  # share of the memory and of the descriptors after the warm-up (turn 20)
TURN_TIMEOUT = 30.0
MARKER = f"9{os.getpid() % 1000:03d}"  # in every soak command: sleep 9PPP.NNN


def replies(kind: str, turn: int) -> list[Reply]:
    """What the model server answers to one turn of ``kind``."""
    answer = text_reply(f"Answer {turn}: all good.")
    if kind == "good":
        return [answer]
    if kind == "tool":
        return [tool_reply([("read", {"path": "notes.txt"})]), answer]
    if kind == "malformed":
        return [Reply(events=["{this is not json"])]
    if kind == "cut":
        cut = text_reply(f"Answer {turn} cut off mid", pieces=4)
        cut.cut_after = 3
        return [cut, answer]
    if kind == "429":
        return [Reply(status=429, headers={"Retry-After": "0"}), answer]
    if kind == "cancel_stream":
        stalled = text_reply(f"Answer {turn} never ends", pieces=2)
        stalled.events = stalled.events[:2]  # the role and one delta; then the stream stalls
        stalled.hold = 10
        return [stalled]
    if kind == "reject":
        return [tool_reply([("write", {"path": f"rejected-{turn}.txt", "content": "no"})]), answer]
    if kind == "cancel_command":
        return [tool_reply([("bash", {"command": f"sleep {command_seconds(turn)}"})], text="Running it.")]
    raise ValueError(kind)


def command_seconds(turn: int) -> str:
    return f"{MARKER}.{turn:03d}"


@dataclass
class Figures:
    turns: int = 0
    faults: collections.Counter = field(default_factory=collections.Counter)
    outcomes: collections.Counter = field(default_factory=collections.Counter)
    unexpected: list[str] = field(default_factory=list)
    samples: list[tuple[int, int, int, float]] = field(default_factory=list)  # turn, RSS kB, fds, s
    seconds: collections.Counter = field(default_factory=collections.Counter)  # kind -> seconds in its turns


class Editor:
    """``totem lsp`` and a pygls client that answers permissions as the turn's kind says."""

    def __init__(self, tmp: Path, base_url: str) -> None:
        from pygls.lsp.client import LanguageClient

        self.project = tmp / "project"
        self.project.mkdir()
        (self.project / "notes.txt").write_text("Buy milk.\n")
        config = tmp / "config" / "totem"
        config.mkdir(parents=True)
        (config / "config.toml").write_text(
            'model = "sim/test-model"\nforge = false\nretry_max_wait = 0.05\npermission_timeout = 30\n\n'
            f'[providers.sim]\nkind = "openai"\nbase_url = "{base_url}"\n'
        )
        self.env = dict(os.environ)
        for name in ("CONFIG", "DATA", "CACHE", "STATE"):
            self.env[f"XDG_{name}_HOME"] = str(tmp / name.lower())
        self.env.pop("PYTHONPATH", None)
        self.client = LanguageClient("soak", "0")
        self.permission_answer = "reject_once"
        self.deltas = 0
        self.session_of_turn: str | None = None
        self._stderr_task: asyncio.Task | None = None
        self.stderr = bytearray()

        @self.client.feature("totem/event")
        def on_event(ls, params):
            if params.kind == "textDelta":
                self.deltas += 1
            self.session_of_turn = params.sessionId

        @self.client.feature("totem/permission")
        def on_permission(ls, params):
            return {"outcome": self.permission_answer}

        @self.client.feature("window/logMessage")
        def on_log(ls, params):
            pass

        @self.client.feature("window/showMessage")
        def on_show(ls, params):
            pass

    @property
    def pid(self) -> int:
        return self.client._server.pid

    async def start(self) -> None:
        from lsprotocol import types

        totem = Path(sys.executable).with_name("totem")
        await self.client.start_io(str(totem), "lsp", env=self.env, cwd=str(self.project))
        self._stderr_task = asyncio.create_task(self._drain_stderr())
        await self.client.initialize_async(
            types.InitializeParams(
                capabilities=types.ClientCapabilities(
                    experimental={"totem": {"permission": True, "question": True, "trust": True, "events": True}}
                ),
                process_id=os.getpid(),
                workspace_folders=[types.WorkspaceFolder(uri=self.project.as_uri(), name="project")],
            )
        )
        self.client.initialized(types.InitializedParams())

    async def _drain_stderr(self) -> None:
        stream = self.client._server.stderr
        while chunk := await stream.read(65536):
            self.stderr = (self.stderr + chunk)[-20000:]

    async def request(self, method: str, params, msg_id: str | None = None):
        return await asyncio.wait_for(self.client.protocol.send_request_async(method, params, msg_id=msg_id), TURN_TIMEOUT)

    async def stop(self) -> int | None:
        """``shutdown`` and ``exit``; the server's exit status (None if it had to be killed)."""
        server = self.client._server
        status = None
        try:
            await asyncio.wait_for(self.client.shutdown_async(None), 20)
            self.client.exit(None)
            status = await asyncio.wait_for(server.wait(), 20)
        except (TimeoutError, RuntimeError, ConnectionError):
            pass
        finally:
            if server.returncode is None:
                server.kill()
                await server.wait()
            if self._stderr_task is not None:
                self._stderr_task.cancel()
            await self.client.stop()
        return status


async def eventually(condition: Callable[[], bool], timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.02)
    return True


async def turn(editor: Editor, kind: str, number: int, session_id: str | None) -> tuple[str | None, str]:
    """One turn; (its session id, its stopReason)."""
    from lsprotocol import types

    params: dict = {"text": f"Turn {number}: {kind}"}
    if session_id is not None:
        params["sessionId"] = session_id
    editor.deltas = 0
    editor.session_of_turn = None
    editor.permission_answer = "allow_once" if kind == "cancel_command" else "reject_once"
    msg_id = f"chat-{number}"
    chat = asyncio.ensure_future(editor.request("totem/chat", params, msg_id=msg_id))

    async def fail(problem: str):
        editor.client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=msg_id))
        await asyncio.gather(chat, return_exceptions=True)  # the next turn starts on a quiet server
        raise AssertionError(f"turn {number}: {problem}")

    if kind == "cancel_stream":
        await eventually(lambda: editor.deltas >= 1 or chat.done())
        if chat.done() or not editor.deltas:
            await fail("no delta arrived before the turn ended")
        editor.client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=msg_id))
    elif kind == "cancel_command":
        await eventually(lambda: bool(running(command_seconds(number))) or chat.done())
        if chat.done() or not running(command_seconds(number)):
            await fail("the command did not start")
        editor.client.protocol.notify("totem/abort", {"sessionId": editor.session_of_turn})
    try:
        result = await chat
    except TimeoutError:
        raise AssertionError(f"turn {number}: no answer to totem/chat within {TURN_TIMEOUT:.0f} s") from None
    if kind == "cancel_command" and not await eventually(lambda: not running(command_seconds(number)), 10):
        raise AssertionError(f"turn {number}: the aborted command is still running")
    if kind == "reject" and (editor.project / f"rejected-{number}.txt").exists():
        raise AssertionError(f"turn {number}: a rejected write was written")
    return result.sessionId, result.stopReason


async def scripted_turn(editor: Editor, model: ModelServer, figures: Figures, kind: str, number: int, session_id: str | None) -> str | None:
    """One turn of ``kind`` with its replies queued, counted in ``figures``; its session id."""
    model.enqueue(*replies(kind, number))
    turn_started = time.monotonic()
    try:
        session_id, stop_reason = await turn(editor, kind, number, session_id)
    except AssertionError as exc:
        figures.unexpected.append(str(exc))
        return session_id
    except Exception as exc:  # an error response to totem/chat
        figures.unexpected.append(f"turn {number} ({kind}): {type(exc).__name__}: {exc}")
        return session_id
    finally:
        figures.seconds[kind] += time.monotonic() - turn_started
        if model.pending:
            figures.unexpected.append(f"turn {number} ({kind}): {model.pending} scripted replies left")
            model._queue.clear()
    figures.turns += 1
    if kind in FAULTS:
        figures.faults[kind] += 1
    figures.outcomes[stop_reason] += 1
    if stop_reason != EXPECTED.get(kind, "finished"):
        figures.unexpected.append(f"turn {number} ({kind}): {stop_reason}")
    return session_id


# ---------------------------------------------------------------------------------------------
# /proc
# ---------------------------------------------------------------------------------------------


def member(value, name: str):
    """A field of a JSON object in a response (pygls gives an object as a namedtuple, in a list as a dict)."""
    return value[name] if isinstance(value, dict) else getattr(value, name)


def resident_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def _processes() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, command line) of every process we can read."""
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                stat = f.read()
            with open(f"/proc/{name}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2 :].split()[1])  # the command may hold spaces and ")"
        out[int(name)] = (ppid, cmdline)
    return out


def descendants(pid: int) -> list[str]:
    """"PID command line" of each process below ``pid``."""
    table = _processes()
    found, frontier = [], [pid]
    while frontier:
        parent = frontier.pop()
        for child, (ppid, cmdline) in table.items():
            if ppid == parent:
                found.append(f"{child} {cmdline}")
                frontier.append(child)
    return found


def running(seconds: str) -> list[int]:
    """Processes running ``sleep SECONDS`` (the soak's commands), wherever they were reparented."""
    return [pid for pid, (_, cmdline) in _processes().items() if f"sleep {seconds}" in cmdline]


# ---------------------------------------------------------------------------------------------


async def soak(turns: int) -> int:
    figures = Figures()
    started = time.monotonic()
    with ModelServer() as model, tempfile.TemporaryDirectory(prefix="totem-soak-") as tmp:
        editor = Editor(Path(tmp), model.base_url)
        await editor.start()
        start = resident_kb(editor.pid), open_fds(editor.pid)
        print(f"  start   : RSS {start[0] / 1024:6.1f} MB, fds {start[1]:3d}", flush=True)
        sessions: list[str] = []
        session_id = None
        baseline: tuple[int, int] | None = None
        try:
            for number in range(1, turns + 1):
                kind = CYCLE[(number - 1) % len(CYCLE)]
                if (number - 1) % TURNS_PER_SESSION == 0:
                    session_id = None
                session_id = await scripted_turn(editor, model, figures, kind, number, session_id)
                if session_id is not None and session_id not in sessions:
                    sessions.append(session_id)
                if number % 20 == 0 or number == turns:
                    sample = (number, resident_kb(editor.pid), open_fds(editor.pid), time.monotonic() - started)
                    figures.samples.append(sample)
                    print(f"  turn {number:3d}: RSS {sample[1] / 1024:6.1f} MB, fds {sample[2]:3d}, {sample[3]:5.1f} s", flush=True)
                    if number == BASELINE_TURN:
                        baseline = sample[1], sample[2]
            end = resident_kb(editor.pid), open_fds(editor.pid)
            listed = {member(s, "sessionId") for s in await editor.request("totem/sessions", None)}
            readable = 0
            for sid in sessions:
                try:
                    session = await editor.request("totem/session", {"sessionId": sid})
                except Exception as exc:  # an error response: the session is not readable
                    print(f"  session {sid} not readable: {exc}")
                    continue
                if sid in listed and member(session, "messages"):
                    readable += 1
            left = descendants(editor.pid)
            left += [f"{pid} sleep {MARKER}.*" for pid in running(MARKER + ".") if not any(p.startswith(f"{pid} ") for p in left)]
        finally:
            status = await editor.stop()
    seconds = time.monotonic() - started
    assert baseline is not None, f"--turns must be at least {BASELINE_TURN}"

    rss_ratio, fd_ratio = end[0] / baseline[0], end[1] / baseline[1]
    faults = ", ".join(f"{kind} {n}" for kind, n in sorted(figures.faults.items()))
    print(f"turns: {figures.turns} in {seconds:.0f} s ({', '.join(f'{r} {n}' for r, n in sorted(figures.outcomes.items()))})")
    print(f"faults injected: {sum(figures.faults.values())} ({faults})")
    kinds = collections.Counter(CYCLE[(n - 1) % len(CYCLE)] for n in range(1, figures.turns + 1))
    print("mean seconds a turn: " + ", ".join(f"{k} {figures.seconds[k] / kinds[k]:.2f}" for k in kinds))
    print(
        f"memory (VmRSS): {start[0] / 1024:.1f} MB at the start, {baseline[0] / 1024:.1f} MB after the warm-up (turn "
        f"{BASELINE_TURN}), {end[0] / 1024:.1f} MB at the end ({rss_ratio - 1:+.1%} since the warm-up; bound +{GROWTH_BOUND:.0%})"
    )
    print(
        f"open fds: {start[1]} at the start, {baseline[1]} after the warm-up, {end[1]} at the end "
        f"({fd_ratio - 1:+.1%} since the warm-up; bound +{GROWTH_BOUND:.0%})"
    )
    print(f"sessions readable: {readable} of {len(sessions)}")
    print(f"processes left: {len(left)}" + "".join(f"\n  {p}" for p in left))
    print(f"exit status after shutdown and exit: {status}")
    broken = []
    if rss_ratio > 1 + GROWTH_BOUND:
        broken.append("memory")
    if fd_ratio > 1 + GROWTH_BOUND:
        broken.append("fds")
    if readable != len(sessions):
        broken.append("sessions")
    if left:
        broken.append("processes")
    if figures.unexpected:
        broken.append("turns")
        print("unexpected turns:" + "".join(f"\n  {u}" for u in figures.unexpected))
    if status != 0:
        broken.append("exit status")
        print(editor.stderr.decode(errors="replace")[-3000:])
    print("bounds: " + ("all kept" if not broken else "BROKEN: " + ", ".join(broken)))
    return 1 if broken else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=200)
    args = parser.parse_args()
    print(f"soak: {args.turns} turns in one totem lsp ({os.cpu_count()} CPUs, Python {sys.version.split()[0]})")
    return asyncio.run(soak(args.turns))


if __name__ == "__main__":
    sys.exit(main())
