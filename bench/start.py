"""A light start: ``totem --help``, one ``totem run`` text turn and ``totem sessions show``.

Three figures, each timed side by side in one run, alternating, after one unmeasured warm-up:

- ``totem --help`` (the console script next to ``sys.executable``) against ``python -c pass``
  of the same interpreter and venv (goal: at most 1.5x);
- one ``totem run`` text turn on the scripted loopback server (tests/support/model_server.py,
  in a thread of this script) with this tree's code against the baseline's (goal: at most 0.5x);
- ``totem sessions show`` of that tiny session (one prompt, one answer), this tree against the
  baseline, and against ``python -c pass`` (its cost should be the session's, not start-up's).

Each process's CPU time (user + system, from ``wait4``) is printed beside its wall time: on a
shared machine it is the steadier figure. Totem runs as ``python -m totem_cli.main`` with
PYTHONPATH at the code's directory (this repo, or ``--baseline DIR``, a worktree of an older
commit run with this venv's dependencies), XDG dirs in a temp dir. Bytecode is cached as in a
user's install (PYTHONDONTWRITEBYTECODE is dropped; PYTHONPYCACHEPREFIX puts the .pyc files in
the temp dir, so neither tree is written to): without it every start compiles the sources.

    .venv/bin/python bench/start.py [--runs N] [--baseline DIR]
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

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.support.model_server import ModelServer, text_reply  # noqa: E402


class Children:
    """CPU time of each reaped child, as the difference of RUSAGE_CHILDREN around it."""

    def __init__(self) -> None:
        self.last = self._now()

    @staticmethod
    def _now() -> float:
        import resource

        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return usage.ru_utime + usage.ru_stime

    def take(self) -> float:
        now = self._now()
        spent, self.last = now - self.last, now
        return spent


def run_one(command: list[str], env: dict[str, str], cwd: Path, children: Children) -> tuple[float, float, str]:
    children.take()
    start = time.perf_counter()
    proc = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, env=env, cwd=cwd, text=True, timeout=120)
    wall = time.perf_counter() - start
    cpu = children.take()
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return wall, cpu, proc.stdout


class Figure:
    def __init__(self, name: str) -> None:
        self.name, self.walls, self.cpus = name, [], []

    def add(self, wall: float, cpu: float) -> None:
        self.walls.append(wall)
        self.cpus.append(cpu)

    @property
    def wall(self) -> float:
        return statistics.median(self.walls)

    @property
    def cpu(self) -> float:
        return statistics.median(self.cpus)

    def line(self) -> str:
        return (f"  {self.name:<34} wall median {self.wall * 1000:6.0f} ms (min {min(self.walls) * 1000:4.0f})"
                f"   cpu median {self.cpu * 1000:6.0f} ms")


def ratio(name: str, ours: Figure, theirs: Figure, goal: str) -> None:
    print(f"  ratio {name}: wall {ours.wall / theirs.wall:.2f}, cpu {ours.cpu / theirs.cpu:.2f}  ({goal})")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--baseline", default="/work/wt/baseline", help="the older code's directory (PYTHONPATH)")
    args = parser.parse_args()
    baseline = Path(args.baseline).resolve()
    children = Children()
    with tempfile.TemporaryDirectory(prefix="totem-start-") as tmp, ModelServer() as server:
        home, project = Path(tmp) / "home", Path(tmp) / "project"
        home.mkdir()
        project.mkdir()
        (project / "README.md").write_text("A tiny project.\n")
        codes = {"this tree": REPO, "baseline": baseline}
        configs = {}
        for name, code in codes.items():
            # Forge (a Total.js project's MCP server) is off; a tree older than Forge has no such key.
            forge = "forge = false\n" if (code / "totem_engine" / "forge").is_dir() else ""
            configs[name] = home / f"totem-{len(configs)}.toml"
            configs[name].write_text(f'model = "sim/test-model"\n{forge}[providers.sim]\nkind = "openai"\n'
                                     f'base_url = "{server.base_url}"\napi_key = "sk-bench"\n')
        base_env = dict(os.environ, XDG_DATA_HOME=str(home / "data"), XDG_CONFIG_HOME=str(home / "config"),
                        XDG_CACHE_HOME=str(home / "cache"), XDG_STATE_HOME=str(home / "state"))
        base_env.pop("PYTHONPATH", None)
        # Bytecode as a user's install has it, written under the temp dir (not into either tree).
        base_env.pop("PYTHONDONTWRITEBYTECODE", None)
        base_env["PYTHONPYCACHEPREFIX"] = str(Path(tmp) / "pycache")
        # Each tree its own data dir: a newer tree's stores have a schema an older one refuses.
        envs = {name: dict(base_env, PYTHONPATH=str(code), XDG_DATA_HOME=str(home / f"data-{i}"))
                for i, (name, code) in enumerate(codes.items())}
        totem_script = str(Path(sys.executable).with_name("totem"))
        python_pass = [sys.executable, "-c", "pass"]
        help_command = [totem_script, "--help"]

        def run_command(name: str) -> list[str]:
            return [sys.executable, "-m", "totem_cli.main", "run", "--cwd", str(project), "--config", str(configs[name]),
                    "--json", "--yes", "say hello"]

        def text_turn(name: str) -> tuple[float, float, str]:
            server.enqueue(text_reply("Hello."))
            wall, cpu, out = run_one(run_command(name), envs[name], codes[name], children)
            if server.pending:
                raise SystemExit(f"{name}: the scripted reply was not used")
            session_id = json.loads(out.splitlines()[0])["sessionId"]
            return wall, cpu, session_id

        for name, code in codes.items():
            where = run_one([sys.executable, "-c", "import totem_engine; print(totem_engine.__file__)"], envs[name], code, children)
            print(f"{name}: {where[2].strip()}")

        # Warm-up: bytecode, page cache, the database; and one tiny session of each tree to show.
        run_one(python_pass, base_env, REPO, children)
        run_one(help_command, base_env, REPO, children)
        sessions = {name: text_turn(name)[2] for name in codes}

        figures = {key: Figure(key) for key in ("python -c pass", "totem --help", "text turn, this tree", "text turn, baseline",
                                                "sessions show, this tree", "sessions show, baseline")}
        for _ in range(args.runs):
            figures["python -c pass"].add(*run_one(python_pass, base_env, REPO, children)[:2])
            figures["totem --help"].add(*run_one(help_command, base_env, REPO, children)[:2])
            for name in codes:
                figures[f"text turn, {name}"].add(*text_turn(name)[:2])
            for name in codes:
                show = [sys.executable, "-m", "totem_cli.main", "sessions", "show", sessions[name]]
                figures[f"sessions show, {name}"].add(*run_one(show, envs[name], codes[name], children)[:2])

        print(f"{args.runs} runs each, alternating; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        for figure in figures.values():
            print(figure.line())
        ratio("--help / python -c pass", figures["totem --help"], figures["python -c pass"], "goal <= 1.5")
        ratio("text turn, this tree / baseline", figures["text turn, this tree"], figures["text turn, baseline"], "goal <= 0.5")
        ratio("sessions show, this tree / baseline", figures["sessions show, this tree"], figures["sessions show, baseline"], "lower is better")
        ratio("sessions show / python -c pass", figures["sessions show, this tree"], figures["python -c pass"], "start-up's share")


if __name__ == "__main__":
    main()
