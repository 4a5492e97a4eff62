"""The edit tool, driven directly: prepare (touches nothing), then apply, over a real folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from totem_engine.tools import matching
from totem_engine.tools.base import ToolContext, ToolResult
from totem_engine.tools.edit import EditTool
from totem_engine.tools.freshness import content_hash, mark_restored, mark_seen
from totem_engine.vocab.tools import ToolError
from totem_engine.workspace.paths import BoundaryError


async def prepare(ctx: ToolContext, **arguments):
    return await EditTool().prepare(EditTool.Input.model_validate(arguments), ctx)


async def edit(ctx: ToolContext, **arguments) -> ToolResult:
    return await (await prepare(ctx, **arguments)).apply(ctx)


def put(root: Path, name: str, data: bytes) -> Path:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


# --- the required cases ---------------------------------------------------------------------


async def test_lf_region_of_a_mixed_file(root: Path, ctx: ToolContext):
    path = put(root, "m.txt", b"alpha\nbeta\r\ngamma\n")
    await edit(ctx, path="m.txt", old_string="alpha\n", new_string="ALPHA\n")
    assert path.read_bytes() == b"ALPHA\nbeta\r\ngamma\n"


async def test_lf_strings_edit_a_crlf_file(root: Path, ctx: ToolContext):
    path = put(root, "w.txt", b"a\r\nb\r\n")
    await edit(ctx, path="w.txt", old_string="a\nb", new_string="A\nB")
    assert path.read_bytes() == b"A\r\nB\r\n"


async def test_bom_is_kept(root: Path, ctx: ToolContext):
    path = put(root, "b.cs", b"\xef\xbb\xbfclass A {}\r\n")
    await edit(ctx, path="b.cs", old_string="class A", new_string="class B")
    assert path.read_bytes() == b"\xef\xbb\xbfclass B {}\r\n"


async def test_duplicate_match_is_refused_with_count_and_lines(root: Path, ctx: ToolContext):
    data = b"import 'a';\nimport 'io';\nimport 'io';\nmain(){}\n"
    path = put(root, "main.dart", data)
    with pytest.raises(ToolError) as err:
        await prepare(ctx, path="main.dart", old_string="import 'io';\n", new_string="")
    assert "2 matches, at lines 2 and 3" in str(err.value)
    assert path.read_bytes() == data


async def test_replace_all_changes_both(root: Path, ctx: ToolContext):
    path = put(root, "main.dart", b"import 'a';\nimport 'io';\nimport 'io';\nmain(){}\n")
    result = await edit(ctx, path="main.dart", old_string="import 'io';\n", new_string="", replace_all=True)
    assert path.read_bytes() == b"import 'a';\nmain(){}\n"
    assert "2 places, at lines 2 and 3" in result.output


async def test_no_match_shows_the_closest_line_and_changes_nothing(root: Path, ctx: ToolContext):
    data = b"source 'x'\ngem 'rails'\n"
    path = put(root, "Gemfile", data)
    with pytest.raises(ToolError) as err:
        await prepare(ctx, path="Gemfile", old_string="gem 'rails', '7.1'\n", new_string="gem 'rails', '7.2'\n")
    assert "2\tgem 'rails'" in str(err.value)
    assert "source" not in str(err.value)
    assert content_hash(path.read_bytes()) == content_hash(data)


# --- the two phases -------------------------------------------------------------------------


async def test_prepare_touches_nothing_and_describes_the_change(root: Path, ctx: ToolContext):
    path = put(root, "src/app.py", b"x = 1\n")
    action = await prepare(ctx, path="src/app.py", old_string="x = 1", new_string="x = 2")
    assert path.read_bytes() == b"x = 1\n"
    assert "src/app.py" not in ctx.reads.seen
    assert action.permission == "edit"
    assert action.patterns == ["src/app.py"]
    assert action.always_pattern == "src/*"
    assert "-x = 1\n+x = 2\n" in action.diff and action.diff.startswith("--- a/src/app.py\n+++ b/src/app.py\n")
    assert [(f.path, f.old_text, f.new_text) for f in action.files] == [("src/app.py", "x = 1\n", "x = 2\n")]


async def test_apply_writes_and_records_what_was_written(root: Path, ctx: ToolContext):
    path = put(root, "a.py", b"x = 1\n")
    result = await edit(ctx, path="a.py", old_string="x = 1", new_string="x = 2")
    assert path.read_bytes() == b"x = 2\n"
    assert result.changed == ["a.py"]
    assert not result.is_error
    assert ctx.reads.seen["a.py"] == content_hash(b"x = 2\n")
    assert "line 1" in result.output
    assert "matched with" not in result.output  # exact: no strategy note


async def test_result_names_a_tolerant_strategy(root: Path, ctx: ToolContext):
    path = put(root, "a.py", b"def f():\n        return 1\n")
    result = await edit(ctx, path="a.py", old_string="def f():\n    return 1\n", new_string="def f():\n    return 2\n")
    assert path.read_bytes() == b"def f():\n        return 2\n"
    assert matching.INDENTATION in result.output
    assert result.metadata["strategy"] == matching.INDENTATION


async def test_file_changed_between_prepare_and_apply_is_not_written(root: Path, ctx: ToolContext):
    path = put(root, "a.py", b"x = 1\n")
    action = await prepare(ctx, path="a.py", old_string="x = 1", new_string="x = 2")
    path.write_bytes(b"x = 1\ny = 3\n")  # the user typed while permission was asked
    with pytest.raises(ToolError, match="changed"):
        await action.apply(ctx)
    assert path.read_bytes() == b"x = 1\ny = 3\n"


# --- refusals -------------------------------------------------------------------------------


async def test_same_old_and_new_is_an_error(root: Path, ctx: ToolContext):
    put(root, "a.py", b"x\n")
    with pytest.raises(ToolError, match="same"):
        await prepare(ctx, path="a.py", old_string="x", new_string="x")


async def test_an_edit_that_changes_nothing_is_an_error(root: Path, ctx: ToolContext):
    put(root, "a.py", b"x\n")
    # Matches only with trailing whitespace ignored, and the replacement is the line as it is.
    with pytest.raises(ToolError, match="as it is"):
        await prepare(ctx, path="a.py", old_string="x  \n", new_string="x\n")


async def test_empty_old_string_creates_a_missing_file(root: Path, ctx: ToolContext):
    result = await edit(ctx, path="new/mod.py", old_string="", new_string="print(1)\n")
    assert (root / "new" / "mod.py").read_bytes() == b"print(1)\n"
    assert result.output.startswith("Created new/mod.py")
    assert result.changed == ["new/mod.py"]


async def test_empty_old_string_on_an_existing_file_is_refused(root: Path, ctx: ToolContext):
    path = put(root, "a.py", b"")
    with pytest.raises(ToolError, match="already exists"):
        await prepare(ctx, path="a.py", old_string="", new_string="x\n")
    assert path.read_bytes() == b""


async def test_missing_file_names_the_closest_paths(root: Path, ctx: ToolContext):
    put(root, "config.py", b"x\n")
    with pytest.raises(ToolError) as err:
        await prepare(ctx, path="confg.py", old_string="x", new_string="y")
    assert "does not exist" in str(err.value) and "config.py" in str(err.value)
    assert not (root / "confg.py").exists()


@pytest.mark.parametrize("data", [b"ab\x00cd x", b"caf\xe9 x\n"], ids=["nul", "latin-1"])
async def test_binary_file_is_refused(root: Path, ctx: ToolContext, data: bytes):
    put(root, "blob", data)
    with pytest.raises(ToolError, match="binary"):
        await prepare(ctx, path="blob", old_string="x", new_string="y")


async def test_stale_read_is_refused(root: Path, ctx: ToolContext):
    path = put(root, "a.py", b"x = 1\n")
    ctx.reads.seen["a.py"] = content_hash(b"something older\n")
    with pytest.raises(ToolError, match="changed since you last read it"):
        await prepare(ctx, path="a.py", old_string="x = 1", new_string="x = 2")
    assert path.read_bytes() == b"x = 1\n"


async def test_a_file_put_back_by_totems_undo_is_not_stale(root: Path, ctx: ToolContext):
    # The agent wrote x = 2; Totem's undo put x = 1 back (issue 25, item 7).
    path = put(root, "a.py", b"x = 1\n")
    mark_seen(ctx, "a.py", b"x = 2\n")
    with pytest.raises(ToolError, match="changed since you last read it"):
        await prepare(ctx, path="a.py", old_string="x = 1", new_string="x = 3")
    mark_restored(ctx.reads, "a.py", b"x = 1\n")
    await edit(ctx, path="a.py", old_string="x = 1", new_string="x = 3")
    assert path.read_bytes() == b"x = 3\n"
    # An undo that deleted the file (the agent had created it): nothing is known of it any more,
    # so a file the user makes there later is not taken for the agent's.
    mark_restored(ctx.reads, "a.py", None)
    assert "a.py" not in ctx.reads.seen


async def test_unread_file_can_be_edited(root: Path, ctx: ToolContext):
    # An edit is not blind: its unique match proves the model knows the text.
    path = put(root, "a.py", b"x = 1\n")
    await edit(ctx, path="a.py", old_string="x = 1", new_string="x = 2")
    assert path.read_bytes() == b"x = 2\n"


async def test_path_outside_the_project_is_refused(root: Path, ctx: ToolContext):
    put(root.parent, "outside.txt", b"x\n")
    with pytest.raises(BoundaryError):
        await prepare(ctx, path="../outside.txt", old_string="x", new_string="y")
    assert (root.parent / "outside.txt").read_bytes() == b"x\n"


async def test_directory_is_refused(root: Path, ctx: ToolContext):
    (root / "pkg").mkdir()
    with pytest.raises(ToolError, match="directory"):
        await prepare(ctx, path="pkg", old_string="x", new_string="y")
