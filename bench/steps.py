"""Per-step cost in session length: 300 agent steps through the real ``totem run``.

A scripted loopback model server (tests/support/model_server.py, in a thread of this script)
answers each step with one small ``read`` tool call (a different file each step, so no guard
sees a stall), then a final text answer. The server stamps when each request arrives and when
its reply has been written, so the **step gap** of step k is the time from the end of reply k
to the arrival of request k+1: everything Totem does between two model calls (the tool, the
store, fitting the request, sending it), none of the server's own time.

Printed: the median step gap at steps 2-11 and at 290-299, pooled over LONG runs of the long
session, and their ratio (goal: at most 1.3);
the per-step overhead, the wall time of a 31-step run minus a 1-step run, / 30 (goal: at most
5 ms); and the wall time of a one-text-turn run. Runs alternate (1-step, 31-step), RUNS of each.
Beside them, the floor: a plain ``httpx.AsyncClient`` in this process making the same 31 requests
(a 9 KB body, the replies read line by line and JSON-decoded), its time a request and its own
gap, so the overhead can be read as httpx's share and Totem's.

    .venv/bin/python bench/steps.py [--steps N] [--long-runs LONG] [--runs R] [--code DIR] [--profile FILE]

``--code DIR`` runs the Totem found in DIR (a worktree of an older commit, put first on
PYTHONPATH) with this venv's dependencies, for a before/after figure on the same machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.support.model_server import ModelServer, _Handler, text_reply, tool_reply  # noqa: E402


class _TimedHandler(_Handler):
    def do_POST(self) -> None:
        arrived = time.perf_counter()
        super().do_POST()
        self.server_state.stamps.append((arrived, time.perf_counter()))


class TimedServer(ModelServer):
    handler = _TimedHandler

    def __init__(self) -> None:
        super().__init__()
        self.stamps: list[tuple[float, float]] = []


def run_totem(server: TimedServer, home: Path, project: Path, steps: int, code: str | None, profile: str | None = None) -> float:
    """Wall seconds of one ``totem run`` of ``steps`` model calls (``steps - 1`` reads, one answer)."""
    server.stamps.clear()
    server.requests.clear()
    for n in range(steps - 1):
        server.enqueue(tool_reply([("read", {"path": f"f{n % 1000:03}.txt"})]))
    server.enqueue(text_reply("Done."))
    config = home / "totem.toml"
    config.write_text(
        f'model = "sim/test-model"\nforge = false\nmax_steps = 0\n'
        f'[providers.sim]\nkind = "openai"\nbase_url = "{server.base_url}"\napi_key = "sk-bench"\n'
    )
    env = dict(os.environ, XDG_DATA_HOME=str(home / "data"), XDG_CONFIG_HOME=str(home / "config"),
               XDG_CACHE_HOME=str(home / "cache"), XDG_STATE_HOME=str(home / "state"))
    if code:
        env["PYTHONPATH"] = code
    profiling = ["-m", "cProfile", "-o", profile] if profile else []
    command = [sys.executable, *profiling, "-m", "totem_cli.main", "run", "--cwd", str(project), "--config", str(config),
               "--json", "--yes", "read the files"]
    start = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL, timeout=600, cwd=code or REPO)
    wall = time.perf_counter() - start
    if proc.returncode != 0 or server.pending or len(server.stamps) != steps:
        raise SystemExit(f"run of {steps} steps failed ({proc.returncode}, {len(server.stamps)} requests):\n{proc.stderr[-3000:]}")
    return wall


def raw_httpx(server: TimedServer, requests: int) -> tuple[float, float]:
    """Seconds a request and the median gap of a plain httpx client making ``requests`` requests
    of the long run's replies on ``server``."""

    async def run() -> float:
        body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "x" * 9000}]}
        async with httpx.AsyncClient() as client:
            start = time.perf_counter()
            for _ in range(requests):
                async with client.stream("POST", f"{server.base_url}/chat/completions", json=body) as response:
                    async for line in response.aiter_lines():
                        if line.startswith("data: ") and line != "data: [DONE]":
                            json.loads(line[6:])
            return (time.perf_counter() - start) / requests

    server.stamps.clear()
    for n in range(requests):
        server.enqueue(tool_reply([("read", {"path": f"f{n:03}.txt"})]))
    per_request = asyncio.run(run())
    return per_request, statistics.median(gaps(server.stamps))


