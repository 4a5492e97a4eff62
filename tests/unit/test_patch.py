"""The patch tool, driven directly: prepare (validates everything, touches nothing), then apply."""

from __future__ import annotations

from pathlib import Path

import pytest

from totem_engine.tools import matching
from totem_engine.tools.base import ToolContext, ToolResult
from totem_engine.tools.freshness import content_hash
from totem_engine.tools.patch import PatchTool, recount
from totem_engine.vocab.tools import ToolError
from totem_engine.workspace.files import DiskWorkspace
from totem_engine.workspace.paths import BoundaryError

TEN = "".join(f"line{i}\n" for i in range(1, 11))  # line1 .. line10


async def prepare(ctx: ToolContext, patch: str):
    return await PatchTool().prepare(PatchTool.Input.model_validate({"patch": patch}), ctx)


async def run(ctx: ToolContext, patch: str) -> ToolResult:
    return await (await prepare(ctx, patch)).apply(ctx)


def put(root: Path, name: str, data: bytes | str) -> Path:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


# --- modify ---------------------------------------------------------------------------------

TWO_HUNKS_REVERSED = """--- a/f.txt
+++ b/f.txt
@@ -8,3 +8,3 @@
 line7
-line8
+LINE8
 line9
@@ -2,3 +2,3 @@
 line1
-line2
+LINE2
 line3
"""


async def test_hunks_are_placed_by_their_text_in_any_order(root: Path, ctx: ToolContext):
    path = put(root, "f.txt", TEN)
    result = await run(ctx, TWO_HUNKS_REVERSED.replace("@@ -8,3 +8,3 @@", "@@ -7,3 +7,3 @@").replace(
        "@@ -2,3 +2,3 @@", "@@ -1,3 +1,3 @@"))
    assert path.read_text() == TEN.replace("line2\n", "LINE2\n").replace("line8\n", "LINE8\n")
    assert result.changed == ["f.txt"]
    assert "2 hunks" in result.output
    assert "applied at" not in result.output  # both at the lines their headers say


async def test_a_hunk_found_elsewhere_is_applied_and_its_offset_reported(root: Path, ctx: ToolContext):
    path = put(root, "f.txt", TEN)
    result = await run(ctx, TWO_HUNKS_REVERSED)  # headers say 8 and 2; the text is at 7 and 1
    assert path.read_text() == TEN.replace("line2\n", "LINE2\n").replace("line8\n", "LINE8\n")
    assert "hunk 1 applied at line 7, 1 line above its header's line 8" in result.output
    assert "hunk 2 applied at line 1, 1 line above its header's line 2" in result.output


async def test_hunk_not_found_fails_the_whole_patch(root: Path, ctx: ToolContext):
    first = put(root, "a.txt", "one\ntwo\n")
    second = put(root, "b.txt", TEN)
    patch = """--- a/a.txt
+++ b/a.txt
@@ -1,2 +1,2 @@
 one
-two
+TWO
--- a/b.txt
+++ b/b.txt
@@ -4,3 +4,3 @@
 line4
-line5 changed meanwhile
+LINE5
 line6
"""
    with pytest.raises(ToolError) as err:
        await prepare(ctx, patch)
    message = str(err.value)
    assert "Hunk 1 of b.txt" in message and "Nothing was changed" in message
    assert "4\tline4\n5\tline5\n6\tline6" in message  # the closest lines, to copy from
    assert first.read_text() == "one\ntwo\n" and second.read_text() == TEN


async def test_overlapping_hunks_are_an_error(root: Path, ctx: ToolContext):
    put(root, "f.txt", TEN)
    patch = """--- a/f.txt
+++ b/f.txt
@@ -2,3 +2,3 @@
 line2
-line3
+LINE3
 line4
@@ -3,3 +3,3 @@
 line3
-line4
+LINE4
 line5
"""
    with pytest.raises(ToolError, match="overlap"):
        await prepare(ctx, patch)


async def test_addition_without_context_is_never_appended_at_the_end(root: Path, ctx: ToolContext):
    path = put(root, "f.txt", TEN)
    with pytest.raises(ToolError, match="no context lines"):
        await prepare(ctx, "--- a/f.txt\n+++ b/f.txt\n@@ -10,0 +11,1 @@\n+line11\n")
    assert path.read_text() == TEN


