"""Exercism: Totem beside aider on Exercism's Python exercises, with aider's benchmark protocol,
on the same local llama-server and model.

``../shared/exercism-python/`` holds the exercises (``--dir`` elsewhere). For each exercise of
the chosen subset, one agent at a time, each in a fresh copy holding the exercise's own files
(``exercism_protocol.py``: never ``.meta/``):

- ``totem``: ``totem run --yes --json`` on Totem's local model (``local/qwen2.5-coder-1.5b``,
  its default small-model route) with the protocol's first message; after a failed check, the
  same session gets the protocol's second message (``--session``). Inside a turn Totem may run
  the tests itself, as an agent does.
- ``totem-script``: the same with ``code_mode = "always"`` (not in the default ``--agents``).
- ``aider``: aider 0.86.2, ``whole`` edit format, driven through its Python API as its
  benchmark drives it (``exercism_aider.py``, in a venv this script makes on first use).

The check restores the test files and runs pytest (aider's benchmark runs ``pytest``). Each
try has ``--timeout`` seconds; a try still running is killed with its process group and fails.
Per exercise and agent it prints: pass after try 1 and 2, the agent's seconds (both tries; the
checks are not counted; Totem's include its process start, aider's do not), the model requests,
and the prompt tokens evaluated and tokens generated, read from llama-server's own log
(``print_timing``: prompt tokens served from its prefix cache are not evaluated, so not
counted). Then, per agent: pass@1, pass@2, the median seconds per exercise, the seconds per
solved exercise (all seconds over the exercises solved), the failures by class, and the ratios
Totem/aider. Logs, copies and ``results.json`` go to a results directory outside the repo.

    .venv/bin/python bench/exercism.py [--exercises N] [--seed S] [--all] [--agents totem,aider] [--timeout S]

Needs ``make install`` and ``totem local setup``. The default, 15 exercises with a minute a
try, takes under an hour on a 2-core machine (bench/README.md). Interrupted (Ctrl-C), it prints
the figures of the exercises every agent finished.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import exercism_protocol as protocol
from local_tasks import (
    MODEL_SPEC,
    TOTEM,
    Server,
    aider_env,
    bench_env,
    ensure_aider,
    local_server,
    run_tool,
    write_aider_metadata,
)

EXERCISES_DIR = Path(__file__).resolve().parents[2] / "shared" / "exercism-python"
AGENTS = ("totem", "totem-script", "aider")
DEFAULT_AGENTS = ("totem", "aider")
DEFAULT_EXERCISES = 15  # 16 took 56 minutes here (bench/README.md)
DEFAULT_SEED = 1
DEFAULT_TIMEOUT = 60.0  # seconds a try: a user's minute (an exercise takes both agents up to 4)
TEST_COMMAND = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider"]
CONFIGS = {
    "totem": 'forge = false\n',
    "totem-script": 'forge = false\ncode_mode = "always"\n',
}
DRIVER = Path(__file__).resolve().parent / "exercism_aider.py"
TIMING = re.compile(r"\| +(prompt eval|eval) time = +[\d.]+ ms / +(\d+) tokens")
FAILURE_CLASSES = ("never wrote the file", "broke the interface", "syntax error", "wrote it wrong", "out of steps or time", "a guard stopped it")


@dataclass
class Usage:
    """What llama-server did for one agent on one exercise, from its log."""

    requests: int = 0
    prompt_tokens: int = 0  # evaluated, the prefix cache's left out
    generated_tokens: int = 0


@dataclass
class Outcome:
    exercise: str
    agent: str
    outcomes: list[bool]  # the check after each try made
    seconds: float
    usage: Usage
    stops: list[str] = field(default_factory=list)  # each try's end: Totem's stopReasons, "timeout", "exit N"
    failure: str | None = None  # its class, when it failed

    @property
    def pass1(self) -> bool:
        return bool(self.outcomes) and self.outcomes[0]

    @property
    def pass2(self) -> bool:
        return any(self.outcomes)


class ServerLog:
    """llama-server's log, read from where the last ``take`` left it."""

    def __init__(self, path: Path) -> None:
        self.path, self.offset = path, path.stat().st_size

    def take(self) -> Usage:
        with self.path.open("rb") as f:
            f.seek(self.offset)
            data = f.read()
        self.offset += len(data)
        text = data.decode("utf-8", errors="replace")
        usage = Usage()
        for what, tokens in TIMING.findall(text):
            if what == "prompt eval":
                usage.requests += 1
                usage.prompt_tokens += int(tokens)
            else:
                usage.generated_tokens += int(tokens)
        return usage


