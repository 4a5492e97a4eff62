"""The wheel holds every package: pyproject.toml lists them by hand (prompts/ is mapped)."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_package_of_the_tree_is_listed_in_pyproject():
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    # Every folder holding Python, __init__.py or not: a folder without one (a namespace package,
    # as codemode/ was) is left out of the wheel as surely as an unlisted one.
    found = {
        ".".join(module.parent.relative_to(ROOT).parts)
        for top in ("totem_engine", "totem_lsp", "totem_cli", "totem_acp", "totem_mcp_server")
        for module in (ROOT / top).rglob("*.py")
        if "__pycache__" not in module.parts
    }
    assert found - listed == set()
    assert all((ROOT / name.replace(".", "/") / "__init__.py").is_file() for name in found)
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
