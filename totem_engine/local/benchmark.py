"""A short benchmark of the installed ``llama-server``: how fast it reads a prompt and writes
tokens on this machine, measured after ``totem local setup`` and shown by ``totem local status``.

One request to llama-server's own ``POST /completion`` (not the OpenAI route: it reports the
server's ``timings``), https://github.com/ggml-org/llama.cpp/blob/master/tools/server/README.md:
the prompt of ``prompts/local_benchmark.txt`` (about 200 tokens) with the prompt cache off, and
``GENERATED`` tokens written whatever the model would end on (``ignore_eos``). The server's
``timings.prompt_per_second`` and ``predicted_per_second`` are the result, kept with the machine's
cores and load average in ``<local_dir>/benchmark.json``. A few seconds for the default model
on 2 cores; more while other work loads the machine, which is why the load is recorded.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import httpx

from totem_engine import json_in
from totem_engine.prompt_files import prompt

from .model import DEFAULT_CTX, InstalledModel, LocalPaths
from .server import LocalServerError, acquire_lease, release_lease, start

GENERATED = 32
TIMEOUT = 300.0


class BenchmarkError(Exception):
    """The benchmark could not be run or its answer read; worded for the user. ``server_ran``:
    False when the server itself could not be started (it crashed, or never answered)."""

    def __init__(self, message: str, *, server_ran: bool = True):
        super().__init__(message)
        self.server_ran = server_ran


@dataclass(frozen=True)
class Speed:
    """What one benchmark measured: tokens per second of prompt read and of tokens generated,
    how many of each, when (epoch seconds), and on what: the model id, the machine's cores and
    its 1-minute load average at the start (None where the system has none)."""

    prompt_per_second: float
    generated_per_second: float
    prompt_tokens: int
    generated_tokens: int
    measured_at: float
    model_id: str
    cores: int
    load: float | None

    def line(self) -> str:
        """``81 tokens/s of prompt, 22 generated (2026-12-01 22:40, 2 cores, load 0.4)``."""
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(self.measured_at))
        load = f", load {self.load:.1f}" if self.load is not None else ""
        cores = f"{self.cores} core" + ("s" if self.cores != 1 else "")
        return (
            f"{self.prompt_per_second:.0f} tokens/s of prompt, {self.generated_per_second:.1f} generated"
            f" ({when}, {cores}{load})"
        )


def measure(address: str, model_id: str, *, timeout: float = TIMEOUT) -> Speed:
    """Run the benchmark against the server at ``address`` (``http://127.0.0.1:PORT``).

    Raises BenchmarkError when the server does not answer or its answer has no timings."""
    body = {
        "prompt": prompt("local_benchmark.txt"),
        "n_predict": GENERATED,
        "ignore_eos": True,
        "cache_prompt": False,
        "temperature": 0,
    }
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    started = time.time()
    try:
        with httpx.Client(timeout=timeout, trust_env=False) as client:
            response = client.post(f"{address}/completion", json=body)
            response.raise_for_status()
            timings = json_in.loads(response.content, what="the benchmark's answer")["timings"]
        return Speed(
            prompt_per_second=float(timings["prompt_per_second"]),
            generated_per_second=float(timings["predicted_per_second"]),
            prompt_tokens=int(timings["prompt_n"]),
            generated_tokens=int(timings["predicted_n"]),
            measured_at=started,
            model_id=model_id,
            cores=os.cpu_count() or 1,
            load=load,
        )
    except httpx.HTTPError as exc:
        raise BenchmarkError(f"the server did not answer the benchmark: {exc}") from None
    except (ValueError, KeyError, TypeError):
        raise BenchmarkError("the server's answer to the benchmark has no timings") from None


def benchmark(root: Path, install: InstalledModel, *, port: int | None = None, ctx: int = DEFAULT_CTX) -> Speed:
    """Measure the installed server (started for it when none runs, and then stopped unless
    another Totem process uses it) and keep the result in ``<local_dir>/benchmark.json``.

    Raises BenchmarkError (the server could not be started, or the benchmark failed)."""
    acquire_lease(root)
    try:
        state, _started = start(root, install, port=port, ctx=ctx, owner=os.getpid())
        speed = measure(state.address, install.model_id)
    except LocalServerError as exc:
        raise BenchmarkError(str(exc), server_ran=False) from None
    finally:
        release_lease(root)
    path = LocalPaths(root).benchmark
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(asdict(speed), indent=2), encoding="utf-8")
    tmp.replace(path)
    return speed


def last_speed(root: Path) -> Speed | None:
    """The speed the last benchmark measured, if any."""
    try:
        return Speed(**json.loads(LocalPaths(root).benchmark.read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError):
        return None
