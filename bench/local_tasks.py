"""Local tasks: how many small coding tasks Totem's local model gets done, and how fast, beside aider,
through each of Totem's two routes for a model that cannot call tools (whole-file blocks, code mode).

Each task is a folder of ``bench/local_tasks/``: ``task.toml`` (``prompt``, what a user would
ask; ``check``, a shell command; ``files``, the files aider is given), ``project/`` (a tiny
Python project), ``check/`` (files copied over the project just before the check runs, so a
tool can neither see nor change the hidden tests) and ``solution/`` (a reference answer, used
only by ``--verify``). A task succeeds when its check exits 0 in the tool's copy of the project
after the tool has run, within the timeout.

Both tools talk to the same llama-server (Totem's local model, ``local/qwen2.5-coder-1.5b``),
which the script starts through ``totem_engine.local`` when none runs (and stops at the end when
it started it and no other Totem process uses it). For each task, each tool in a fresh copy of
``project/``:

- ``totem``: ``totem run --yes --json --cwd COPY --model local/qwen2.5-coder-1.5b PROMPT``, the
  console script next to ``sys.executable``, on the local model's default route;
- ``totem-script``: the same with a config saying ``code_mode = "always"`` (code mode: one
  ``import totem`` script per answer);
- aider (PyPI ``aider-chat``, installed on first use into its own venv under
  ``~/.cache/totem-bench/aider-venv``): whole-file edits, no git, no network (see
  ``aider_command``), the model's window given in a metadata file; it sends temperature 0 (its
  default for a model it does not know).

Tools and checks run with the bench's Python first on PATH (its venv has pytest; its pytest
plugins are switched off). Each run is
timed from spawn to exit; a run still going at the timeout has its process group killed and
fails. Requests are counted from each tool's own output: Totem's ``stepEnd`` and
``stepDiscarded`` events (one model request each), aider's ``Tokens:`` lines (one per request).
The script prints a row per run, then each tool's successes, median seconds and median requests
per task (over every task it ran) and the ratios of each Totem route to aider and of code mode to
the default route. Logs (the command, its output, the check's output) and ``results.json`` go to
a results directory printed at the end.

    .venv/bin/python bench/local_tasks.py [--tasks a,b] [--only totem|totem-script|aider] [--timeout S] [--keep]
    .venv/bin/python bench/local_tasks.py --verify    # each check fails untouched, passes solved

A task whose check passes on the untouched project is refused (not run, not counted).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

TASKS_DIR = Path(__file__).resolve().parent / "local_tasks"
MODEL_SPEC = "local/qwen2.5-coder-1.5b"
TOTEM = Path(sys.executable).parent / "totem"
AIDER_VENV = Path.home() / ".cache" / "totem-bench" / "aider-venv"
AIDER_PACKAGE = "aider-chat==0.86.2"
TOOLS = ("totem", "totem-script", "aider")
CODE_MODE_CONFIG = 'code_mode = "always"\n'  # the totem-script route's --config
DEFAULT_TIMEOUT = 180.0
CHECK_TIMEOUT = 60.0
KILL_GRACE = 10.0
COPY_IGNORE = shutil.ignore_patterns("__pycache__", ".pytest_cache")


@dataclass(frozen=True)
class Task:
    name: str
    prompt: str
    check: str
    files: list[str]

    @property
    def root(self) -> Path:
        return TASKS_DIR / self.name


@dataclass(frozen=True)
class Server:
    base_url: str
    model_id: str
    ctx: int


@dataclass(frozen=True)
class Aider:
    script: Path  # the console script in aider's venv
    metadata: Path  # the model's window, written for this run


@dataclass(frozen=True)
class Result:
    task: str
    tool: str
    ok: bool
    seconds: float
    status: str
    requests: int  # model requests the run made (see ``count_requests``)


# -- tasks and checks ------------------------------------------------------------------------


def load_tasks(names: list[str] | None) -> list[Task]:
    available = sorted(p.parent.name for p in TASKS_DIR.glob("*/task.toml"))
    unknown = sorted(set(names or ()) - set(available))
    if unknown:
        raise SystemExit(f"unknown tasks: {', '.join(unknown)} (there are: {', '.join(available)})")
    tasks = []
    for name in names or available:
        spec = tomllib.loads((TASKS_DIR / name / "task.toml").read_text(encoding="utf-8"))
        tasks.append(Task(name, spec["prompt"], spec["check"], list(spec["files"])))
    return tasks


def bench_env() -> dict[str, str]:
    """The environment of tools and checks: this Python's bin directory first on PATH, and its
    pytest plugins off (they are Totem's test tools, not the tasks'; their warnings would only
    distract a model that runs the tests), as `make run` does."""
    return {
        **os.environ,
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
    }


def fresh_copy(task: Task, dest: Path, solved: bool = False) -> Path:
    """``project/`` copied to ``dest`` (with ``solution/`` over it when ``solved``)."""
    shutil.copytree(task.root / "project", dest, ignore=COPY_IGNORE)
    if solved:
        shutil.copytree(task.root / "solution", dest, ignore=COPY_IGNORE, dirs_exist_ok=True)
    return dest


def check_passes(task: Task, copy: Path, log: Path | None = None) -> bool:
    """Put the hidden check files into ``copy``, run the check there; its output is appended to
    ``log`` when given."""
    shutil.copytree(task.root / "check", copy, ignore=COPY_IGNORE, dirs_exist_ok=True)
    try:
        done = subprocess.run(
            task.check, shell=True, check=False, cwd=copy, env=bench_env(), stdin=subprocess.DEVNULL,
            capture_output=True, text=True, timeout=CHECK_TIMEOUT,
        )  # fmt: skip
        code, output = done.returncode, done.stdout + done.stderr
    except subprocess.TimeoutExpired:
        code, output = None, f"(check still running after {CHECK_TIMEOUT:.0f} s)\n"
    if log is not None:
        with log.open("a", encoding="utf-8") as f:
            f.write(f"\n--- check: {task.check} (exit {code})\n{output}")
    return code == 0


def untouched_passes(task: Task) -> bool:
    with tempfile.TemporaryDirectory() as tmp:
        return check_passes(task, fresh_copy(task, Path(tmp) / "project"))


def solution_passes(task: Task) -> bool:
    with tempfile.TemporaryDirectory() as tmp:
        return check_passes(task, fresh_copy(task, Path(tmp) / "project", solved=True))


def verify(tasks: list[Task]) -> int:
    """Each check must fail on the untouched project and pass on the reference solution."""
    bad = 0
    for task in tasks:
        untouched, solved = untouched_passes(task), solution_passes(task)
        good = not untouched and solved
        bad += not good
        print(f"{task.name:<18} untouched {'passes' if untouched else 'fails':<6}  solution {'passes' if solved else 'fails':<6}  {'ok' if good else 'BROKEN'}")
    print(f"{len(tasks) - bad}/{len(tasks)} tasks ok")
    return 1 if bad else 0


def runnable(tasks: list[Task]) -> list[Task]:
    """The tasks whose check fails on the untouched project; the others are refused."""
    kept = []
    for task in tasks:
        if untouched_passes(task):
            print(f"refused: {task.name}: its check passes on the untouched project", file=sys.stderr)
        else:
            kept.append(task)
    return kept


# -- the model server and the tools ----------------------------------------------------------


@contextlib.contextmanager
def local_server() -> Iterator[Server]:
    """Totem's local llama-server, started when none runs (with a lease for this process, as a
    ``totem run`` takes one); released at the end, which stops it when this process started it
    and no other Totem process holds a lease."""
    from totem_engine.config import load_config
    from totem_engine.local import LocalServerError, ensure_local_provider
    from totem_engine.local.model import local_dir_from
    from totem_engine.local.server import read_state

    config = load_config(None).config
    try:
        found = ensure_local_provider(config, MODEL_SPEC)
    except LocalServerError as exc:
        raise SystemExit(f"cannot start the local model server: {exc}") from None
    if found is None:
        raise SystemExit(f"{MODEL_SPEC} is not available: run `totem local setup` (and have no [providers.local] of your own)")
    _, settings, model_id, lease = found
    try:
        state = read_state(local_dir_from(config))
        how = "started for this run" if state.owner == os.getpid() else "already running"
        print(f"llama-server {how}: {settings.base_url} (model {model_id}, context {state.ctx})", file=sys.stderr)
        yield Server(settings.base_url, model_id, state.ctx)
    finally:
        lease.release()


def ensure_aider() -> Path:
    """aider's console script, installed from PyPI into its own venv the first time."""
    aider = AIDER_VENV / "bin" / "aider"
    if not aider.exists():
        print(f"installing {AIDER_PACKAGE} into {AIDER_VENV} ...", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", str(AIDER_VENV)], check=True)
        subprocess.run([str(AIDER_VENV / "bin" / "python"), "-m", "pip", "install", "--quiet", AIDER_PACKAGE], check=True)
    return aider


def aider_version(aider: Path) -> str:
    done = subprocess.run([str(aider), "--version"], check=False, capture_output=True, text=True, env=aider_env())
    return done.stdout.strip()


def aider_env() -> dict[str, str]:
    """Use litellm's bundled price list instead of fetching one."""
    return {**bench_env(), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}


def write_aider_metadata(path: Path, server: Server) -> Path:
    """The model's window for aider; with it aider also skips downloading litellm's model list."""
    info = {
        "max_tokens": server.ctx, "max_input_tokens": server.ctx, "max_output_tokens": server.ctx,
        "input_cost_per_token": 0.0, "output_cost_per_token": 0.0, "litellm_provider": "openai", "mode": "chat",
    }  # fmt: skip
    path.write_text(json.dumps({f"openai/{server.model_id}": info}, indent=2), encoding="utf-8")
    return path


def totem_command(task: Task, copy: Path, config: Path | None = None) -> list[str]:
    """``config``: a config file applied over the user's (the code-mode route's)."""
    extra = ["--config", str(config)] if config is not None else []
    return [str(TOTEM), "run", "--yes", "--json", "--cwd", str(copy), "--model", MODEL_SPEC, *extra, task.prompt]


def count_requests(tool: str, log: Path) -> int:
    """The model requests a run made, read from its log: Totem's JSON events ``stepEnd`` (a
    request answered) and ``stepDiscarded`` (one failed or dropped), aider's ``Tokens: N sent``
    line after each request."""
    count = 0
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
        if tool == "aider":
            count += line.startswith("Tokens:")
            continue
        if line.startswith("{"):
            with contextlib.suppress(ValueError):
                count += json.loads(line).get("kind") in ("stepEnd", "stepDiscarded")
    return count


def aider_command(aider: Aider, task: Task, server: Server) -> list[str]:
    """Non-interactive aider on the task's files (run in the copy): whole-file edits, every
    question answered yes, no git, no repo map, nothing fetched (updates, release notes,
    analytics, URLs in the prompt, the model list), plain unstreamed output."""
    return [
        str(aider.script), "--edit-format", "whole", "--yes-always", "--no-git", "--no-check-update",
        "--analytics-disable", "--map-tokens", "0",
        "--model", f"openai/{server.model_id}", "--openai-api-base", server.base_url, "--openai-api-key", "none",
        "--model-metadata-file", str(aider.metadata), "--no-show-model-warnings", "--no-show-release-notes",
        "--no-detect-urls", "--no-auto-commits", "--no-dirty-commits", "--no-pretty", "--no-stream",
        "--message", task.prompt, *task.files,
    ]  # fmt: skip


def run_tool(cmd: list[str], cwd: Path, env: dict[str, str], log: Path, timeout: float) -> tuple[float, str]:
    """Run ``cmd`` in its own process group with its output in ``log``: (seconds, status), the
    status being ``exit N`` or ``timeout`` (then the group was killed)."""
    with log.open("w", encoding="utf-8") as out:
        out.write(f"$ {shlex.join(cmd)}\n\n")
        out.flush()
        start = time.monotonic()
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            status = f"exit {proc.wait(timeout=timeout)}"
        except subprocess.TimeoutExpired:
            status = "timeout"
        finally:
            if proc.poll() is None:  # the timeout, or the bench interrupted
                kill_group(proc)
        return time.monotonic() - start, status


def kill_group(proc: subprocess.Popen) -> None:
    """SIGTERM the process group, then SIGKILL it after KILL_GRACE seconds; reap the leader."""
    for sig, grace in ((signal.SIGTERM, KILL_GRACE), (signal.SIGKILL, None)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue


# -- the run ---------------------------------------------------------------------------------


def run_one(task: Task, tool: str, server: Server, aider: Aider | None, results: Path, args: argparse.Namespace) -> Result:
    """One tool on one task in a fresh copy: timed, then checked."""
    copy = fresh_copy(task, results / f"{task.name}.{tool}")
    log = results / f"{task.name}.{tool}.log"
    if tool == "aider":
        cmd, env = aider_command(aider, task, server), aider_env()
    else:
        config = results / "code-mode.toml" if tool == "totem-script" else None
        cmd, env = totem_command(task, copy, config), bench_env()
    seconds, status = run_tool(cmd, copy, env, log, args.timeout)
    ok = status != "timeout" and check_passes(task, copy, log)
    if not args.keep:
        shutil.rmtree(copy)
    return Result(task.name, tool, ok, round(seconds, 1), status, count_requests(tool, log))


def print_row(result: Result) -> None:
    print(
        f"{result.task:<18} {result.tool:<12} {'ok' if result.ok else 'FAIL':<5} {result.seconds:7.1f} s"
        f"  {result.requests:3d} req  {result.status}",
        flush=True,
    )


def summarise(results: list[Result], tools: list[str]) -> None:
    stats = {}
    print(f"\n{'tool':<12} {'success':<10} {'median s/task':<14} median requests/task")
    for tool in tools:
        mine = [r for r in results if r.tool == tool]
        successes = sum(r.ok for r in mine)
        seconds, requests = statistics.median(r.seconds for r in mine), statistics.median(r.requests for r in mine)
        stats[tool] = (successes, seconds, requests)
        print(f"{tool:<12} {f'{successes}/{len(mine)}':<10} {seconds:<14.1f} {requests:.1f}")
    for mine, other in (("totem", "aider"), ("totem-script", "aider"), ("totem-script", "totem")):
        if mine in stats and other in stats:
            print(f"{mine}/{other}: {_ratios(stats[mine], stats[other])}")


def _ratios(mine: tuple[int, float, float], other: tuple[int, float, float]) -> str:
    (ok, seconds, requests), (other_ok, other_seconds, other_requests) = mine, other
    success = f"{ok / other_ok:.2f}" if other_ok else "n/a (0 successes)"
    per_request = f"{requests / other_requests:.2f}" if other_requests else "n/a"
    return f"success {success}, median time {seconds / other_seconds:.2f}, median requests {per_request}"


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=lambda s: [n for n in s.split(",") if n], default=None, help="comma-separated task names (default: all)")
    parser.add_argument("--only", choices=TOOLS, default=None, help="run one tool only")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, help=f"seconds per run (default {DEFAULT_TIMEOUT:.0f})")
    parser.add_argument("--keep", action="store_true", help="keep each tool's copy of the project in the results directory")
    parser.add_argument("--verify", action="store_true", help="only check the tasks: each check fails untouched and passes on the solution")
    return parser.parse_args()


def main() -> int:
    args = parse_args()
    tasks = load_tasks(args.tasks)
    if args.verify:
        return verify(tasks)
    tasks = runnable(tasks)
    if not tasks:
        raise SystemExit("no task to run")
    tools = [args.only] if args.only else list(TOOLS)
    aider_script = ensure_aider() if "aider" in tools else None
    results_dir = Path(tempfile.mkdtemp(prefix=f"totem-local-bench-{time.strftime('%Y%m%d-%H%M%S')}-"))
    (results_dir / "code-mode.toml").write_text(CODE_MODE_CONFIG, encoding="utf-8")
    results: list[Result] = []
    with local_server() as server:
        aider = None
        if aider_script:
            aider = Aider(aider_script, write_aider_metadata(results_dir / "aider-model-metadata.json", server))
            print(aider_version(aider_script), file=sys.stderr)
        for task in tasks:
            for tool in tools:
                results.append(run_one(task, tool, server, aider, results_dir, args))
                print_row(results[-1])
    (results_dir / "results.json").write_text(json.dumps([asdict(r) for r in results], indent=2), encoding="utf-8")
    summarise(results, tools)
    print(f"\nlogs and results.json: {results_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
