"""The local ``llama-server`` process: start, stop, status, and the leases of Totem processes.

The server listens on loopback only (``127.0.0.1``), on ``local_port`` or a free port, with
``-c <local_ctx>``, ``--jinja``, one slot (``-np 1``) and ``--alias <model id>``, in a process
group of its own (so ``stop`` ends it and anything it spawned). ``start`` returns once
``GET /health`` answers 200 (llama-server answers 503 while it loads the model).

``<local_dir>/server.json`` records it: ``pid``, ``port``, ``base_url`` (with ``/v1``),
``model_id``, ``model``, ``ctx`` and ``owner``: the pid of the Totem process that started it on
demand, or null when a user started it with ``totem local start`` (then only ``totem local
stop`` ends it). Each Totem process using it holds a lease, ``<local_dir>/leases/<pid>``; when
the owner releases its lease and no live lease remains, it stops the server. A server whose
owner died without releasing is stopped by the next process that releases with no lease left.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import httpx

from .errors import LocalServerError
from .model import DEFAULT_CTX, InstalledModel, LocalPaths

LOOPBACK = "127.0.0.1"
READY_TIMEOUT = 120.0
STOP_TIMEOUT = 10.0


@dataclass(frozen=True)
class ServerState:
    pid: int
    port: int
    model_id: str
    model: str
    ctx: int
    owner: int | None
    started_at: float

    @property
    def base_url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}/v1"

    @property
    def address(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"


@dataclass(frozen=True)
class ServerStatus:
    state: ServerState | None
    alive: bool
    healthy: bool


# Servers this process started: their Popen, so stop() can reap them (no zombie left).
_children: dict[int, subprocess.Popen] = {}


def read_state(root: Path) -> ServerState | None:
    try:
        data = json.loads(LocalPaths(root).server_state.read_text(encoding="utf-8"))
        data.pop("base_url", None)
        return ServerState(**data)
    except (OSError, ValueError, TypeError):
        return None


def _write_state(root: Path, state: ServerState) -> None:
    path = LocalPaths(root).server_state
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({**asdict(state), "base_url": state.base_url}, indent=2), encoding="utf-8")
    tmp.replace(path)


def adopt(root: Path, state: ServerState) -> ServerState:
    """A server a run started on demand made the user's: kept until ``totem local stop``."""
    state = replace(state, owner=None)
    _write_state(root, state)
    return state

def pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    child = _children.get(pid)
    if child is not None:
        return child.poll() is None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return not _is_zombie(pid)


def _is_zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] == "Z"


def health(port: int, timeout: float = 1.0) -> bool:
    """Whether ``GET /health`` on the port answers 200."""
    try:
        with httpx.Client(timeout=timeout, trust_env=False) as client:
            return client.get(f"http://{LOOPBACK}:{port}/health").status_code == 200
    except httpx.HTTPError:
        return False


def status(root: Path) -> ServerStatus:
    state = read_state(root)
    if state is None:
        return ServerStatus(None, False, False)
    alive = pid_alive(state.pid)
    return ServerStatus(state, alive, alive and health(state.port))


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


def server_command(install: InstalledModel, port: int, ctx: int) -> list[str]:
    return [
        str(install.binary), "-m", str(install.model), "--host", LOOPBACK, "--port", str(port),
        "-c", str(ctx), "--jinja", "-np", "1", "--alias", install.model_id,
    ]  # fmt: skip


