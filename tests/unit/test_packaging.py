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


def test_the_built_wheel_holds_the_built_in_agents(tmp_path):
    import subprocess
    import sys
    import zipfile

    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)],
        check=True, capture_output=True,
    )
    [wheel] = tmp_path.glob("totem_lsp-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert {"totem_prompts/agents/explore.md", "totem_prompts/agents/general.md"} <= set(names)
