"""The read and write tools, driven directly: prepare, then apply, over a real folder."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from totem_engine.tools.base import ReadLedger, ToolContext, ToolResult
from totem_engine.tools.freshness import content_hash
from totem_engine.tools.read import MAX_LINE, ReadTool
from totem_engine.tools.write import WriteTool
from totem_engine.vocab.tools import ToolError
from totem_engine.workspace import files as workspace_mod
from totem_engine.workspace.files import DiskWorkspace, write_atomically
from totem_engine.workspace.paths import BoundaryError


async def run(tool, ctx: ToolContext, **arguments) -> ToolResult:
    args = tool.Input.model_validate(arguments)
    action = await tool.prepare(args, ctx)
    return await action.apply(ctx)


async def read(ctx: ToolContext, **arguments) -> ToolResult:
    return await run(ReadTool(), ctx, **arguments)


def leftovers(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.endswith(".totem-tmp")]


# --- read -----------------------------------------------------------------------------------


async def test_read_numbers_lines(root: Path, ctx: ToolContext):
    (root / "a.py").write_text("one\ntwo\nthree\n")
    result = await read(ctx, path="a.py")
    assert not result.is_error
    assert result.output.splitlines()[:3] == ["1\tone", "2\ttwo", "3\tthree"]
    assert "[" not in result.output  # no notes for a whole, short file
    assert result.summary == "3 lines"


async def test_read_records_what_was_seen(root: Path, ctx: ToolContext):
    (root / "a.py").write_text("x\n")
    await read(ctx, path="a.py")
    assert "a.py" in ctx.reads.seen


async def test_a_file_shown_with_the_request_is_pointed_at_until_it_changes(root: Path, ctx: ToolContext):
    (root / "a.py").write_text("x = 1\n")
    ctx.reads.shown["a.py"] = content_hash(b"x = 1\n")  # as the small-model policy's prepare records it

    again = await read(ctx, path="a.py")
    assert not again.is_error and "1\tx = 1" not in again.output
    assert again.output.startswith("a.py is shown above, with the request, and has not changed since")

    (root / "a.py").write_text("x = 2\n")
    changed = await read(ctx, path="a.py")
    assert changed.output.splitlines() == ["1\tx = 2"]


async def test_read_offset_and_limit(root: Path, ctx: ToolContext):
    (root / "f.txt").write_text("".join(f"line{i}\n" for i in range(1, 11)))
    result = await read(ctx, path="f.txt", offset=3, limit=2)
    lines = result.output.splitlines()
    assert lines[:2] == ["3\tline3", "4\tline4"]
    assert "line5" not in result.output and "line2" not in result.output
    assert "offset=5" in result.output  # how to read on


async def test_read_offset_to_the_end_has_no_read_on_note(root: Path, ctx: ToolContext):
    (root / "f.txt").write_text("".join(f"line{i}\n" for i in range(1, 11)))
    result = await read(ctx, path="f.txt", offset=9)
    assert result.output.splitlines() == ["9\tline9", "10\tline10"]


async def test_read_offset_past_the_end(root: Path, ctx: ToolContext):
    (root / "f.txt").write_text("a\nb\nc\n")
    result = await read(ctx, path="f.txt", offset=20)
    assert "past the end" in result.output
    assert "3 lines" in result.output
    assert "empty file" not in result.output  # the file is not empty


async def test_read_empty_file(root: Path, ctx: ToolContext):
    (root / "empty.txt").write_text("")
    result = await read(ctx, path="empty.txt")
    assert "empty file" in result.output


async def test_read_clamp_note_reaches_the_model(root: Path, ctx: ToolContext):
    (root / "f.txt").write_text("a\nb\n")
    result = await read(ctx, path="f.txt", limit=0)
    assert "1\ta" in result.output and "2\tb" in result.output
    assert "limit=0" in result.output


async def test_read_directory_lists_entries(root: Path, ctx: ToolContext):
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "src" / "b.py").write_text("")
    (root / "src" / "a.py").write_text("")
    result = await read(ctx, path="src")
    assert result.output.splitlines() == ["a.py", "b.py", "pkg/"]
    assert "3" in result.summary


async def test_read_empty_directory(root: Path, ctx: ToolContext):
    (root / "void").mkdir()
    result = await read(ctx, path="void")
    assert "empty" in result.output


async def test_read_binary_file_gives_a_short_notice(root: Path, ctx: ToolContext):
    data = b"\x7fELF\x02\x01\x01\x00" + b"\x00" * 4000 + bytes(range(256))
    (root / "prog").write_bytes(data)
    result = await read(ctx, path="prog")
    assert "binary" in result.output
    assert "ELF" in result.output
    assert str(len(data)) in result.output
    assert "\x00" not in result.output
    assert "\x7f" not in result.output
    assert len(result.output) < 200
    assert not result.output.startswith("1\t")


async def test_read_non_utf8_text_is_treated_as_binary(root: Path, ctx: ToolContext):
    (root / "latin1.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    result = await read(ctx, path="latin1.txt")
    assert "binary" in result.output
    assert "\xe9" not in result.output


async def test_read_missing_file_names_the_closest_path(root: Path, ctx: ToolContext):
    (root / "src").mkdir()
    (root / "src" / "main.py").write_text("x\n")
    with pytest.raises(ToolError) as info:
        await read(ctx, path="src/mian.py")
    message = str(info.value)
    assert "src/mian.py" in message
    assert "does not exist" in message
    assert "src/main.py" in message


async def test_read_outside_is_refused_at_prepare(root: Path, ctx: ToolContext):
    (root.parent / "secret.txt").write_text("secret\n")
    with pytest.raises(BoundaryError):
        await ReadTool().prepare(ReadTool.Input(path="../secret.txt"), ctx)


async def test_read_cuts_long_lines_with_a_note(root: Path, ctx: ToolContext):
    (root / "long.txt").write_text("x" * (MAX_LINE * 3) + "\nshort\n")
    result = await read(ctx, path="long.txt")
    first, second = result.output.splitlines()[:2]
    assert "line cut" in first
    assert first.count("x") == MAX_LINE
    assert second == "2\tshort"


async def test_read_large_output_is_cut_with_a_read_on_note(root: Path, ctx: ToolContext):
    (root / "big.txt").write_text("".join(("y" * 1000) + "\n" for _ in range(500)))
    result = await read(ctx, path="big.txt")
    assert len(result.output) < 60_000
    assert "Output cut" in result.output
    assert "offset=" in result.output


async def test_read_prepare_describes_the_action(root: Path, ctx: ToolContext):
    (root / "src").mkdir()
    (root / "src" / "a.py").write_text("")
    action = await ReadTool().prepare(ReadTool.Input(path="src/a.py"), ctx)
    assert action.permission == "read"
    assert action.patterns == ["src/a.py"]
    assert action.always_pattern == "src/*"


# --- AGENTS.md of sub-folders ---------------------------------------------------------------


async def test_nested_agents_md_attached_once(root: Path, ctx: ToolContext):
    (root / "sub").mkdir()
    (root / "sub" / "AGENTS.md").write_text("Use tabs in sub.\n")
    (root / "sub" / "a.py").write_text("a\n")
    (root / "sub" / "b.py").write_text("b\n")
    first = await read(ctx, path="sub/a.py")
    assert "Use tabs in sub." in first.output
    assert 'from="sub/AGENTS.md"' in first.output
    assert first.output.index("1\ta") < first.output.index("Use tabs in sub.")
    second = await read(ctx, path="sub/b.py")
    assert "Use tabs in sub." not in second.output
    again = await read(ctx, path="sub/a.py")
    assert "Use tabs in sub." not in again.output


async def test_nested_agents_md_once_per_session(root: Path, ctx: ToolContext):
    (root / "sub").mkdir()
    (root / "sub" / "AGENTS.md").write_text("Sub rules.\n")
    (root / "sub" / "a.py").write_text("a\n")
    await read(ctx, path="sub/a.py")
    other = ToolContext(root=root, workspace=DiskWorkspace(), session_id="s2", call_id="c9", reads=ReadLedger())
    assert "Sub rules." in (await read(other, path="sub/a.py")).output


async def test_deeper_agents_md_files_all_attached_outer_first(root: Path, ctx: ToolContext):
    (root / "sub" / "deep").mkdir(parents=True)
    (root / "sub" / "AGENTS.md").write_text("OUTER\n")
    (root / "sub" / "deep" / "AGENTS.md").write_text("INNER\n")
    (root / "sub" / "deep" / "x.py").write_text("x\n")
    (root / "sub" / "y.py").write_text("y\n")
    result = await read(ctx, path="sub/deep/x.py")
    assert result.output.index("OUTER") < result.output.index("INNER")
    # The outer one was already attached: a read in sub/ adds nothing more.
    assert "OUTER" not in (await read(ctx, path="sub/y.py")).output


async def test_root_agents_md_is_never_attached_by_read(root: Path, ctx: ToolContext):
    (root / "AGENTS.md").write_text("ROOT RULES\n")
    (root / "top.py").write_text("t\n")
    (root / "sub").mkdir()
    (root / "sub" / "s.py").write_text("s\n")
    assert "ROOT RULES" not in (await read(ctx, path="top.py")).output
    assert "ROOT RULES" not in (await read(ctx, path="sub/s.py")).output
    assert ctx.reads.instructions == set()


# --- write ----------------------------------------------------------------------------------


async def test_write_prepare_touches_nothing_for_a_new_file(root: Path, ctx: ToolContext):
    action = await WriteTool().prepare(WriteTool.Input(path="new/dir/f.txt", content="hello\n"), ctx)
    assert not (root / "new").exists()
    assert list(root.iterdir()) == []
    assert action.permission == "edit"
    assert action.patterns == ["new/dir/f.txt"]
    assert action.always_pattern == "new/dir/*"
    assert action.files[0].old_text is None and action.files[0].new_text == "hello\n"


async def test_write_prepare_leaves_an_existing_file_unchanged(root: Path, ctx: ToolContext):
    target = root / "f.txt"
    target.write_text("old\n")
    await read(ctx, path="f.txt")  # a whole rewrite needs an earlier read
    before = target.stat().st_mtime_ns
    action = await WriteTool().prepare(WriteTool.Input(path="f.txt", content="new\n"), ctx)
    assert target.read_text() == "old\n"
    assert target.stat().st_mtime_ns == before
    assert action.files[0].old_text == "old\n"
    assert leftovers(root) == []


async def test_write_diff_for_a_new_file_is_git_style(root: Path, ctx: ToolContext):
    action = await WriteTool().prepare(WriteTool.Input(path="src/n.py", content="a\nb\n"), ctx)
    lines = action.diff.splitlines()
    assert lines[0] == "--- /dev/null"
    assert lines[1] == "+++ b/src/n.py"
    assert lines[2].startswith("@@ -0,0 +1,2 @@")
    assert lines[3:] == ["+a", "+b"]


async def test_write_diff_for_a_change_is_git_style(root: Path, ctx: ToolContext):
    (root / "f.txt").write_text("keep\nold\n")
    await read(ctx, path="f.txt")
    action = await WriteTool().prepare(WriteTool.Input(path="f.txt", content="keep\nnew"), ctx)
    lines = action.diff.splitlines()
    assert lines[0] == "--- a/f.txt"
    assert lines[1] == "+++ b/f.txt"
    assert lines[2].startswith("@@ ")
    assert " keep" in lines and "-old" in lines and "+new" in lines
    assert "\\ No newline at end of file" in lines
    # The marker follows the line that lacks the newline.
    assert lines[lines.index("+new") + 1] == "\\ No newline at end of file"


async def test_write_apply_creates_parent_dirs(root: Path, ctx: ToolContext):
    result = await run(WriteTool(), ctx, path="a/b/c.txt", content="x\ny\n")
    assert (root / "a" / "b" / "c.txt").read_text() == "x\ny\n"
    assert result.changed == ["a/b/c.txt"]
    assert "Created" in result.output
    assert "a/b/c.txt" in ctx.reads.seen
    assert leftovers(root / "a" / "b") == []


async def test_write_replaces_existing_content(root: Path, ctx: ToolContext):
    (root / "f.txt").write_text("old\n")
    await read(ctx, path="f.txt")
    result = await run(WriteTool(), ctx, path="f.txt", content="brand new\n")
    assert (root / "f.txt").read_text() == "brand new\n"
    assert "Wrote" in result.output and "Created" not in result.output


async def test_write_keeps_the_mode_of_an_existing_file(root: Path, ctx: ToolContext):
    script = root / "run.sh"
    script.write_text("#!/bin/sh\necho old\n")
    script.chmod(0o755)
    await read(ctx, path="run.sh")
    await run(WriteTool(), ctx, path="run.sh", content="#!/bin/sh\necho new\n")
    assert script.read_text() == "#!/bin/sh\necho new\n"
    assert stat.S_IMODE(script.stat().st_mode) == 0o755


async def test_write_new_file_gets_the_default_mode(root: Path, ctx: ToolContext):
    umask = os.umask(0o022)
    try:
        await run(WriteTool(), ctx, path="plain.txt", content="x")
    finally:
        os.umask(umask)
    assert stat.S_IMODE((root / "plain.txt").stat().st_mode) == 0o644


async def test_write_to_a_directory_is_a_tool_error(root: Path, ctx: ToolContext):
    (root / "src").mkdir()
    with pytest.raises(ToolError) as info:
        await WriteTool().prepare(WriteTool.Input(path="src", content="x"), ctx)
    assert "directory" in str(info.value)
    assert (root / "src").is_dir()


async def test_write_outside_is_refused(root: Path, ctx: ToolContext):
    with pytest.raises(BoundaryError):
        await WriteTool().prepare(WriteTool.Input(path="../escape.txt", content="x"), ctx)
    assert not (root.parent / "escape.txt").exists()


async def test_write_through_symlink_pointing_outside_is_refused(root: Path, ctx: ToolContext):
    outside = root.parent / "OUTSIDE"
    outside.mkdir()
    (root / "outbox").symlink_to("../OUTSIDE")
    with pytest.raises(BoundaryError):
        await WriteTool().prepare(WriteTool.Input(path="outbox/escaped.txt", content="x"), ctx)
    assert list(outside.iterdir()) == []


# --- write_atomically -----------------------------------------------------------------------


def test_write_atomically_keeps_old_file_when_replace_fails(tmp_path: Path, monkeypatch):
    target = tmp_path / "f.txt"
    target.write_bytes(b"original\n")

    def boom(src, dst):
        raise OSError("disk on fire")

    monkeypatch.setattr(workspace_mod.os, "replace", boom)
    with pytest.raises(OSError, match="disk on fire"):
        write_atomically(target, b"replacement\n")
    assert target.read_bytes() == b"original\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.txt"]


def test_write_atomically_keeps_old_file_when_writing_fails(tmp_path: Path, monkeypatch):
    target = tmp_path / "f.txt"
    target.write_bytes(b"original\n")

    def boom(fd):
        raise OSError("fsync failed")

    monkeypatch.setattr(workspace_mod.os, "fsync", boom)
    with pytest.raises(OSError, match="fsync failed"):
        write_atomically(target, b"replacement\n")
    assert target.read_bytes() == b"original\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.txt"]


async def test_failed_write_through_the_tool_leaves_the_file_intact(root: Path, ctx: ToolContext, monkeypatch):
    target = root / "f.txt"
    target.write_text("original\n")
    await read(ctx, path="f.txt")
    seen_before = dict(ctx.reads.seen)
    action = await WriteTool().prepare(WriteTool.Input(path="f.txt", content="replacement\n"), ctx)

    def boom(src, dst):
        raise OSError("no space left")

    monkeypatch.setattr(workspace_mod.os, "replace", boom)
    with pytest.raises(OSError):
        await action.apply(ctx)
    assert target.read_text() == "original\n"
    assert leftovers(root) == []
    assert ctx.reads.seen == seen_before  # nothing was written, nothing recorded


def test_write_atomically_writes_bytes_exactly(tmp_path: Path):
    target = tmp_path / "deep" / "f.bin"
    payload = b"\x00\x01crlf\r\nend"
    write_atomically(target, payload)
    assert target.read_bytes() == payload
    assert leftovers(target.parent) == []


# --- line counting agrees with git and grep (cut at "\n" only) ------------------------------


async def test_read_numbers_lines_at_newlines_only(root: Path, ctx: ToolContext):
    # A form feed and a U+2028 are characters of a line, not line breaks.
    (root / "f.py").write_text("a\fb\nc\u2028d\ne\n", encoding="utf-8")
    result = await read(ctx, path="f.py")
    assert result.output.split("\n") == ["1\ta\fb", "2\tc\u2028d", "3\te"]
    assert result.summary == "3 lines"


async def test_read_crlf_file_shows_lines_without_carriage_returns(root: Path, ctx: ToolContext):
    (root / "win.txt").write_bytes(b"one\r\ntwo\r\n")
    result = await read(ctx, path="win.txt")
    assert result.output.split("\n") == ["1\tone", "2\ttwo"]
    assert "\r" not in result.output


async def test_read_last_line_without_newline_is_shown(root: Path, ctx: ToolContext):
    (root / "f.txt").write_text("a\nb")
    result = await read(ctx, path="f.txt")
    assert result.output.split("\n") == ["1\ta", "2\tb"]


async def test_diff_of_a_file_with_a_form_feed_is_well_formed(root: Path, ctx: ToolContext):
    (root / "f.py").write_text("a\fb\nc\n")
    await read(ctx, path="f.py")
    action = await WriteTool().prepare(WriteTool.Input(path="f.py", content="a\fb\nd\n"), ctx)
    assert "No newline" not in action.diff  # both versions end with a newline
    assert action.diff.split("\n")[2:] == ["@@ -1,2 +1,2 @@", " a\fb", "-c", "+d", ""]


async def test_a_huge_file_is_read_line_by_line_not_whole(tmp_path, monkeypatch):
    import totem_engine.tools.read as read_module

    monkeypatch.setattr(read_module, "LARGE_FILE", 1000)
    (tmp_path / "big.log").write_text("".join(f"line {n}\n" for n in range(1, 501)))
    ctx = ToolContext(root=tmp_path, workspace=DiskWorkspace(), session_id="s", call_id="c")

    def never_whole(self, path):  # the whole-file path must not be taken
        raise AssertionError("read the whole file")

    monkeypatch.setattr(DiskWorkspace, "read_bytes", never_whole)
    action = await ReadTool().prepare(ReadTool.Input(path="big.log", offset=100, limit=3), ctx)
    result = await action.apply(ctx)
    assert result.output.splitlines()[:3] == ["100\tline 100", "101\tline 101", "102\tline 102"]
    assert "large (500 lines)" in result.output and "offset=103" in result.output
    assert result.summary == "500 lines"