# -- the agents ------------------------------------------------------------------------------


def run_totem(agent: str, exercise: protocol.Exercise, copy: Path, config: Path, log: Path, timeout: float) -> Outcome:
    """Up to two ``totem run``s in one session, a check after each."""
    outcomes, stops, seconds, session, message = [], [], 0.0, None, protocol.request(exercise)
    for attempt in range(protocol.TRIES):
        cmd = [str(TOTEM), "run", "--yes", "--json", "--cwd", str(copy), "--model", MODEL_SPEC, "--config", str(config)]
        cmd += ["--session", session] if session else []
        try_log = log.with_suffix(f".try{attempt + 1}.log")
        took, status = run_tool([*cmd, message], copy, bench_env(), try_log, timeout)
        seconds += took
        events = read_events(try_log)
        session = session or next((e["sessionId"] for e in events if "sessionId" in e), None)
        ended = next((e["stopReason"] for e in events if e.get("kind") == "turnEnd"), status)
        stops.append("timeout" if status == "timeout" else ended)  # killed at the timeout, it ends "aborted"
        result = protocol.check(exercise, copy, TEST_COMMAND)
        append_check(try_log, result)
        outcomes.append(result.passed)
        if result.passed or session is None:
            break
        message = protocol.feedback(result, exercise)
    return Outcome(exercise.name, agent, outcomes, round(seconds, 1), Usage(), stops)


def read_events(log: Path) -> list[dict]:
    events = []
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith("{"):
            try:
                events.append(json.loads(line))
            except ValueError:
                continue
    return events


def append_check(log: Path, result: protocol.Check) -> None:
    with log.open("a", encoding="utf-8") as f:
        f.write(f"\n--- check ({'passed' if result.passed else 'failed'})\n{result.output}")


def run_aider(aider_python: Path, metadata: Path, server: Server, exercise: protocol.Exercise, copy: Path, log: Path, timeout: float) -> Outcome:
    """The driver in aider's venv: both tries and their checks in one process."""
    cmd = [str(aider_python), str(DRIVER), str(exercise.root), str(copy), str(metadata), f"openai/{server.model_id}", json.dumps(TEST_COMMAND)]
    env = {**aider_env(), "OPENAI_API_BASE": server.base_url, "OPENAI_API_KEY": "none"}
    took, status = run_tool(cmd, copy, env, log, timeout * protocol.TRIES)
    lines = [line for line in log.read_text(encoding="utf-8", errors="replace").splitlines() if line.startswith('{"outcomes"')]
    if not lines:
        return Outcome(exercise.name, "aider", [False], round(took, 1), Usage(), [status])
    report = json.loads(lines[-1])  # both tries done; a driver slow to exit after it is no timeout
    return Outcome(exercise.name, "aider", report["outcomes"], round(sum(report["seconds"]), 1), Usage(), ["finished"])


# -- failures --------------------------------------------------------------------------------


