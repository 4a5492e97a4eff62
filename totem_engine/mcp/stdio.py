"""A stdio server's process and its JSON-RPC lines: our own transport for ``mcp.ClientSession``.

The MCP stdio transport (https://modelcontextprotocol.io/specification/2025-11-25/basic/transports#stdio)
is one JSON-RPC message per line on the server's stdin and stdout. The SDK's ``stdio_client``
hands every line that is not a message to the session as an error; real servers print banners
("Server starting...") and blank lines, so here such a line is skipped and logged. The process
starts in the project root in a session (and so a process group) of its own, with a small
environment (``SAFE_ENV`` plus the spec's ``env``); its stderr is read as it comes and its last
lines kept (``stderr_tail``), so a server that dies can say why; ``exited`` is set when it exits,
whoever notices first. Stopping closes its stdin, gives it ``STDIN_GRACE`` seconds to leave, then
kills its whole group (tools/bash.py ``kill_group``), so nothing it started is left behind.

``StdioProcess.streams()`` is an async context manager giving the session's two memory streams;
enter and leave it in one task (the connection's, connection.py).
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
from collections import deque
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import Process

from totem_engine.tools.bash import kill_group

log = logging.getLogger(__name__)

# What a server gets of Totem's environment (as the SDK's stdio_client gives, plus the locale
# and the temporary folder): never API keys or tokens the user exported for something else.
SAFE_ENV = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR")
STDIN_GRACE = 0.5  # seconds a server has to exit by itself after its stdin closes
TAIL_LINES = 20  # of stderr, kept for the message when it dies
_POLL = 0.05  # seconds between looks at whether it exited (process.wait() also waits for the pipes)


class SpawnFailed(Exception):
    """The command could not be started at all (not found, not executable)."""


class StdioProcess:
    """One stdio server's process. ``command``/``args``/``env``: the spec's; ``cwd``: the project."""

    def __init__(self, name: str, command: str, args: tuple[str, ...], env: dict[str, str], cwd: Path):
        self.name = name
        self.argv = [command, *args]
        self.env = {k: v for k, v in os.environ.items() if k in SAFE_ENV} | env
        self.cwd = cwd
        self.process: Process | None = None
        self.stderr_tail: deque[str] = deque(maxlen=TAIL_LINES)
        self.exited = anyio.Event()

    @property
    def exit_code(self) -> int | None:
        return self.process.returncode if self.process is not None else None

    def describe_exit(self) -> str:
        """``exited with code 3; its stderr ended with: ...`` (what is known of it so far)."""
        code = self.exit_code
        said = "exited" if code is None else f"exited with code {code}" if code >= 0 else f"was killed by signal {-code}"
        tail = "\n".join(self.stderr_tail).strip()
        return f"{said}; its stderr ended with:\n{tail}" if tail else f"{said} (nothing on its stderr)"

    @contextlib.asynccontextmanager
    async def streams(self) -> AsyncIterator[tuple[Any, Any]]:
        """The process started, and ``(read_stream, write_stream)`` for ``ClientSession``; the
        process stopped when the block ends. Raises SpawnFailed."""
        from mcp.shared.message import SessionMessage

        try:
            with anyio.CancelScope(shield=True):  # a cancel mid-spawn would leave a group nobody kills
                self.process = await anyio.open_process(
                    self.argv, cwd=self.cwd, env=self.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE, start_new_session=True,
                )
        except OSError as exc:
            raise SpawnFailed(f"{self.argv[0]}: {exc.strerror or exc}") from None
        process = self.process
        to_session, from_server = anyio.create_memory_object_stream[Any](0)
        to_server, from_session = anyio.create_memory_object_stream[SessionMessage](0)
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(self._read_stdout, process, to_session, SessionMessage)
                group.start_soon(self._write_stdin, process, from_session, to_session)
                group.start_soon(self._read_stderr, process)
                group.start_soon(self._watch, process)
                try:
                    yield from_server, to_server
                finally:
                    with anyio.CancelScope(shield=True):
                        await self._stop(process)
                    group.cancel_scope.cancel()
        finally:
            for stream in (to_session, from_server, to_server, from_session):
                stream.close()

    async def _read_stdout(self, process: Process, to_session: Any, message_type: type) -> None:
        import mcp_types

        assert process.stdout is not None
        buffer = b""
        async with to_session:
            try:
                async for chunk in process.stdout:
                    buffer += chunk
                    *lines, buffer = buffer.split(b"\n")
                    for raw in lines:
                        line = raw.decode("utf-8", errors="replace").strip()
                        if not line:
                            continue
                        try:
                            message = mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                        except ValueError:
                            log.info("MCP server %s: skipped a stdout line that is not JSON-RPC: %.200s", self.name, line)
                            continue
                        await to_session.send(message_type(message))
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
                pass  # the session is gone, or the pipe: the session sees the stream end

    async def _write_stdin(self, process: Process, from_session: Any, to_session: Any) -> None:
        assert process.stdin is not None
        try:
            async with from_session:
                async for message in from_session:
                    line = message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                    await process.stdin.send(line.encode("utf-8"))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await to_session.aclose()  # it stopped reading: a request must not wait for its answer

    async def _read_stderr(self, process: Process) -> None:
        assert process.stderr is not None
        pending = b""
        try:
            async for chunk in process.stderr:
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for raw in lines:
                    line = raw.decode("utf-8", errors="replace").rstrip()
                    self.stderr_tail.append(line)
                    log.debug("MCP server %s stderr: %s", self.name, line)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
            pass
        if pending:
            self.stderr_tail.append(pending.decode("utf-8", errors="replace").rstrip())

    async def _watch(self, process: Process) -> None:
        while process.returncode is None:
            await anyio.sleep(_POLL)
        self.exited.set()

    async def _stop(self, process: Process) -> None:
        """Stdin closed, a moment to leave, then the whole group killed (also what it started)."""
        assert process.stdin is not None
        with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await process.stdin.aclose()
        with anyio.move_on_after(STDIN_GRACE):
            while process.returncode is None:
                await anyio.sleep(_POLL)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            await kill_group(process)
        self.exited.set()
        with contextlib.suppress(OSError):
            await process.aclose()
