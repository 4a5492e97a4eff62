"""The wheel holds every package and every data file: setup.py finds the packages (a folder of
Python without ``__init__.py`` is not found), pyproject's package-data names the data files."""

from __future__ import annotations

import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TOPS = ("totem_engine", "totem_lsp", "totem_cli", "totem_acp", "totem_mcp_server")


def source_files(top: str) -> list[Path]:
    return [p for p in (ROOT / top).rglob("*") if p.is_file() and "__pycache__" not in p.parts]


def test_every_folder_holding_python_is_a_package():
    # A folder without __init__.py (a namespace package, as codemode/ was) is not found, so it
    # would be left out of the wheel.
    folders = {p.parent for top in TOPS for p in (ROOT / top).rglob("*.py") if "__pycache__" not in p.parts}
    assert {f.relative_to(ROOT) for f in folders if not (f / "__init__.py").is_file()} == set()


def test_the_built_wheel_holds_every_module_prompt_and_data_file(built_wheel):
    names = set(zipfile.ZipFile(built_wheel).namelist())
    # Each package's modules and data (the providers' capabilities.json), under their own names.
    wanted = {p.relative_to(ROOT).as_posix() for top in TOPS for p in source_files(top)}
    # prompts/ is installed as totem_prompts: prompts, tool descriptions, skills, agents, commands.
    wanted |= {"totem_prompts/" + p.relative_to(ROOT / "prompts").as_posix() for p in source_files("prompts")}
    assert wanted - names == set()
    assert {"totem_prompts/agents/explore.md", "totem_prompts/skills/totaljs-conventions/SKILL.md",
            "totem_prompts/commands/init.md", "totem_engine/codemode/__init__.py",
            "totem_engine/providers/capabilities.json"} <= names
    # Nothing of the checkout that is not Totem: no tests, no editors, prompts only as totem_prompts.
    assert {n.split("/")[0] for n in names if ".dist-info/" not in n} == {*TOPS, "totem_prompts"}