def failure_class(outcome: Outcome, exercise: protocol.Exercise, copy: Path, last_check: str) -> str:
    """The class of a failed exercise, from its stops, its files and its last check's output."""
    if any(stop in ("timeout", "step_limit") for stop in outcome.stops):
        return "out of steps or time"
    if "guard" in outcome.stops:
        return "a guard stopped it"
    if all((copy / f).read_bytes() == (exercise.root / f).read_bytes() for f in exercise.solution):
        return "never wrote the file"
    if "SyntaxError" in last_check or "IndentationError" in last_check:
        return "syntax error"
    if re.search(r"ImportError|cannot import name|has no attribute|errors? during collection|NameError", last_check):
        return "broke the interface"
    return "wrote it wrong"


def last_check_output(agent: str, log: Path, copy: Path) -> str:
    if agent == "aider":
        lines = [line for line in log.read_text(encoding="utf-8", errors="replace").splitlines() if line.startswith('{"outcomes"')]
        return json.loads(lines[-1])["checks"][-1] if lines else ""
    tries = sorted(copy.parent.glob(f"{log.stem}.try*.log"))
    return tries[-1].read_text(encoding="utf-8", errors="replace").rpartition("\n--- check")[2] if tries else ""


# -- the run ---------------------------------------------------------------------------------


def run_one(agent: str, exercise: protocol.Exercise, results: Path, server: Server, server_log: ServerLog,
            aider_python: Path | None, metadata: Path, timeout: float) -> Outcome:  # fmt: skip
    """One agent on one exercise in a fresh copy: run, counted, and a failure classed."""
    copy = protocol.fresh_copy(exercise, results / f"{exercise.name}.{agent}")
    log = results / f"{exercise.name}.{agent}.log"
    server_log.take()
    if agent == "aider":
        outcome = run_aider(aider_python, metadata, server, exercise, copy, log, timeout)
    else:
        outcome = run_totem(agent, exercise, copy, results / f"{agent}.toml", log, timeout)
    outcome.usage = server_log.take()
    if not outcome.pass2:
        outcome.failure = failure_class(outcome, exercise, copy, last_check_output(agent, log, copy))
    return outcome


def choose(root: Path, count: int | None, seed: int) -> list[protocol.Exercise]:
    names = sorted(p.parent.parent.name for p in root.glob("*/.meta/config.json"))
    if not names:
        raise SystemExit(f"no exercises in {root}")
    if count is not None and count < len(names):
        names = sorted(random.Random(seed).sample(names, count))
    return [protocol.Exercise.load(root / name) for name in names]


def print_row(o: Outcome) -> None:
    marks = " ".join("pass" if p else "fail" for p in o.outcomes).ljust(9)
    print(
        f"{o.exercise:<24} {o.agent:<12} {marks} {o.seconds:7.1f} s {o.usage.requests:3d} req"
        f" {o.usage.prompt_tokens:6d} prompt {o.usage.generated_tokens:5d} gen  {' '.join(o.stops)}"
        f"{'  [' + o.failure + ']' if o.failure else ''}",
        flush=True,
    )


def summary(outcomes: list[Outcome], agents: list[str]) -> dict[str, dict]:
    figures = {}
    for agent in agents:
        mine = [o for o in outcomes if o.agent == agent]
        solved = sum(o.pass2 for o in mine)
        total = sum(o.seconds for o in mine)
        figures[agent] = {
            "exercises": len(mine),
            "pass@1": 100 * sum(o.pass1 for o in mine) / len(mine),
            "pass@2": 100 * solved / len(mine),
            "median s": statistics.median(o.seconds for o in mine),
            "s per solved": total / solved if solved else float("inf"),
            "requests": sum(o.usage.requests for o in mine),
            "prompt tokens": sum(o.usage.prompt_tokens for o in mine),
            "generated tokens": sum(o.usage.generated_tokens for o in mine),
            "failures": {c: sum(o.failure == c for o in mine) for c in FAILURE_CLASSES},
        }
    return figures


