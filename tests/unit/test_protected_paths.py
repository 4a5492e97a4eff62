""".git and .totem are protected as path components at any depth; a file named .totem is refused.

Regression tests for issue 16, item 2 (a ``.git`` file overwritten with ``edit = "allow"``,
``nested/.git/hooks/pre-commit`` and ``nested/.totem/config.toml`` written unasked), and
properties that vary the depth, the case and the way the path is reached (symlinks).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from totem_engine.permissions import Policy, rules_from_config
from totem_engine.tools.base import ToolContext
from totem_engine.tools.edit import EditTool
from totem_engine.tools.patch import PatchTool
from totem_engine.tools.write import WriteTool
from totem_engine.vocab.tools import ToolError
from totem_engine.workspace.files import DiskWorkspace

PROPERTY = settings(max_examples=80, deadline=None)


def _allowing_edits() -> Policy:
    policy = Policy(rules=rules_from_config({"edit": "allow"}, "user"))
    policy.remember("edit", "*", "allow")  # and a broad "always" answer in the session
    return policy


@pytest.mark.parametrize("path", [".git", "nested/.git/hooks/pre-commit", "nested/.totem/config.toml", "sub/.git"])
def test_what_was_written_unasked_now_asks(path):
    decision = _allowing_edits().decide("edit", [path], changes=True)
    assert decision.action == "ask" and decision.rule.source == "protected"


_NAMES = st.sampled_from([".git", ".totem", ".GIT", ".Totem", ".gIt"])
_FOLDERS = st.lists(st.sampled_from(["src", "nested", "vendor/lib", "a b", "x.git", "totem"]), max_size=4)
_TAILS = st.sampled_from(["", "config", "hooks/pre-commit", "config.toml", "modules/sub/config", "skills/x/SKILL.md"])


@PROPERTY
@given(_FOLDERS, _NAMES, _TAILS)
def test_protected_names_ask_at_any_depth(folders, name, tail):
    path = "/".join([*folders, name, *([tail] if tail else [])])
    assert _allowing_edits().decide("edit", [path], changes=True).action == "ask", path


@PROPERTY
@given(_FOLDERS, st.sampled_from([".github", "git", ".gitignore", ".totemrc", "totem", ".git-blame-ignore-revs"]))
def test_names_that_only_look_alike_are_not_protected(folders, name):
    path = "/".join([*folders, name])
    assert _allowing_edits().decide("edit", [path], changes=True).action == "allow", path


async def _prepare(tool, root: Path, **arguments):
    ctx = ToolContext(root=root, workspace=DiskWorkspace(), session_id="s", call_id="c")
    return await tool.prepare(tool.Input.model_validate(arguments), ctx)


@PROPERTY
@given(st.integers(0, 3), st.sampled_from([".git", ".totem"]), st.sampled_from(["config", "hooks/pre-commit"]))
async def test_a_symlink_into_a_protected_folder_is_judged_by_where_it_points(depth, name, tail):
    with tempfile.TemporaryDirectory() as base:
        root = Path(base)
        (root / name / "hooks").mkdir(parents=True)
        folder = root.joinpath(*[f"d{i}" for i in range(depth)])
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "innocent").symlink_to(root / name)
        rel = "/".join([*(f"d{i}" for i in range(depth)), "innocent", tail])
        action = await _prepare(WriteTool(), root, path=rel, content="x")
        assert _allowing_edits().decide("edit", action.patterns, changes=True).action == "ask", action.patterns


@PROPERTY
@given(st.lists(st.sampled_from(["src", "nested", "sub dir"]), max_size=3), st.sampled_from([".totem", ".TOTEM", ".Totem"]),
       st.sampled_from(["write", "edit", "patch"]))
async def test_a_file_named_totem_is_refused_with_a_clear_message(folders, name, tool):
    with tempfile.TemporaryDirectory() as base:
        root = Path(base)
        rel = "/".join([*folders, name])
        with pytest.raises(ToolError) as info:
            if tool == "write":
                await _prepare(WriteTool(), root, path=rel, content="x")
            elif tool == "edit":
                await _prepare(EditTool(), root, path=rel, old_string="", new_string="x")
            else:
                patch = f"--- /dev/null\n+++ b/{rel}\n@@ -0,0 +1 @@\n+x\n"
                await _prepare(PatchTool(), root, patch=patch)
        assert "Totem keeps its own folder" in str(info.value)
        assert not (root / rel).exists()


async def test_files_inside_the_totem_folder_can_still_be_written(tmp_path):
    action = await _prepare(WriteTool(), tmp_path, path=".totem/config.toml", content="max_steps = 20\n")
    assert action.patterns == [".totem/config.toml"]
