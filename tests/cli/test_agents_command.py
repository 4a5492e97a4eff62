"""``totem agents list|show|new|edit|remove`` as a user runs them."""

from __future__ import annotations

import sys


def agents(totem, *args: str, env: dict | None = None):
    import subprocess

    proc = subprocess.run(
        totem.command("agents", "--cwd", str(totem.project), *args), capture_output=True, text=True,
        env={**totem.env, **(env or {})}, timeout=60, stdin=subprocess.DEVNULL,
    )
    return proc


def test_new_show_edit_list_and_remove(totem, tmp_path):
    listed = agents(totem, "list")
    assert listed.returncode == 0 and listed.stdout.startswith("explore\tbuilt-in\t")

    made = agents(totem, "new", "checker", "--description", "Checks things")
    assert made.returncode == 0, made.stderr
    path = made.stdout.strip()
    assert str(totem.project) not in path  # kept outside the project
    assert agents(totem, "new", "checker").returncode == 1  # exists

    project = agents(totem, "new", "shared", "--project")
    assert project.returncode == 0 and (totem.project / ".totem/agents/shared.md").is_file()

    editor = tmp_path / "editor.py"
    editor.write_text("import sys\nopen(sys.argv[1], 'a').write('Check twice.\\n')\n")
    edited = agents(totem, "edit", "checker", env={"EDITOR": f"{sys.executable} {editor}", "VISUAL": ""})
    assert edited.returncode == 0, edited.stderr
    shown = agents(totem, "show", "checker")
    assert "description: Checks things" in shown.stdout and "Check twice." in shown.stdout

    copied = agents(totem, "edit", "explore", env={"EDITOR": f"{sys.executable} {editor}", "VISUAL": ""})
    assert copied.returncode == 0 and "now replaces it" in copied.stderr
    assert "explore\tuser-project\t" in agents(totem, "list").stdout

    assert agents(totem, "remove", "checker").returncode == 0
    assert "checker" not in agents(totem, "list").stdout
    assert agents(totem, "remove", "general").returncode == 1  # built in
    assert agents(totem, "show", "nobody").returncode == 2
    assert agents(totem, "new", "bad name").returncode == 2


def test_edit_with_a_missing_editor_says_so_and_copies_nothing(totem):
    missing = agents(totem, "edit", "explore", env={"EDITOR": "nosuch-editor-xyz --wait", "VISUAL": ""})
    assert missing.returncode == 1 and "'nosuch-editor-xyz' (from $VISUAL or $EDITOR) is not a command" in missing.stderr
    assert "Traceback" not in missing.stderr
    assert "explore\tbuilt-in\t" in agents(totem, "list").stdout  # the built-in was not copied
    failed = agents(totem, "edit", "general", env={"EDITOR": "false", "VISUAL": ""})
    assert failed.returncode == 1 and "the editor false exited with 1" in failed.stderr
