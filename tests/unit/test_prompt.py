"""The system prompt: fixed order, byte-identical for a day, prompt files present for every tool."""

from __future__ import annotations

import datetime
from importlib import resources
from pathlib import Path

import pytest

from totem_engine.jobs import Jobs
from totem_engine.terminals import Terminals
from totem_engine.prompt import environment, system_prompt
from totem_engine.prompt_files import prompt, tool_description
from totem_engine.tools.registry import builtin_tools, tool_specs

DAY = datetime.date(2024, 5, 6)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    return root


def test_build_mode_order_base_environment_instructions(project: Path):
    (project / "AGENTS.md").write_text("Run make check before finishing.\n")
    text = system_prompt(project, "build", DAY)
    base = prompt("base.txt")
    assert text.startswith(base)
    assert prompt("plan.txt") not in text
    env_at = text.index("<environment>")
    agents_at = text.index("Run make check before finishing.")
    assert len(base) <= env_at < agents_at
    assert '<instructions from="AGENTS.md">' in text
    assert text.endswith("</instructions>")


def test_plan_mode_adds_plan_between_base_and_environment(project: Path):
    text = system_prompt(project, "plan", DAY)
    base_at = text.index(prompt("base.txt"))
    plan_at = text.index(prompt("plan.txt"))
    env_at = text.index("<environment>")
    assert base_at < plan_at < env_at
    assert text.count(prompt("plan.txt")) == 1


def test_environment_has_date_directory_and_git(project: Path):
    text = system_prompt(project, "build", DAY)
    assert "Date: 2024-05-06" in text
    assert f"Working directory: {project}" in text
    assert "Git repository: no" in text
    (project / ".git").mkdir()
    assert "Git repository: yes" in system_prompt(project, "build", DAY)


def test_environment_block_shape(project: Path):
    lines = environment(project, DAY).splitlines()
    assert lines[0] == "<environment>" and lines[-1] == "</environment>"
    assert "Date: 2024-05-06" in lines


def test_no_agents_md_means_no_instructions_block(project: Path):
    text = system_prompt(project, "build", DAY)
    assert "<instructions" not in text
    assert text.endswith("</environment>")


def test_blank_agents_md_adds_nothing(project: Path):
    (project / "AGENTS.md").write_text("  \n\n")
    assert "<instructions" not in system_prompt(project, "build", DAY)


def test_nested_agents_md_is_not_in_the_system_prompt(project: Path):
    (project / "sub").mkdir()
    (project / "sub" / "AGENTS.md").write_text("NESTED ONLY\n")
    assert "NESTED ONLY" not in system_prompt(project, "build", DAY)


def test_byte_identical_for_the_same_day(project: Path):
    (project / "AGENTS.md").write_text("Be nice.\n")
    (project / ".git").mkdir()
    first = system_prompt(project, "build", DAY)
    second = system_prompt(project, "build", DAY)
    assert first.encode("utf-8") == second.encode("utf-8")
    assert system_prompt(project, "plan", DAY) == system_prompt(project, "plan", DAY)


def test_a_different_day_changes_only_the_date(project: Path):
    first = system_prompt(project, "build", DAY)
    later = system_prompt(project, "build", DAY + datetime.timedelta(days=1))
    assert first != later
    assert first.replace("2024-05-06", "2024-05-07") == later


def test_prompt_files_exist_for_every_builtin_tool():
    folder = resources.files("totem_prompts").joinpath("tools")
    tools = builtin_tools(jobs=Jobs(Path.cwd()), terminals=Terminals(Path.cwd()))
    assert "job" in tools and "terminal" in tools
    for name, tool in tools.items():
        assert folder.joinpath(f"{name}.txt").is_file(), name
        assert tool.description.strip(), name
        assert tool.description == tool_description(name)


def test_tool_specs_are_sorted_and_described():
    specs = tool_specs(builtin_tools())
    names = [spec.name for spec in specs]
    assert names == sorted(names)
    assert all(spec.description and spec.parameters["type"] == "object" for spec in specs)


def test_base_and_plan_prompts_exist_and_differ():
    assert prompt("base.txt").strip()
    assert prompt("plan.txt").strip()
    assert prompt("base.txt") != prompt("plan.txt")
    assert prompt("base.txt") == prompt("base.txt").rstrip()
