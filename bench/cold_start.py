"""Cold start: how long ``totem lsp`` takes to answer ``initialize``, against a bare pygls server.

For each run: spawn the server, send ``initialize`` over stdio (Content-Length framing), and time
from just before the spawn until the response has been read; then ``shutdown``, ``exit`` and reap.
The two servers alternate (one unmeasured warm-up each first, so .pyc files exist), RUNS runs
each, and the script prints each median and the ratio of medians totem/bare. The spec's bound is
1.1. Totem is started as editors start it: the console script ``totem lsp`` next to
``sys.executable``, with XDG dirs in a temp dir (so no user config or data is read).

    .venv/bin/python bench/cold_start.py [--runs N] [--code DIR]

``--code DIR`` starts the Totem in DIR (a worktree of an older commit, put on PYTHONPATH) through
the same console script, for a before/after figure on the same machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BARE_SERVER = 'from pygls.lsp.server import LanguageServer\nLanguageServer("bare", "0").start_io()\n'
TIMEOUT = 30.0  # seconds for any one server to answer


def frame(message: dict) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


def read_message(stream) -> dict:
    """One framed JSON-RPC message from a binary stream (blocking)."""
    length = None
    while True:
        line = stream.readline()
        if not line:
            raise EOFError("server closed its stdout")
        line = line.strip()
        if not line:
            break
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    if length is None:
        raise ValueError("message without Content-Length")
    return json.loads(stream.read(length))


def read_response(stream, msg_id: int) -> dict:
    """Messages until the response to ``msg_id`` (skipping notifications such as logMessage)."""
    while True:
        message = read_message(stream)
        if message.get("id") == msg_id and "method" not in message:
            return message


def initialize_params(root: Path) -> dict:
    return {
        "processId": os.getpid(),
        "rootUri": root.as_uri(),
        "workspaceFolders": [{"uri": root.as_uri(), "name": root.name}],
        "capabilities": {},
        "clientInfo": {"name": "cold-start-bench"},
    }


def one_run(cmd: list[str], env: dict[str, str], root: Path) -> tuple[float, float]:
    """Seconds from spawn to the ``initialize`` response, and the server's CPU seconds (user +
    system, whole life); the server is shut down and reaped."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=root)
    try:
        proc.stdin.write(frame({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize_params(root)}))
        proc.stdin.flush()
        response = read_response(proc.stdout, 1)
        elapsed = time.perf_counter() - start
        if "result" not in response:
            raise RuntimeError(f"{cmd}: initialize failed: {response}")
        proc.stdin.write(frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown", "params": None}))
        proc.stdin.flush()
        read_response(proc.stdout, 2)
        proc.stdin.write(frame({"jsonrpc": "2.0", "method": "exit", "params": None}))
        proc.stdin.flush()
        proc.stdin.close()
        deadline = time.monotonic() + TIMEOUT
        while True:  # os.wait4, not proc.wait: it also gives the child's CPU time
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                proc.returncode = os.waitstatus_to_exitcode(status)
                return elapsed, usage.ru_utime + usage.ru_stime
            if time.monotonic() > deadline:
                raise TimeoutError(f"{cmd}: did not exit after shutdown/exit")
            time.sleep(0.002)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="measured runs of each server (default 10)")
    parser.add_argument("--code", help="start the Totem in this directory (PYTHONPATH)")
    args = parser.parse_args()

    totem = Path(sys.executable).with_name("totem")
    if not totem.exists():
        print(f"no console script at {totem}: install the project into this venv (make install)", file=sys.stderr)
        return 2

    with tempfile.TemporaryDirectory(prefix="totem-cold-start-") as tmp:
        tmp_path = Path(tmp)
        bare_script = tmp_path / "bare_server.py"
        bare_script.write_text(BARE_SERVER)
        root = tmp_path / "project"
        root.mkdir()
        env = dict(os.environ)
        for name in ("CONFIG", "DATA", "CACHE", "STATE"):
            env[f"XDG_{name}_HOME"] = str(tmp_path / name.lower())
        env.pop("PYTHONPATH", None)  # what an editor starts: the installed package, nothing else
        if args.code:
            env["PYTHONPATH"] = args.code
        servers = {
            "bare": [sys.executable, str(bare_script)],
            "totem": [str(totem), "lsp"],
        }
        times: dict[str, list[float]] = {name: [] for name in servers}
        cpu: dict[str, list[float]] = {name: [] for name in servers}
        for name, cmd in servers.items():  # warm-up: bytecode caches, page cache
            one_run(cmd, env, root)
        for _ in range(args.runs):
            for name, cmd in servers.items():
                wall, used = one_run(cmd, env, root)
                times[name].append(wall)
                cpu[name].append(used)

    medians = {name: statistics.median(values) for name, values in times.items()}
    cpu_medians = {name: statistics.median(values) for name, values in cpu.items()}
    print(f"initialize answered, {args.runs} alternating runs each ({os.cpu_count()} CPUs, Python {sys.version.split()[0]}):")
    for name, values in times.items():
        runs = " ".join(f"{v * 1000:.0f}" for v in values)
        print(
            f"  {name:5}  median {medians[name] * 1000:6.1f} ms  min {min(values) * 1000:6.1f} ms"
            f"  (CPU median {cpu_medians[name] * 1000:6.1f} ms)  runs (ms): {runs}"
        )
    ratio = medians["totem"] / medians["bare"]
    cpu_ratio = cpu_medians["totem"] / cpu_medians["bare"]
    print(f"ratio totem/bare (medians): {ratio:.3f}  (spec: <= 1.1)")
    print(f"  CPU-time ratio (less sensitive to other load on the machine): {cpu_ratio:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