@contextlib.contextmanager
def _lock(root: Path) -> Iterator[None]:
    """Serialise starting and stopping between Totem processes (POSIX advisory lock)."""
    root.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:  # Windows: no lock; a race costs a second server at worst
        yield
        return
    with (root / "server.lock").open("a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def start(
    root: Path,
    install: InstalledModel,
    *,
    port: int | None = None,
    ctx: int = DEFAULT_CTX,
    owner: int | None = None,
    timeout: float = READY_TIMEOUT,
    command: Sequence[str] | None = None,
) -> tuple[ServerState, bool]:
    """The running server, started when none answers. Returns ``(state, started_now)``.

    ``owner``: the pid to record as having started it on demand (None: started by the user).
    ``command`` replaces the llama-server command line (tests)."""
    with _lock(root):
        current = status(root)
        if current.healthy and current.state is not None:
            return current.state, False
        if current.state is not None and current.alive:
            # Alive but not answering (still loading, or hung): give it the usual time.
            if _wait_ready(current.state.pid, current.state.port, timeout):
                return current.state, False
            _kill_group(current.state.pid)
        LocalPaths(root).server_state.unlink(missing_ok=True)
        chosen = port or free_port()
        if port and _port_taken(port):
            raise LocalServerError(f"port {port} (local_port) is taken by another program on {LOOPBACK}")
        cmd = list(command) if command is not None else server_command(install, chosen, ctx)
        log_path = LocalPaths(root).server_log
        with log_path.open("wb") as log:
            try:
                proc = subprocess.Popen(
                    cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, cwd=root
                )
            except OSError as exc:
                raise LocalServerError(f"cannot run {cmd[0]}: {exc.strerror or exc}; run `totem local setup`") from None
        _children[proc.pid] = proc
        state = ServerState(
            pid=proc.pid, port=chosen, model_id=install.model_id, model=str(install.model), ctx=ctx,
            owner=owner, started_at=time.time(),
        )  # fmt: skip
        if not _wait_ready(proc.pid, chosen, timeout):
            _kill_group(proc.pid)
            tail = _tail(log_path)
            why = "exited" if proc.poll() is not None else f"did not answer /health within {timeout:.0f} s"
            raise LocalServerError(f"llama-server {why}; the end of {log_path}:\n{tail}")
        _write_state(root, state)
        return state, True


def _wait_ready(pid: int, port: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not pid_alive(pid):
            return False
        if health(port, timeout=2.0):
            return True
        time.sleep(0.1)
    return False


def _port_taken(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((LOOPBACK, port))
        except OSError:
            return True
    return False


def _tail(path: Path, lines: int = 15) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "  (no log)"
    return "\n".join("  " + line for line in text.splitlines()[-lines:])


def _kill_group(pid: int, timeout: float = STOP_TIMEOUT) -> None:
    """SIGTERM the server's process group, then SIGKILL it after ``timeout``."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pid, sig)
        except (ProcessLookupError, PermissionError):
            try:
                os.kill(pid, sig)
            except (ProcessLookupError, PermissionError):
                pass
        deadline = time.monotonic() + (timeout if sig == signal.SIGTERM else 5.0)
        while time.monotonic() < deadline:
            if not pid_alive(pid):
                break
            time.sleep(0.05)
        else:
            continue
        break
    child = _children.pop(pid, None)
    if child is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.wait(timeout=1)


def stop(root: Path) -> bool:
    """Stop the recorded server. True when one was running."""
    with _lock(root):
        state = read_state(root)
        LocalPaths(root).server_state.unlink(missing_ok=True)
        if state is None or not pid_alive(state.pid):
            return False
        _kill_group(state.pid)
        return True


# -- leases ----------------------------------------------------------------------------------


def acquire_lease(root: Path, pid: int | None = None) -> None:
    leases = LocalPaths(root).leases
    leases.mkdir(parents=True, exist_ok=True)
    (leases / str(pid or os.getpid())).write_text(str(time.time()), encoding="utf-8")


def live_leases(root: Path) -> list[int]:
    """Pids holding a lease and still running; dead ones' leases are removed."""
    leases = LocalPaths(root).leases
    alive = []
    for path in leases.glob("*") if leases.is_dir() else ():
        if not path.name.isdigit():
            continue
        pid = int(path.name)
        if pid_alive(pid):
            alive.append(pid)
        else:
            path.unlink(missing_ok=True)
    return sorted(alive)


def release_lease(root: Path, pid: int | None = None) -> bool:
    """Drop this process's lease; stop the server when it was started on demand (by this
    process, or by one that has died) and no live lease remains. True when it was stopped."""
    me = pid or os.getpid()
    (LocalPaths(root).leases / str(me)).unlink(missing_ok=True)
    state = read_state(root)
    if state is None or state.owner is None:
        return False
    if state.owner != me and pid_alive(state.owner):
        return False
    if live_leases(root):
        return False
    return stop(root)