async def test_addition_to_an_empty_file(root: Path, ctx: ToolContext):
    path = put(root, "empty.txt", "")
    await run(ctx, "--- a/empty.txt\n+++ b/empty.txt\n@@ -0,0 +1,2 @@\n+a\n+b\n")
    assert path.read_text() == "a\nb\n"


async def test_several_places_pick_the_one_nearest_the_header(root: Path, ctx: ToolContext):
    path = put(root, "f.txt", "x\nsame\ny\nsame\nz\n")
    result = await run(ctx, "--- a/f.txt\n+++ b/f.txt\n@@ -4,1 +4,1 @@\n-same\n+SAME\n")
    assert path.read_text() == "x\nsame\ny\nSAME\nz\n"
    assert "applied at" not in result.output


async def test_several_places_equally_near_are_ambiguous(root: Path, ctx: ToolContext):
    put(root, "f.txt", "same\nx\nsame\n")
    with pytest.raises(ToolError, match="matches 2 places"):
        await prepare(ctx, "--- a/f.txt\n+++ b/f.txt\n@@ -2,1 +2,1 @@\n-same\n+SAME\n")


async def test_hunk_text_must_be_whole_lines(root: Path, ctx: ToolContext):
    # "two" sits inside "network" first; a hunk's lines are whole lines, so line 2 is the place.
    path = put(root, "f.txt", "network\ntwo\n")
    await run(ctx, "--- a/f.txt\n+++ b/f.txt\n@@ -1,1 +1,1 @@\n-two\n+2\n")
    assert path.read_text() == "network\n2\n"


async def test_crlf_file_patched_with_an_lf_patch_keeps_crlf(root: Path, ctx: ToolContext):
    path = put(root, "w.txt", b"a\r\nb\r\nc\r\n")
    await run(ctx, "--- a/w.txt\n+++ b/w.txt\n@@ -1,3 +1,4 @@\n a\n-b\n+B\n+B2\n c\n")
    assert path.read_bytes() == b"a\r\nB\r\nB2\r\nc\r\n"


async def test_crlf_patch_text_applies(root: Path, ctx: ToolContext):
    path = put(root, "w.py", b"def f():\r\n\r\n    return 1\r\n")
    patch = "--- a/w.py\r\n+++ b/w.py\r\n@@ -1,3 +1,3 @@\r\n def f():\r\n\r\n-    return 1\r\n+    return 2\r\n"
    await run(ctx, patch)  # the blank context line lost its space too
    assert path.read_bytes() == b"def f():\r\n\r\n    return 2\r\n"


async def test_bom_is_kept(root: Path, ctx: ToolContext):
    path = put(root, "b.txt", b"\xef\xbb\xbfa\nb\n")
    await run(ctx, "--- a/b.txt\n+++ b/b.txt\n@@ -1,2 +1,2 @@\n a\n-b\n+B\n")
    assert path.read_bytes() == b"\xef\xbb\xbfa\nB\n"


async def test_tolerant_match_is_reported(root: Path, ctx: ToolContext):
    path = put(root, "f.py", "def f():   \n    return 1\n")
    result = await run(ctx, "--- a/f.py\n+++ b/f.py\n@@ -1,2 +1,2 @@\n def f():\n-    return 1\n+    return 2\n")
    assert path.read_text() == "def f():\n    return 2\n"
    assert f"hunk 1 matched with {matching.TRAILING_WHITESPACE}" in result.output


async def test_no_newline_at_end_of_file(root: Path, ctx: ToolContext):
    path = put(root, "f.txt", "a\nb")
    patch = "--- a/f.txt\n+++ b/f.txt\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"
    await run(ctx, patch)
    assert path.read_text() == "a\nc"


async def test_plain_paths_without_git_prefixes(root: Path, ctx: ToolContext):
    path = put(root, "src/x.py", "a\nb\n")
    await run(ctx, "--- src/x.py\n+++ src/x.py\n@@ -1,2 +1,2 @@\n a\n-b\n+B\n")
    assert path.read_text() == "a\nB\n"


# --- miscounted and bare headers ------------------------------------------------------------


async def test_miscounted_hunk_applies_all_its_lines(root: Path, ctx: ToolContext):
    path = put(root, "f.txt", "a\nb\nc\nd\n")
    # The header says 1 line; unidiff alone would drop "-c", "+C" and " d" silently.
    await run(ctx, "--- a/f.txt\n+++ b/f.txt\n@@ -1,1 +1,1 @@\n a\n b\n-c\n+C\n d\n")
    assert path.read_text() == "a\nb\nC\nd\n"


