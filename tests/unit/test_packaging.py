"""The wheel holds every package: pyproject.toml lists them by hand (prompts/ is mapped)."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_package_of_the_tree_is_listed_in_pyproject():
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for top in ("totem_engine", "totem_lsp", "totem_cli")
        for init in (ROOT / top).rglob("__init__.py")
    }
    assert found - listed == set()
    assert "totem_prompts" in listed
