"""What a ``totem`` command loads: only what it runs (issue 23, "a light start"). ``--help`` and
``sessions show`` load neither the engine's config models nor pydantic; a run of a hosted model
loads no HTML conversion, no other provider's module and no local-model server code."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

HEAVY = ("bs4", "markdownify", "soupsieve", "pydantic", "httpx", "totem_engine.config", "totem_engine.runtime")


def loaded_after(code: str, env: dict[str, str] | None = None) -> set[str]:
    """The modules a fresh interpreter holds after ``code`` (which must not print)."""
    script = f"import json, sys\n{code}\nprint(json.dumps(sorted(sys.modules)), file=sys.__stdout__)\n"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True)
    return set(json.loads(done.stdout.splitlines()[-1]))


def heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY))


def test_help_loads_no_engine_and_no_pydantic():
    code = (
        "import contextlib, io\n"
        "from totem_cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "    main(['--help'])\n"
    )
    modules = loaded_after(code)
    assert "argparse" in modules  # the parser was built
    assert heavy(modules) == []
    assert not any(m.startswith("totem_engine") for m in modules)


def test_sessions_show_loads_the_store_not_the_runtime(tmp_path: Path):
    env = dict(os.environ, XDG_DATA_HOME=str(tmp_path / "data"), XDG_CONFIG_HOME=str(tmp_path / "config"),
               XDG_CACHE_HOME=str(tmp_path / "cache"), XDG_STATE_HOME=str(tmp_path / "state"))
    code = (
        "import contextlib, io\n"
        "from totem_cli.main import main\n"
        "with contextlib.redirect_stderr(io.StringIO()):\n"
        "    assert main(['sessions', 'show', 'no-such-session']) == 2\n"
    )
    modules = loaded_after(code, env)
    assert "totem_engine.store" in modules  # the session was looked for
    assert heavy(modules) == []


def test_a_run_of_a_hosted_model_loads_no_html_conversion_other_providers_or_local_server():
    modules = loaded_after("import totem_cli.run\nimport totem_engine.providers.openai")
    assert "totem_engine.tools.fetch" in modules  # the fetch tool is there; its converter is not
    unused = ("bs4", "markdownify", "soupsieve", "totem_engine.local.server", "totem_engine.local.build",
              "totem_engine.providers.anthropic", "totem_engine.providers.gemini", "totem_engine.providers.ollama",
              "totem_engine.providers.wire.anthropic", "totem_engine.providers.wire.gemini")
    assert sorted(m for m in unused if m in modules) == []
