"""Agent definitions: the front matter, the four sources (last wins), an untrusted project's files."""

from __future__ import annotations

from pathlib import Path

import pytest

from totem_engine.agents import (
    AgentDefinition,
    discover_agents,
    folder,
    items,
    parse_agent,
    project_files,
    remove_agent,
    render_agent,
    save_agent,
)
from totem_engine.config import load_config
from totem_engine.trust import apply_trust, trust


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


REVIEWER = """---
name: reviewer
description: Reviews a change
tools: [read, grep]
max_steps: 80
model: sim/big-model
allow: ["bash git diff*"]
deny:
  - bash
  - "edit src/*"
---
You review code.
"""


def test_front_matter_lists_in_flow_block_and_comma_forms():
    assert items('[read, "grep"]') == ["read", "grep"]
    assert items("- bash\n- 'edit src/*'") == ["bash", "edit src/*"]
    assert items("read, glob") == ["read", "glob"]
    assert items("[]") == []


def test_a_definition_reads_every_key_and_its_rules_name_the_agent():
    definition = parse_agent(REVIEWER, source="project", path="x", fallback_name="file")
    assert definition.tools == ("read", "grep")
    assert definition.max_steps == 80 and definition.model == "sim/big-model"
    assert definition.prompt == "You review code."
    rules = [(r.source, r.permission, r.pattern, r.action) for r in definition.rules()]
    assert rules == [
        ("agent reviewer", "bash", "git diff*", "allow"),
        ("agent reviewer", "bash", "*", "deny"),
        ("agent reviewer", "edit", "src/*", "deny"),
    ]
    assert parse_agent(render_agent(definition), source="project", path="x", fallback_name="f") == definition


@pytest.mark.parametrize(
    "text, problem",
    [
        ("---\nname: a\n---\nbody", "no description"),
        ("---\ndescription: d\nmax_steps: many\n---\n", "not a number"),
        ("---\ndescription: d\nmodel: gpt\n---\n", "provider/model"),
        ("---\nname: a b\ndescription: d\n---\n", "not a word"),
    ],
)
def test_a_wrong_definition_says_what_is_wrong(text, problem):
    with pytest.raises(ValueError, match=problem):
        parse_agent(text, source="user", path="x", fallback_name="f")


def test_built_in_agents_explore_is_read_only_and_general_has_every_tool(tmp_path):
    found = discover_agents(tmp_path, trusted=True, max_steps=50).definitions
    assert found["explore"].source == "built-in"
    assert set(found["explore"].tools) <= {"read", "glob", "grep", "skill"}
    assert found["general"].tools is None and found["general"].prompt


def test_the_last_source_wins_by_name(tmp_path):
    root = tmp_path / "project"
    root.mkdir()
    write(folder("user", root) / "explore.md", "---\ndescription: user explore\n---\nu")
    write(folder("user", root) / "helper.md", "---\ndescription: user helper\n---\nu")
    write(folder("user-project", root) / "helper.md", "---\ndescription: this project's helper\n---\np")
    write(root / ".totem/agents/helper.md", "---\ndescription: the project's own helper\n---\nq")
    found = discover_agents(root, trusted=True, max_steps=50).definitions
    assert (found["explore"].source, found["explore"].description) == ("user", "user explore")
    assert (found["helper"].source, found["helper"].description) == ("project", "the project's own helper")
    assert folder("user-project", root) != folder("user-project", tmp_path)  # keyed by the root
    assert not folder("user-project", root).is_relative_to(root)


def test_an_untrusted_projects_agent_cannot_widen_and_says_so(tmp_path):
    write(tmp_path / ".totem/agents/reviewer.md", REVIEWER)
    untrusted = discover_agents(tmp_path, trusted=False, max_steps=30)
    reviewer = untrusted.get("reviewer")
    assert reviewer.allow == () and reviewer.model is None and reviewer.max_steps == 30
    assert reviewer.deny == ("bash", "edit src/*")  # tightening stays
    [notice] = untrusted.notices
    assert "allow 'bash git diff*'" in notice and "model sim/big-model" in notice and "max_steps 80" in notice
    trusted = discover_agents(tmp_path, trusted=True, max_steps=30).get("reviewer")
    assert trusted.allow == ("bash git diff*",) and trusted.max_steps == 80 and trusted.model == "sim/big-model"


def test_a_broken_file_is_skipped_with_a_notice(tmp_path):
    write(tmp_path / ".totem/agents/bad.md", "---\nname: bad\n---\nno description")
    found = discover_agents(tmp_path, trusted=True, max_steps=50)
    assert "bad" not in found.definitions
    assert any("bad.md was skipped: it has no description" in n for n in found.notices)


def test_save_and_remove(tmp_path):
    definition = AgentDefinition(name="mine", description="d", prompt="p", source="user-project", path="", tools=("read",))
    path = save_agent(tmp_path, definition)
    found = discover_agents(tmp_path, trusted=True, max_steps=50)
    assert found.get("mine").tools == ("read",) and found.get("mine").path == str(path)
    assert remove_agent(tmp_path, "mine", found) == path and not path.exists()
    with pytest.raises(ValueError, match="built in"):
        remove_agent(tmp_path, "explore", found)
    with pytest.raises(LookupError):
        remove_agent(tmp_path, "nobody", found)


async def test_a_project_with_agent_files_is_asked_for_trust_like_one_with_a_config(tmp_path):
    write(tmp_path / ".totem/agents/reviewer.md", REVIEWER)
    write(tmp_path / ".totem/commands/fix.md", "---\ndescription: fix\n---\nFix $ARGUMENTS")
    files = project_files(tmp_path, "agents") + project_files(tmp_path, "commands")
    assert files == [".totem/agents/reviewer.md", ".totem/commands/fix.md"]
    asked: list[list[str]] = []

    async def ask(root, reasons):
        asked.append(reasons)
        return False

    loaded = load_config(tmp_path)
    again, notice = await apply_trust(tmp_path, loaded, ask, files=files)
    assert asked == [files] and again is loaded and notice is None
    await trust(tmp_path)
    await apply_trust(tmp_path, loaded, ask, files=files)
    assert len(asked) == 1  # trusted: not asked again
