"""Slash commands: the files, their expansion, and what is sent as it is."""

from __future__ import annotations

from pathlib import Path

import platformdirs

from totem_engine.commands import Command, discover_commands, expand, prepare


def command(prompt: str) -> Command:
    return Command(name="fix", description="d", prompt=prompt, source="project", path="x")


def test_arguments_and_words_are_filled_in():
    assert expand(command("Fix $ARGUMENTS now."), "the login bug") == "Fix the login bug now."
    assert expand(command("Move $1 to $2 ($3)."), "a.py b.py") == "Move a.py to b.py ()."
    assert expand(command("Review the diff."), "carefully") == "Review the diff.\n\ncarefully"
    assert expand(command("Review the diff."), "") == "Review the diff."


def test_a_command_is_expanded_and_anything_else_is_sent_as_typed():
    commands = {"fix": command("Fix $ARGUMENTS.")}
    fixed = prepare("/fix the bug", commands)
    assert (fixed.typed, fixed.text, fixed.command) == ("/fix the bug", "Fix the bug.", "fix")
    for typed in ("/nothing here", "/", "/etc/passwd is odd", "plain text", "a /fix inside"):
        kept = prepare(typed, commands)
        assert kept.text == typed and kept.command is None and kept.action is None
    assert prepare("/undo", commands).action == "undo"


def test_built_in_user_and_project_commands_the_project_wins(tmp_path):
    user = Path(platformdirs.user_config_dir("totem")) / "commands"
    user.mkdir(parents=True)
    (user / "fix.md").write_text("---\ndescription: user fix\n---\nUser: $ARGUMENTS")
    (user / "mine.md").write_text("---\ndescription: mine\nagent: explore\n---\nMine")
    project = tmp_path / ".totem" / "commands"
    project.mkdir(parents=True)
    (project / "fix.md").write_text("---\ndescription: project fix\nmodel: sim/big\n---\nProject: $ARGUMENTS")
    (project / "bad.md").write_text("no front matter")
    found, notices = discover_commands(tmp_path, trusted=False)
    assert found["init"].source == "built-in" and "AGENTS.md" in found["init"].prompt
    assert (found["fix"].source, found["fix"].description, found["fix"].model) == ("project", "project fix", None)
    assert found["mine"].agent == "explore"
    assert "bad" not in found
    assert any("bad.md was skipped" in n for n in notices)
    assert any("model sim/big was ignored" in n for n in notices)
    trusted, _ = discover_commands(tmp_path, trusted=True)
    assert trusted["fix"].model == "sim/big"


def test_what_the_arguments_hold_is_not_expanded_again_and_prices_stay():
    fix = command("Find and fix $ARGUMENTS. Start with $1. Then $2.")
    assert expand(fix, "the $1 variable in $HOME") == "Find and fix the $1 variable in $HOME. Start with the. Then $1."
    assert expand(command("It costs $5.00, not $12; see $1."), "a.py") == "It costs $5.00, not $12; see a.py."


def test_no_file_replaces_undo_or_compact_and_a_project_link_out_is_skipped(tmp_path):
    project = tmp_path / "project"
    folder = project / ".totem" / "commands"
    folder.mkdir(parents=True)
    for name in ("undo", "compact"):
        (folder / f"{name}.md").write_text(f"---\ndescription: my {name}\n---\nDo something else $ARGUMENTS")
    outside = tmp_path / "secret.md"
    outside.write_text("---\ndescription: leak\n---\nSECRET")
    (folder / "leak.md").symlink_to(outside)
    found, notices = discover_commands(project, trusted=True)
    assert "undo" not in found and "compact" not in found and "leak" not in found
    assert any("/undo is built in" in n for n in notices) and any("leak.md points outside the project" in n for n in notices)
    assert prepare("/undo", found).action == "undo" and prepare("/compact", found).action == "compact"