def print_summary(figures: dict[str, dict]) -> None:
    print(f"\n{'agent':<12} {'pass@1':>7} {'pass@2':>7} {'median s':>9} {'s/solved':>9} {'requests':>9} {'prompt tok':>11} {'gen tok':>8}")
    for agent, f in figures.items():
        print(
            f"{agent:<12} {f['pass@1']:6.1f}% {f['pass@2']:6.1f}% {f['median s']:9.1f} {f['s per solved']:9.1f}"
            f" {f['requests']:9d} {f['prompt tokens']:11d} {f['generated tokens']:8d}"
        )
    for agent, f in figures.items():
        classes = ", ".join(f"{c} {n}" for c, n in sorted(f["failures"].items(), key=lambda kv: -kv[1]) if n)
        print(f"{agent} failures: {classes or 'none'}")
    for mine in ("totem", "totem-script"):
        if mine in figures and "aider" in figures:
            m, a = figures[mine], figures["aider"]
            ratio = lambda x, y: f"{x / y:.2f}" if y else "n/a"
            print(
                f"{mine}/aider: pass@1 {ratio(m['pass@1'], a['pass@1'])}, pass@2 {ratio(m['pass@2'], a['pass@2'])},"
                f" median s {ratio(m['median s'], a['median s'])}, s per solved {ratio(m['s per solved'], a['s per solved'])}"
            )


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=EXERCISES_DIR, help=f"the exercises (default {EXERCISES_DIR})")
    parser.add_argument("--exercises", type=int, default=DEFAULT_EXERCISES, help=f"how many, picked by --seed (default {DEFAULT_EXERCISES})")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"the subset's seed (default {DEFAULT_SEED})")
    parser.add_argument("--all", action="store_true", help="every exercise (120)")
    parser.add_argument("--names", type=lambda s: [n for n in s.split(",") if n], default=None, help="these exercises, comma-separated")
    parser.add_argument("--agents", type=lambda s: s.split(","), default=list(DEFAULT_AGENTS), help=f"comma-separated, of {', '.join(AGENTS)}")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, help=f"seconds per try (default {DEFAULT_TIMEOUT:.0f})")
    args = parser.parse_args()
    if unknown := set(args.agents) - set(AGENTS):
        parser.error(f"unknown agents: {', '.join(sorted(unknown))}")
    return args


def main() -> int:
    args = parse_args()
    if args.names:
        exercises = [protocol.Exercise.load(args.dir / name) for name in args.names]
    else:
        exercises = choose(args.dir, None if args.all else args.exercises, args.seed)
    results = Path(tempfile.mkdtemp(prefix=f"totem-exercism-{time.strftime('%Y%m%d-%H%M%S')}-"))
    for agent, text in CONFIGS.items():
        (results / f"{agent}.toml").write_text(text, encoding="utf-8")
    aider_python = ensure_aider().parent / "python" if "aider" in args.agents else None
    outcomes: list[Outcome] = []
    with local_server() as server:
        from totem_engine.config import load_config
        from totem_engine.local.model import LocalPaths, local_dir_from

        server_log = ServerLog(LocalPaths(local_dir_from(load_config(None).config)).server_log)
        metadata = write_aider_metadata(results / "aider-model-metadata.json", server)
        print(f"{len(exercises)} exercises, agents {', '.join(args.agents)}, results in {results}", file=sys.stderr)
        try:
            for exercise in exercises:
                for agent in args.agents:
                    outcomes.append(run_one(agent, exercise, results, server, server_log, aider_python, metadata, args.timeout))
                    print_row(outcomes[-1])
        except KeyboardInterrupt:
            done = {o.exercise for o in outcomes if o.agent == args.agents[-1]}
            outcomes = [o for o in outcomes if o.exercise in done]
            print(f"\ninterrupted: the figures are of the {len(done)} exercises every agent finished", file=sys.stderr)
    figures = summary(outcomes, args.agents)
    print_summary(figures)
    rows = [{**asdict(o), "pass1": o.pass1, "pass2": o.pass2} for o in outcomes]
    (results / "results.json").write_text(json.dumps({"outcomes": rows, "figures": figures}, indent=2), encoding="utf-8")
    print(f"\nlogs, copies and results.json: {results}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
