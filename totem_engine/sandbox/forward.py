"""A loopback forward: the ports a job listens on in the session's sandbox, reachable from this
machine's 127.0.0.1 (the user chose it when asked to start the job, tools/job.py).

A sandboxed session without network has a namespace of its own (session.py, its holder
process), which nothing on the host reaches. The forward watches the listening TCP sockets of
that namespace (``/proc/<holder>/net/tcp`` and ``tcp6``, state ``0A``) and, for each new port,
listens on the host's 127.0.0.1 on the same port (never another address: only the user's own
machine reaches it). A port the host already uses is not forwarded, and said to be taken. Each
connection accepted there is relayed by a small process that enters the namespace (``nsenter
--user --net``, as the session's commands do) with the accepted socket as its stdin and stdout,
and copies bytes both ways to the same port on the namespace's loopback. The job itself still
reaches nothing outside. Every relay runs in a process group of its own, killed with the
listeners when ``run`` is cancelled (the job stopped or ended, the session closed).
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
from anyio.abc import Process, TaskGroup

from totem_engine.command_env import command_environ

__all__ = ["LoopbackForward", "listening_ports"]

log = logging.getLogger(__name__)

POLL = 0.2  # seconds between two looks at the namespace's listening sockets
LISTEN = "0A"  # the TCP state /proc/net/tcp shows for a listening socket

# Run inside the namespace: fd 0 is the accepted connection; copy it to and from 127.0.0.1:PORT
# (or ::1 for a server listening on IPv6 only), each direction shut down when its side ends.
RELAY = """
import socket, sys, threading
port, host = int(sys.argv[1]), sys.argv[2]
outer = socket.socket(fileno=0)
outer.setblocking(True)
inner = socket.create_connection((host, port))
def copy(src, dst):
    try:
        while data := src.recv(65536):
            dst.sendall(data)
        dst.shutdown(socket.SHUT_WR)
    except OSError:
        pass
up = threading.Thread(target=copy, args=(outer, inner), daemon=True)
up.start()
copy(inner, outer)
up.join()
"""


def listening_ports(holder_pid: int) -> dict[int, str]:
    """The TCP ports listening in the namespace of ``holder_pid``, each with the loopback
    address to reach it by (``127.0.0.1``, or ``::1`` for one listening on IPv6 only)."""
    found: dict[int, str] = {}
    for table, host in (("tcp6", "::1"), ("tcp", "127.0.0.1")):  # IPv4 last: preferred when both
        try:
            lines = Path(f"/proc/{holder_pid}/net/{table}").read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) > 3 and fields[3] == LISTEN:
                found[int(fields[1].rsplit(":", 1)[1], 16)] = host
    return found


class LoopbackForward:
    """The forward of one job's ports, from the namespace of ``holder_pid`` to the host's
    127.0.0.1. ``forwarded`` and ``taken`` are the ports so far; ``changed`` is awaited after
    each new one (the job's event says it). Run ``run`` in a task; cancelling it ends it all."""

    def __init__(self, holder_pid: int, changed: Callable[[], Awaitable[None]]):
        self.holder_pid = holder_pid
        self.changed = changed
        self.forwarded: list[int] = []
        self.taken: list[int] = []
        self._listeners: list[socket.socket] = []
        self._relays: set[Process] = set()
        self._group: TaskGroup | None = None

    async def run(self) -> None:
        """Watch the namespace and forward each port as it opens, until cancelled."""
        try:
            async with anyio.create_task_group() as group:
                self._group = group
                while True:
                    for port, host in listening_ports(self.holder_pid).items():
                        if port not in self.forwarded and port not in self.taken:
                            await self._open(group, port, host)
                    await anyio.sleep(POLL)
        finally:
            with anyio.CancelScope(shield=True):
                await self._close_all()

    async def _open(self, group: TaskGroup, port: int, host: str) -> None:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            listener.bind(("127.0.0.1", port))  # the host's loopback only, never another address
            listener.listen()
        except OSError as exc:
            listener.close()
            if exc.errno != errno.EADDRINUSE:
                log.warning("could not forward port %d: %s", port, exc)
            self.taken.append(port)
        else:
            listener.setblocking(False)
            self._listeners.append(listener)
            self.forwarded.append(port)
            group.start_soon(self._serve, group, listener, port, host)
        await self.changed()

    async def _serve(self, group: TaskGroup, listener: socket.socket, port: int, host: str) -> None:
        # Plain sockets, not anyio's streams: a stream's transport would start reading the
        # connection here, and what it read would never reach the relay.
        while True:
            await anyio.wait_readable(listener)
            try:
                connection, _ = listener.accept()
            except BlockingIOError:
                continue
            group.start_soon(self._relay, connection, port, host)

    async def _relay(self, connection: socket.socket, port: int, host: str) -> None:
        with connection:
            try:
                process = await anyio.open_process(
                    ["nsenter", f"--user=/proc/{self.holder_pid}/ns/user", f"--net=/proc/{self.holder_pid}/ns/net",
                     "--preserve-credentials", "--", sys.executable, "-c", RELAY, str(port), host],
                    stdin=connection.fileno(), stdout=connection.fileno(), stderr=subprocess.DEVNULL, start_new_session=True,
                    env=command_environ(unasked=True),  # Totem's own process, with no key of the user's
                )
            except OSError as exc:
                log.warning("could not relay a connection to port %d: %s", port, exc)
                return
        # The relay holds the connection now; ours is closed.
        self._relays.add(process)
        try:
            await process.wait()
        finally:
            self._relays.discard(process)
            with anyio.CancelScope(shield=True):
                if process.returncode is None:  # cancelled: the job or the session ended
                    _kill(process)
                await process.aclose()

    async def _close_all(self) -> None:
        for listener in self._listeners:
            listener.close()
        self._listeners.clear()
        for process in list(self._relays):
            _kill(process)


def _kill(process: Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