def gaps(stamps: list[tuple[float, float]]) -> list[float]:
    """gaps[k-1]: from the end of reply k to the arrival of request k+1 (steps from 1)."""
    return [stamps[k][0] - stamps[k - 1][1] for k in range(1, len(stamps))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--runs", type=int, default=7, help="runs of the 1-step and 31-step sessions")
    parser.add_argument("--long-runs", type=int, default=3, help="runs of the long session (gaps pooled)")
    parser.add_argument("--code", help="run the Totem in this directory (PYTHONPATH)")
    parser.add_argument("--profile", help="write a cProfile of the long run to this file")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="totem-steps-") as tmp, TimedServer() as server:
        home, project = Path(tmp) / "home", Path(tmp) / "project"
        home.mkdir()
        project.mkdir()
        for n in range(1000):
            (project / f"f{n:03}.txt").write_text("".join(f"line {i} of file {n}\n" for i in range(10)))
        if args.code:
            where = subprocess.run([sys.executable, "-c", "import totem_engine; print(totem_engine.__file__)"],
                                   env=dict(os.environ, PYTHONPATH=args.code), capture_output=True, text=True, cwd=args.code)
            print(f"code: {where.stdout.strip()}")
        run_totem(server, home, project, 2, args.code)  # warm-up: bytecode, page cache, the database
        early_gaps, late_gaps, walls = [], [], []
        for _ in range(args.long_runs):
            walls.append(run_totem(server, home, project, args.steps, args.code, args.profile))
            step_gaps = gaps(server.stamps)
            early_gaps += step_gaps[1:11]  # steps 2-11
            late_gaps += step_gaps[-11:-1]  # steps n-10 .. n-1
        early, late = statistics.median(early_gaps), statistics.median(late_gaps)
        print(f"{args.steps}-step run: {statistics.median(walls):.2f} s wall (median of {args.long_runs})")
        print(f"step gap, steps 2-11: median {early * 1000:.1f} ms (min {min(early_gaps) * 1000:.1f})")
        print(f"step gap, steps {args.steps - 10}-{args.steps - 1}: median {late * 1000:.1f} ms "
              f"(min {min(late_gaps) * 1000:.1f})")
        print(f"ratio late / early: {late / early:.2f} of medians, {min(late_gaps) / min(early_gaps):.2f} of minimums  (goal <= 1.3)")

        ones, thirties, texts = [], [], []
        for _ in range(args.runs):
            ones.append(run_totem(server, home, project, 1, args.code))
            thirties.append(run_totem(server, home, project, 31, args.code))
        texts = ones  # a 1-step run is one text turn
        floors = [raw_httpx(server, 31) for _ in range(args.runs)]
        overhead = (statistics.median(thirties) - statistics.median(ones)) / 30
        overhead_min = (min(thirties) - min(ones)) / 30
        print(f"one text turn: median {statistics.median(texts) * 1000:.0f} ms (min {min(texts) * 1000:.0f}, {args.runs} runs)")
        print(f"31-step run: median {statistics.median(thirties) * 1000:.0f} ms")
        print(f"31-step run: min {min(thirties) * 1000:.0f} ms")
        print(f"per-step overhead (31-step - 1-step) / 30: {overhead * 1000:.1f} ms of medians, "
              f"{overhead_min * 1000:.1f} ms of minimums  (goal <= 5 ms)")
        per_request = statistics.median(f[0] for f in floors)
        print(f"floor, plain httpx on the same server: {per_request * 1000:.1f} ms a request, gap "
              f"{statistics.median(f[1] for f in floors) * 1000:.1f} ms (medians of {args.runs}); "
              f"per-step overhead / floor: {overhead / per_request:.2f}")


if __name__ == "__main__":
    main()
