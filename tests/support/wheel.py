"""Totem as a user gets it: the wheel built from a clean copy of the checkout, installed into a
fresh venv outside it.

The copy leaves out what a build must not see (a stale ``build/`` would put packages into the
wheel that the package list leaves out). The fresh venv gets the wheel alone (``--no-deps``, no
network); its dependencies come from the checkout's venv through one ``.pth`` line naming that
venv's site-packages, which holds the dependencies and only the editable install's inert hook,
never the checkout: ``.pth`` files of a directory named by a ``.pth`` line are not run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NOT_SOURCE = (".git", ".venv", "build", "dist", "*.egg-info", "node_modules", "__pycache__", ".pytest_cache", ".hypothesis")


def build_wheel(into: Path, root: Path = ROOT) -> Path:
    """The wheel of ``root``, built from a clean copy of it in ``into``."""
    source = into / "source"
    shutil.copytree(root, source, ignore=shutil.ignore_patterns(*NOT_SOURCE), symlinks=True)
    # pip builds in an isolated environment with pyproject's build requirements (setuptools>=68;
    # the venv's own is older); pip's cache serves them after the first time.
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(into), str(source)],
        check=True, capture_output=True, text=True,
    )
    [wheel] = into.glob("totem_lsp-*.whl")
    return wheel


@dataclass(frozen=True)
class InstalledTotem:
    """A venv outside the checkout holding the wheel; ``totem`` is its console script."""

    venv: Path

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    @property
    def totem(self) -> Path:
        return self.venv / "bin" / "totem"


def install_wheel(wheel: Path, venv: Path) -> InstalledTotem:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    installed = InstalledTotem(venv)
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(installed.python), "install", "--no-deps", "--no-index", "-q", str(wheel)],
        check=True, capture_output=True, text=True,
    )
    site = subprocess.run(
        [str(installed.python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()
    Path(site, "checkout_dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    return installed


def outside_env(home: Path) -> dict[str, str]:
    """The environment of a user outside the checkout: their own HOME and XDG dirs, nothing of the
    checkout on PYTHONPATH."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(
        HOME=str(home), XDG_CONFIG_HOME=str(home / "config"), XDG_DATA_HOME=str(home / "data"),
        XDG_CACHE_HOME=str(home / "cache"), XDG_STATE_HOME=str(home / "state"), PYTHONUNBUFFERED="1",
    )
    return env
