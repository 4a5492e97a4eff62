"""A reviewed change (turn/review.py): the model's action turned into what the user accepted."""

from __future__ import annotations

from pathlib import Path

import pytest

from totem_engine.tools.base import ToolContext
from totem_engine.tools.edit import EditTool
from totem_engine.tools.freshness import content_hash
from totem_engine.tools.patch import PatchTool
from totem_engine.tools.write import WriteTool
from totem_engine.turn.review import DIFF_CHARS, ReviewedChange, reviewed
from totem_engine.vocab.tools import ToolError


async def write_action(ctx: ToolContext, path: str, content: str):
    return await WriteTool().prepare(WriteTool.Input(path=path, content=content), ctx)


def seen(ctx: ToolContext, root: Path, rel: str) -> None:
    ctx.reads.seen[rel] = content_hash((root / rel).read_bytes())


async def test_no_answer_or_the_proposal_taken_whole_is_the_models_own_action(root, ctx):
    action = await write_action(ctx, "new.txt", "x\n")
    assert reviewed(action, None) is action
    assert reviewed(action, {}) is action
    assert reviewed(action, {"new.txt": "x\n"}) is action


async def test_the_accepted_text_is_written_and_marked_seen(root, ctx):
    (root / "a.txt").write_text("one\ntwo\n")
    seen(ctx, root, "a.txt")
    action = reviewed(await write_action(ctx, "a.txt", "ONE\nTWO\n"), {"a.txt": "ONE\ntwo\n"})
    assert isinstance(action, ReviewedChange)
    assert action.diff == "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n-one\n+ONE\n two\n"

    result = await action.apply(ctx)

    assert (root / "a.txt").read_text() == "ONE\ntwo\n"
    assert result.changed == ["a.txt"] and not result.is_error
    assert ctx.reads.seen["a.txt"] == content_hash(b"ONE\ntwo\n")
    assert "-TWO\n+two" in result.output
    assert result.summary == "applied as reviewed: a.txt changed by the user"


async def test_a_file_accepted_as_it_was_is_not_written(root, ctx):
    (root / "a.txt").write_text("a\n")
    (root / "b.txt").write_text("b\n")
    patch = "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-a\n+A\n--- a/b.txt\n+++ b/b.txt\n@@ -1 +1 @@\n-b\n+B\n"
    action = reviewed(await PatchTool().prepare(PatchTool.Input(patch=patch), ctx), {"a.txt": "a\n"})
    assert [f.path for f in action.files] == ["b.txt"]  # what the snapshot, formatter and checks see

    result = await action.apply(ctx)

    assert result.changed == ["b.txt"]
    assert (root / "b.txt").read_text() == "B\n"
    assert "a.txt: none of your change was taken" in result.output


async def test_a_new_file_of_which_nothing_was_taken_is_not_created(root, ctx):
    action = reviewed(await write_action(ctx, "new.txt", "x\n"), {"new.txt": ""})
    result = await action.apply(ctx)
    assert not (root / "new.txt").exists()
    assert result.changed == [] and "none of your change was taken" in result.output


async def test_a_bom_the_edit_left_out_of_its_view_is_kept(root, ctx):
    (root / "b.cs").write_bytes(b"\xef\xbb\xbfclass A {}\n")
    action = await EditTool().prepare(EditTool.Input(path="b.cs", old_string="class A", new_string="class B"), ctx)
    await reviewed(action, {"b.cs": "class C {}\n"}).apply(ctx)
    assert (root / "b.cs").read_bytes() == b"\xef\xbb\xbfclass C {}\n"


async def test_a_file_changed_while_the_question_was_open_is_not_written(root, ctx):
    (root / "a.txt").write_text("a\n")
    seen(ctx, root, "a.txt")
    action = reviewed(await write_action(ctx, "a.txt", "A\n"), {"a.txt": "Aa\n"})
    (root / "a.txt").write_text("typed meanwhile\n")
    with pytest.raises(ToolError, match="changed while the change waited"):
        await action.apply(ctx)
    assert (root / "a.txt").read_text() == "typed meanwhile\n"


async def test_a_long_diff_is_cut_with_a_note(root, ctx):
    proposal = "".join(f"model {n}\n" for n in range(2000))
    accepted = "".join(f"user {n}\n" for n in range(2000))
    action = reviewed(await write_action(ctx, "big.txt", proposal), {"big.txt": accepted})
    report = action.report()
    assert len(report) < DIFF_CHARS + 1000
    assert "read big.txt to see the rest" in report
