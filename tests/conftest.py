"""Every test runs with its own user dirs: no test reads or writes the developer's config, keys,
sessions or caches, and no test reaches a system keyring. The real ruff of the dev extra, for the
tests of the project's own checks. Totem's wheel, built and installed outside the checkout once a
session (tests/support/wheel.py)."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def isolated_user_dirs(tmp_path_factory, monkeypatch):
    home = tmp_path_factory.mktemp("user")
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
        monkeypatch.setenv(name, str(home / name.lower()))
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.null.Keyring")


@pytest.fixture
def ruff_on_path(monkeypatch):
    """The real ruff of the dev extra on PATH (it sits beside the interpreter in the venv)."""
    folder = Path(sys.executable).parent
    assert (folder / "ruff").exists() or shutil.which("ruff"), "ruff is missing: pip install -e '.[dev]'"
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ.get('PATH', '')}")


@pytest.fixture(scope="session")
def built_wheel(tmp_path_factory) -> Path:
    """Totem's wheel, built once a session from a clean copy of the checkout."""
    from tests.support.wheel import build_wheel

    return build_wheel(tmp_path_factory.mktemp("wheel"))


@pytest.fixture(scope="session")
def installed_totem(built_wheel, tmp_path_factory):
    """The wheel installed into a fresh venv outside the checkout, once a session."""
    from tests.support.wheel import install_wheel

    return install_wheel(built_wheel, tmp_path_factory.mktemp("venv") / "venv")