async def test_bare_header_without_line_numbers(root: Path, ctx: ToolContext):
    path = put(root, "f.txt", TEN)
    result = await run(ctx, "--- a/f.txt\n+++ b/f.txt\n@@\n line4\n-line5\n+LINE5\n line6\n")
    assert path.read_text() == TEN.replace("line5\n", "LINE5\n")
    assert "applied at" not in result.output  # no header line to be off from


def test_recount_reads_a_blank_line_inside_a_hunk_as_context():
    text, numbered = recount("--- a/f\n+++ b/f\n@@ -1,9 +1,9 @@\n a\n\n-b\n+B\n\n--- a/g\n+++ b/g\n@@ -3 +3 @@\n-x\n+y\n")
    assert text == "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n \n-b\n+B\n\n--- a/g\n+++ b/g\n@@ -3,1 +3,1 @@\n-x\n+y\n"
    assert numbered == [True, True]


# --- create and delete ----------------------------------------------------------------------


async def test_create_modify_and_delete_in_one_patch(root: Path, ctx: ToolContext):
    put(root, "keep.txt", "a\nb\n")
    put(root, "old.txt", "bye\n")
    patch = """diff --git a/keep.txt b/keep.txt
--- a/keep.txt
+++ b/keep.txt
@@ -1,2 +1,2 @@
 a
-b
+B
diff --git a/new/n.txt b/new/n.txt
new file mode 100644
--- /dev/null
+++ b/new/n.txt
@@ -0,0 +1,2 @@
+hello
+world
diff --git a/old.txt b/old.txt
deleted file mode 100644
--- a/old.txt
+++ /dev/null
@@ -1 +0,0 @@
-bye
"""
    action = await prepare(ctx, patch)
    assert [(f.path, f.old_text, f.new_text) for f in action.files] == [
        ("keep.txt", "a\nb\n", "a\nB\n"),
        ("new/n.txt", None, "hello\nworld\n"),
        ("old.txt", "bye\n", None),
    ]
    assert action.permission == "edit"
    assert action.patterns == ["keep.txt", "new/n.txt", "old.txt"]
    assert action.diff.count("--- ") == 3 and "+++ /dev/null" in action.diff and "--- /dev/null" in action.diff
    assert (root / "keep.txt").read_text() == "a\nb\n" and not (root / "new").exists()  # prepare touched nothing

    result = await action.apply(ctx)
    assert (root / "keep.txt").read_text() == "a\nB\n"
    assert (root / "new/n.txt").read_text() == "hello\nworld\n"
    assert not (root / "old.txt").exists()
    assert result.changed == ["keep.txt", "new/n.txt", "old.txt"]
    assert ctx.reads.seen["new/n.txt"] == content_hash(b"hello\nworld\n")


async def test_allow_always_covers_the_deepest_common_folder(root: Path, ctx: ToolContext):
    put(root, "src/a/x.txt", "x\n")
    put(root, "src/b/y.txt", "y\n")
    patch = "--- a/src/a/x.txt\n+++ b/src/a/x.txt\n@@ -1 +1 @@\n-x\n+X\n--- a/src/b/y.txt\n+++ b/src/b/y.txt\n@@ -1 +1 @@\n-y\n+Y\n"
    action = await prepare(ctx, patch)
    assert action.always_pattern == "src/*"
    assert action.patterns == ["src/a/x.txt", "src/b/y.txt"]


async def test_create_over_an_existing_file_is_refused(root: Path, ctx: ToolContext):
    put(root, "n.txt", "already\n")
    with pytest.raises(ToolError, match="already exists"):
        await prepare(ctx, "--- /dev/null\n+++ b/n.txt\n@@ -0,0 +1 @@\n+x\n")


async def test_delete_needs_the_whole_current_content(root: Path, ctx: ToolContext):
    path = put(root, "old.txt", "bye\nand more\n")
    with pytest.raises(ToolError, match="whole current content"):
        await prepare(ctx, "--- a/old.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n")
    assert path.exists()


async def test_modify_of_a_missing_file_names_the_closest_paths(root: Path, ctx: ToolContext):
    put(root, "config.py", "x\n")
    with pytest.raises(ToolError) as err:
        await prepare(ctx, "--- a/confg.py\n+++ b/confg.py\n@@ -1 +1 @@\n-x\n+y\n")
    assert "does not exist" in str(err.value) and "config.py" in str(err.value)


