"""Tests on Totem's own local model (``make test-local``): the real ``totem`` against the
llama-server and model that ``totem local setup`` installed, at temperature 0.

They are not part of ``make test`` (pyproject's ``norecursedirs``): they take minutes on a small
machine and need the install. Each test still gets its own user dirs (tests/conftest.py) but
shares the one install through the ``local_dir`` config key, resolved here at import, before
that fixture points XDG_DATA_HOME elsewhere. The server is shared too: started on demand by the
first Totem process that needs it, its requests queue.

What the model did in each test (the events, or the chat as Neovim shows it) is written to
``$TOTEM_TEST_ARTIFACTS/local/<test>.log`` (default ``~/.cache/totem-test/artifacts``) and is
part of every failure message.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.conftest import Result
from totem_engine.config import load_config
from totem_engine.local.model import installed, local_dir_from

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "inventory"

# The install `totem local status` reports for the developer's own config (TOTEM_LOCAL_DIR
# overrides it), computed now: the isolation fixture has not changed XDG_DATA_HOME yet.
LOCAL_DIR = (
    Path(os.environ["TOTEM_LOCAL_DIR"]).expanduser().resolve()
    if os.environ.get("TOTEM_LOCAL_DIR")
    else local_dir_from(load_config(None).config)
)

# The README's main job (`make run`'s default PROMPT): the sample's failing test checks it.
TASK = (
    "Add the missing function low_stock(inventory, threshold) to report.py: it returns the names of"
    " the items with fewer than threshold units, sorted by name. The failing test in"
    " test_inventory.py checks it."
)

# Generous: about 80 tokens/s of prompt and 20 tokens/s of output on 2 cores, and the server
# may be busy with another client's requests first.
CHAT_TIMEOUT = 600
TASK_TIMEOUT = 1800


@pytest.fixture(scope="session")
def model_id() -> str:
    """The installed model's id; a missing install fails every test with what to run."""
    install = installed(LOCAL_DIR)
    assert install is not None, (
        f"no local model in {LOCAL_DIR}: run `make test-local` (it runs `totem local setup` first)"
        " or `totem local setup`; TOTEM_LOCAL_DIR points the tests at another install"
    )
    return install.model_id


@pytest.fixture
def home(tmp_path, model_id) -> Path:
    """The user dirs of the Totem processes a test starts: a config with no model (so the local
    one serves), the shared install and temperature 0, so a run repeats as far as the server
    allows."""
    home = tmp_path / "home"
    config = home / "config" / "totem" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(f"local_dir = {json.dumps(str(LOCAL_DIR))}\nlocal_temperature = 0\nforge = false\n")
    return home


@pytest.fixture
def agent_env(home, monkeypatch) -> dict[str, str]:
    """The environment of the Totem processes: the test's user dirs, and what `make run` gives
    the agent (the venv first on PATH, so `python -m pytest` has pytest; the venv's pytest plugins
    off, they are Totem's test tools and not the sample's)."""
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    return dict(
        os.environ,
        XDG_CONFIG_HOME=str(home / "config"),
        XDG_DATA_HOME=str(home / "data"),
        PYTHONUNBUFFERED="1",
    )


@pytest.fixture
def project(tmp_path) -> Path:
    """A fresh copy of the sample project: the agent changes the copy, never examples/."""
    copy = tmp_path / "inventory"
    shutil.copytree(EXAMPLE, copy, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache", ".totem"))
    return copy


def totem_run(env: dict[str, str], project: Path, prompt: str, *, timeout: float = TASK_TIMEOUT) -> Result:
    """``totem run --yes --json`` in ``project`` on the local model (no model is configured)."""
    proc = subprocess.run(
        [sys.executable, "-m", "totem_cli.main", "run", "--yes", "--json", "--cwd", str(project), prompt],
        capture_output=True, text=True, env=env, timeout=timeout, stdin=subprocess.DEVNULL, check=False,
    )
    return Result(proc.returncode, proc.stdout, proc.stderr)


def transcript(events: list[dict]) -> str:
    """A turn's events as lines a person reads: each step's text, each tool call and what came back."""
    lines: list[str] = []
    text: list[str] = []
    for event in events:
        kind = event["kind"]
        if kind == "textDelta":
            text.append(event["text"])
        elif kind == "stepDiscarded":
            text = []
            lines.append(f"(step {event['step']} discarded: {event['reason']})")
        elif kind == "stepEnd":
            usage = event["usage"]
            lines.append(f"--- step {event['step']} ({usage['inputTokens']} in, {usage['outputTokens']} out)")
            if "".join(text).strip():
                lines.append("".join(text).strip())
            text = []
        elif kind == "toolStart":
            lines.append(f"▶ {event['title']}  {json.dumps(event['input'])}")
        elif kind == "toolEnd":
            output = event["output"] if len(event["output"]) <= 1500 else event["output"][:1500] + " […]"
            lines.append(f"  {event['status']}: " + output.replace("\n", "\n    "))
        elif kind in ("notice", "error"):
            lines.append(f"! {kind}: {event['message']}")
        elif kind == "turnEnd":
            if "".join(text).strip():
                lines.append("".join(text).strip())  # an aborted or failed step's partial text
            lines.append(f"=== {event['stopReason']} ({event['model']})")
    return "\n".join(lines)


def save_log(request: pytest.FixtureRequest, text: str) -> str:
    """Keeps what the model did for the report; returns ``text`` for an assertion message."""
    folder = Path(os.environ.get("TOTEM_TEST_ARTIFACTS") or Path.home() / ".cache" / "totem-test" / "artifacts")
    path = folder / "local" / f"{request.node.name}.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return f"{text}\n(log: {path})"


def run_log(result: Result) -> str:
    events = []
    for line in result.stdout.splitlines():
        try:
            events.append(json.loads(line))
        except ValueError:
            pass  # a crash's output on stdout is in the log below
    return f"exit {result.code}\n{transcript(events)}\n--- stderr\n{result.stderr}"


def sample_tests(project: Path) -> subprocess.CompletedProcess:
    """The sample's own tests, run in the copy as its user would."""
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=project, capture_output=True, text=True, timeout=120, check=False,
        env=dict(os.environ, PYTEST_DISABLE_PLUGIN_AUTOLOAD="1"),
    )
