"""Running one code-mode script: a separate Python process, served the API over a pipe.

The script is written to a scratch folder of its own, which is also its working folder, its
HOME and its TMPDIR, and run by host.py under ``python -I -S -u`` (isolated: no site-packages,
no PYTHONPATH, no user folder on its path; unbuffered, so its prints and its traceback arrive
in order), in a process group of its own. Its requests (one JSON object a line on its stdout)
are answered by ``serve`` in this process; what it prints (its stderr, where host.py sends its
stdout) is kept head and tail up to ``limit`` characters. Past ``timeout`` seconds, or when the
turn is aborted, the group is killed. The scratch folder is deleted afterwards. Where the
session's commands run in the sandbox, the process runs in bubblewrap's stricter profile too
(sandbox/bwrap.py ``script_argv``: everything read-only but the scratch folder, no network),
beneath host.py's audit hook.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import Process
from anyio.streams.text import TextReceiveStream

from totem_engine import json_in
from totem_engine.scratch import folder as scratch_folder
from totem_engine.tools.bash import DRAIN_SECONDS, HeadTail, kill_group, read_into

HOST = Path(__file__).with_name("host.py")
MAX_LINE = 50_000_000  # bytes of one API request: a write of a large file fits

Api = Callable[[str, dict[str, Any]], Awaitable[Any]]
Wrap = Callable[[list[str], Path], list[str]]


class ApiError(Exception):
    """An API call that failed: its message goes back to the script as a ``totem.TotemError``."""


@dataclass
class ScriptRun:
    output: str  # what it printed (head and tail), its traceback at the end when it failed
    exit_code: int | None  # None: killed at the time limit
    calls: int  # API requests served


async def run_script(
    script: str, api: Api, *, timeout: float, limit: int, project: Path | None = None, wrap: Wrap | None = None,
) -> ScriptRun:
    """Run ``script`` to its end or ``timeout`` seconds, answering its API requests with ``api``.
    ``project``: importable and readable by the script (``agent_mode``); None: neither. ``wrap``:
    how its process is launched (its argv, the scratch folder): the sandbox's script profile."""
    async with scratch_folder("script") as folder:
        scratch = str(folder)
        Path(scratch, "script.py").write_text(script, encoding="utf-8")
        env = {"PATH": os.environ.get("PATH", ""), "HOME": scratch, "TMPDIR": scratch, "LANG": "C.UTF-8", "PYTHONIOENCODING": "utf-8"}
        with anyio.CancelScope(shield=True):  # a cancel mid-spawn would leave a group nobody kills
            argv = [sys.executable, "-I", "-S", "-u", str(HOST), scratch, str(project or "")]
            process = await anyio.open_process(
                wrap(argv, Path(scratch)) if wrap else argv, cwd=scratch, env=env,
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
            )
        printed = HeadTail(limit)
        served = [0]
        try:
            async with anyio.create_task_group() as group:
                assert process.stderr is not None
                read_all = anyio.Event()
                group.start_soon(read_into, process.stderr, printed.add, read_all)
                group.start_soon(_serve, process, api, served)
                with anyio.move_on_after(timeout):
                    await process.wait()
                timed_out = process.returncode is None
                await kill_group(process)
                with anyio.move_on_after(DRAIN_SECONDS):  # its last lines: the traceback
                    await read_all.wait()
                group.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):  # an abort: the script must not outlive it
                await kill_group(process)
                await process.aclose()
        return ScriptRun(output=printed.text(), exit_code=None if timed_out else process.returncode, calls=served[0])


async def _serve(process: Process, api: Api, served: list[int]) -> None:
    """Answer each request line; a request that is not JSON is answered with an error, in order."""
    assert process.stdout is not None and process.stdin is not None
    buffer = ""
    async for chunk in TextReceiveStream(process.stdout):
        buffer += chunk
        if len(buffer) > MAX_LINE:
            await _answer(process, None, error=f"A request of more than {MAX_LINE} bytes was refused.")
            buffer = ""
        while "\n" in buffer:
            line, buffer = buffer.split("\n", 1)
            served[0] += 1
            try:
                request = json_in.loads(line, what="the request")
                method, params, request_id = request["method"], request.get("params") or {}, request.get("id")
            except (ValueError, KeyError, TypeError):
                await _answer(process, None, error="The request was not a JSON object with a method.")
                continue
            try:
                result = await api(method, params)
            except ApiError as exc:
                await _answer(process, request_id, error=str(exc))
            else:
                await _answer(process, request_id, result=result)


async def _answer(process: Process, request_id: Any, *, result: Any = None, error: str | None = None) -> None:
    answer = {"id": request_id, "error": error} if error is not None else {"id": request_id, "result": result}
    assert process.stdin is not None
    try:
        await process.stdin.send((json.dumps(answer) + "\n").encode())
    except (anyio.BrokenResourceError, anyio.ClosedResourceError):
        pass  # the script ended while its answer was on the way