async def test_rename_is_refused(root: Path, ctx: ToolContext):
    put(root, "a.txt", "x\n")
    with pytest.raises(ToolError, match="Renaming"):
        await prepare(ctx, "--- a/a.txt\n+++ b/b.txt\n@@ -1 +1 @@\n-x\n+y\n")


async def test_a_file_twice_is_refused(root: Path, ctx: ToolContext):
    put(root, "f.txt", TEN)
    hunk = "--- a/f.txt\n+++ b/f.txt\n@@ -1,2 +1,2 @@\n line1\n-line2\n+X\n"
    with pytest.raises(ToolError, match="appears twice"):
        await prepare(ctx, hunk + hunk.replace("line2", "line3").replace("line1", "line2"))


# --- confinement, staleness, malformed ------------------------------------------------------


async def test_path_outside_the_project_is_refused(root: Path, ctx: ToolContext):
    put(root.parent, "outside.txt", "x\n")
    with pytest.raises(BoundaryError):
        await prepare(ctx, "--- a/../outside.txt\n+++ b/../outside.txt\n@@ -1 +1 @@\n-x\n+y\n")
    assert (root.parent / "outside.txt").read_text() == "x\n"


async def test_stale_file_fails_the_patch(root: Path, ctx: ToolContext):
    put(root, "a.txt", "one\n")
    put(root, "b.txt", "two\n")
    ctx.reads.seen["b.txt"] = content_hash(b"older\n")
    patch = "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-one\n+1\n--- a/b.txt\n+++ b/b.txt\n@@ -1 +1 @@\n-two\n+2\n"
    with pytest.raises(ToolError, match="b.txt changed since you last read it"):
        await prepare(ctx, patch)
    assert (root / "a.txt").read_text() == "one\n"


@pytest.mark.parametrize(
    "patch, reason",
    [
        ("just some words\n", "holds no file"),
        ("--- a/f.txt\n+++ b/f.txt\n", "has no hunk"),
        ("@@ -1 +1 @@\n-x\n+y\n", "not a valid unified diff (Unexpected hunk found"),
        ("--- a/f.txt\n+++ b/f.txt\n@@ -1,5 +1,5 @@\n", "a hunk without lines"),
        ("--- a/f.txt\n+++ b/f.txt\n@@ -1,5 +1,5 @@\n\n\n", "not a valid unified diff"),  # blank lines: no context
    ],
)
async def test_malformed_patch_says_what_is_wrong_and_shows_the_format(ctx: ToolContext, patch: str, reason: str):
    with pytest.raises(ToolError) as err:
        await prepare(ctx, patch)
    assert reason in str(err.value)
    assert "--- a/src/app.py\n+++ b/src/app.py\n@@ -12,3 +12,4 @@" in str(err.value)


# --- all or nothing in apply ----------------------------------------------------------------

TWO_FILES = "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-one\n+1\n--- a/b.txt\n+++ b/b.txt\n@@ -1 +1 @@\n-two\n+2\n"


async def test_a_file_changed_before_apply_stops_every_write(root: Path, ctx: ToolContext):
    a, b = put(root, "a.txt", "one\n"), put(root, "b.txt", "two\n")
    action = await prepare(ctx, TWO_FILES)
    b.write_text("two\nthree\n")
    with pytest.raises(ToolError, match="b.txt changed"):
        await action.apply(ctx)
    assert a.read_text() == "one\n"


async def test_a_failed_write_puts_back_the_files_already_written(root: Path, ctx: ToolContext, monkeypatch):
    a, b = put(root, "a.txt", "one\n"), put(root, "b.txt", "two\n")
    action = await prepare(ctx, TWO_FILES)
    real_write = DiskWorkspace.write_bytes

    async def failing_write(self, path: Path, data: bytes) -> None:
        if path.name == "b.txt":
            raise OSError(28, "No space left on device")
        await real_write(self, path, data)

    monkeypatch.setattr(DiskWorkspace, "write_bytes", failing_write)
    with pytest.raises(ToolError, match="No space left"):
        await action.apply(ctx)
    assert a.read_text() == "one\n" and b.read_text() == "two\n"
    assert "a.txt" not in ctx.reads.seen
