"""Skills: front matter, discovery (built in, project, Total.js only), the skill tool, the prompt."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest

from totem_engine.permissions import default_decision
from totem_engine.prompt import system_prompt
from totem_engine.prompt_files import prompt
from totem_engine.skills import discover, parse_front_matter, split_front_matter
from totem_engine.tools.base import ToolContext, parse_arguments
from totem_engine.tools.registry import builtin_tools
from totem_engine.tools.skill import SkillInput, SkillTool
from totem_engine.vocab.tools import ToolError
from totem_engine.workspace.files import DiskWorkspace

DAY = datetime.date(2024, 5, 6)


def write_skill(root: Path, folder: str, front: str, body: str = "Body.") -> Path:
    path = root / ".totem" / "skills" / folder / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\n{front}\n---\n{body}\n", encoding="utf-8")
    return path


def ctx(root: Path) -> ToolContext:
    return ToolContext(root=root, workspace=DiskWorkspace(), session_id="s", call_id="c")


# Front matter


def test_front_matter_plain_quoted_and_folded_values():
    meta, body = split_front_matter(
        "---\n"
        "name: deploy\n"
        "description: \"Deploys: the app, to staging\"\n"
        "# a comment\n"
        "notes: first part\n"
        "  second part\n"
        "long: >\n"
        "  folded\n"
        "  text\n"
        "---\n"
        "# Title\nname: not front matter\n"
    )
    assert meta == {
        "name": "deploy",
        "description": "Deploys: the app, to staging",
        "notes": "first part second part",
        "long": "folded text",
    }
    assert body == "# Title\nname: not front matter\n"


def test_front_matter_literal_block_keeps_lines_and_single_quotes_unescape():
    meta = parse_front_matter(["keep: |", "  one", "  two", "q: 'it''s'"])
    assert meta == {"keep": "one\ntwo", "q": "it's"}


def test_text_without_front_matter_is_all_body():
    assert split_front_matter("no front matter\n---\n") == ({}, "no front matter\n---\n")
    assert split_front_matter("---\nname: x\n(no end)") == ({}, "---\nname: x\n(no end)")


# Discovery


def test_builtin_totaljs_skill_only_in_totaljs_projects(tmp_path: Path):
    names = [s.name for s in discover(tmp_path, totaljs=True)]
    assert "totaljs-conventions" in names
    assert "totaljs-conventions" not in [s.name for s in discover(tmp_path, totaljs=False)]
    skill = next(s for s in discover(tmp_path, totaljs=True) if s.name == "totaljs-conventions")
    assert skill.source == "built-in"
    assert "TJS010" in skill.body() and "---" not in skill.body().splitlines()[0]


def test_builtin_skill_folder_is_packaged_data():
    # pyproject's package-data must carry skills/*/*; the folder's SKILL.md is what discover reads.
    repo = Path(__file__).resolve().parents[2]
    text = (repo / "pyproject.toml").read_text(encoding="utf-8")
    assert '"skills/*/*"' in text
    assert (repo / "prompts/skills/totaljs-conventions/SKILL.md").is_file()


def test_project_skill_is_found_and_replaces_builtin_of_same_name(tmp_path: Path):
    write_skill(tmp_path, "ours", "name: totaljs-conventions\ndescription: Our own rules.", "Use our rules.")
    write_skill(tmp_path, "release", "name: release\ndescription: How we release.", "Tag, then push.")
    skills = {s.name: s for s in discover(tmp_path, totaljs=True)}
    assert skills["totaljs-conventions"].description == "Our own rules."
    assert skills["totaljs-conventions"].source == ".totem/skills"
    assert skills["totaljs-conventions"].body() == "Use our rules."
    assert skills["release"].body() == "Tag, then push."
    assert list(skills) == sorted(skills)


def test_project_skill_without_description_is_skipped_and_name_defaults_to_folder(tmp_path: Path):
    write_skill(tmp_path, "nodesc", "name: nodesc")
    write_skill(tmp_path, "folder-name", "description: Named by its folder.")
    names = [s.name for s in discover(tmp_path, totaljs=False)]
    assert "nodesc" not in names
    assert "folder-name" in names


def test_project_skill_linked_outside_the_project_is_skipped(tmp_path: Path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "SKILL.md").write_text("---\nname: leak\ndescription: x\n---\nsecret\n")
    root = tmp_path / "proj"
    (root / ".totem" / "skills" / "leak").mkdir(parents=True)
    (root / ".totem" / "skills" / "leak" / "SKILL.md").symlink_to(outside / "SKILL.md")
    assert "leak" not in [s.name for s in discover(root, totaljs=False)]


# The skill tool


async def test_skill_tool_loads_a_body_on_demand(tmp_path: Path):
    path = write_skill(tmp_path, "release", "name: release\ndescription: How we release.", "Old text.")
    tool = SkillTool(discover(tmp_path, totaljs=False))
    action = await tool.prepare(SkillInput(name="release"), ctx(tmp_path))
    assert action.permission == "skill" and action.patterns == ["release"] and not action.changes
    path.write_text("---\nname: release\ndescription: How we release.\n---\nNew text.\n")
    result = await action.apply(ctx(tmp_path))
    assert result.output == '<skill name="release">\nNew text.\n</skill>'
    assert not result.is_error


async def test_skill_tool_unknown_name_lists_the_available_ones(tmp_path: Path):
    tool = SkillTool(discover(tmp_path, totaljs=True))
    with pytest.raises(ToolError, match=r"no skill named 'totaljs-convention'.*Did you mean totaljs-conventions\?"):
        await tool.prepare(SkillInput(name="totaljs-convention"), ctx(tmp_path))


async def test_skill_tool_outside_totaljs_does_not_offer_the_totaljs_skill(tmp_path: Path):
    tool = SkillTool(discover(tmp_path, totaljs=False))
    with pytest.raises(ToolError):
        await tool.prepare(SkillInput(name="totaljs-conventions"), ctx(tmp_path))


async def test_skill_tool_without_a_list_discovers_at_the_call(tmp_path: Path):
    (tmp_path / "package.json").write_text('{"dependencies": {"total5": "latest"}}')
    tool = builtin_tools()["skill"]
    args = parse_arguments(tool.Input, '{"name": "totaljs-conventions"}')
    result = await (await tool.prepare(args, ctx(tmp_path))).apply(ctx(tmp_path))
    assert "TJS001" in result.output
    (tmp_path / "package.json").write_text('{"dependencies": {"express": "4"}}')
    with pytest.raises(ToolError):
        await tool.prepare(args, ctx(tmp_path))


def test_skill_tool_is_registered_read_only_and_allowed_by_default():
    assert "skill" in builtin_tools() and builtin_tools()["skill"].read_only
    assert default_decision("skill", "anything", changes=False).action == "allow"


# The system prompt


def test_totaljs_primer_sits_between_base_and_environment(tmp_path: Path):
    text = system_prompt(tmp_path, "build", DAY, totaljs=True)
    primer = prompt("totaljs.txt")
    assert text.index(prompt("base.txt")) < text.index(primer) < text.index("<environment>")
    assert "Java Swing" in primer and "NEWACTION(" in primer and "ROUTE(" in primer and "COMPONENT(" in primer
    assert primer not in system_prompt(tmp_path, "build", DAY)


def test_primer_comes_after_plan_in_plan_mode(tmp_path: Path):
    text = system_prompt(tmp_path, "plan", DAY, totaljs=True)
    assert text.index(prompt("plan.txt")) < text.index(prompt("totaljs.txt")) < text.index("<environment>")


def test_skills_are_listed_by_name_and_description_after_instructions(tmp_path: Path):
    (tmp_path / "AGENTS.md").write_text("Project rules.")
    write_skill(tmp_path, "release", "name: release\ndescription: How we release.", "SECRET BODY")
    text = system_prompt(tmp_path, "build", DAY, totaljs=True, skills=discover(tmp_path, totaljs=True))
    assert "- release: How we release." in text
    assert "- totaljs-conventions: " in text
    assert "SECRET BODY" not in text
    assert text.index("Project rules.") < text.index("<skills>")
    assert text.endswith("</skills>")
    assert "<skills>" not in system_prompt(tmp_path, "build", DAY)
