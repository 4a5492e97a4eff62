"""A change the user reviewed before it was applied, applied as they accepted it.

An editor's "allow once" may carry, for each file of the proposal, the whole text the user
accepts: some hunks taken, some left, or the proposal edited by hand (docs/protocol.md,
``totem/permission``). ``reviewed`` turns the model's prepared action into the one to apply: the
model's own when every file is taken as proposed, else a ``ReviewedChange`` that writes exactly
the accepted texts, leaves a file accepted with its text of before untouched, and tells the model
what the user changed relative to its proposal (a short diff per file), so that its next step
builds on the user's version. Claude Code throws such edits away on Accept; users asked for this.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from totem_engine.prompt_files import prompt
from totem_engine.tools.base import Action, ProposedFile, ToolContext, ToolResult
from totem_engine.tools.freshness import mark_seen
from totem_engine.vocab.accounts import cut_lines
from totem_engine.vocab.tools import ToolError
from totem_engine.workspace.diff import unified_diff

BOM = "\ufeff"
DIFF_CONTEXT = 2  # lines around each change in the diff the model is shown
DIFF_CHARS = 4000  # a longer diff is cut, with a note to read the file

Verdict = Literal["proposed", "changed", "none"]


@dataclass(frozen=True)
class FileReview:
    """One file of a reviewed change: ``before`` (None: absent), the model's ``proposed`` text
    (None: delete) and the ``accepted`` one, what is applied (None: absent)."""

    path: str
    before: str | None
    proposed: str | None
    accepted: str | None

    @property
    def verdict(self) -> Verdict:
        """``proposed``: taken as it was; ``none``: nothing of it taken; ``changed``: the user's own."""
        if self.accepted == self.proposed:
            return "proposed"
        return "none" if self.accepted == self.before else "changed"


def reviewed(action: Action, accepted: Mapping[str, str] | None) -> Action:
    """The action to apply once the user answered with ``accepted`` (path -> text, or None)."""
    if not accepted:
        return action
    reviews = []
    for file in action.files:
        text = accepted.get(file.path, file.new_text)
        if file.old_text is None and file.path in accepted and text == "":
            text = None  # a new file of which nothing was taken is not created
        reviews.append(FileReview(file.path, file.old_text, file.new_text, text))
    if all(review.verdict == "proposed" for review in reviews):
        return action
    changing = [r for r in reviews if r.accepted != r.before]
    return ReviewedChange(
        title=action.title,
        permission=action.permission,
        patterns=action.patterns,
        always_pattern=action.always_pattern,
        diff="".join(unified_diff(r.path, r.before, r.accepted) for r in changing),
        files=[ProposedFile(path=r.path, new_text=r.accepted, old_text=r.before) for r in changing],
        changes=True,
        reviews=tuple(reviews),
    )


@dataclass
class ReviewedChange(Action):
    """Writes the accepted texts of ``files`` (only those that change); ``reviews`` say, file by
    file, what the user did with the proposal."""

    reviews: tuple[FileReview, ...] = field(default_factory=tuple)

    async def apply(self, ctx: ToolContext) -> ToolResult:
        planned: list[tuple[ProposedFile, Path, bool]] = []
        for file in self.files:  # every file checked before any is written
            target = ctx.root / file.path
            planned.append((file, target, await _unchanged_since_prepare(ctx, target, file)))
        written: list[ProposedFile] = []
        for file, target, bom in planned:
            try:
                await _put(ctx, target, file.new_text, bom)
            except OSError as exc:
                for done in reversed(written):
                    with contextlib.suppress(OSError):
                        await _put(ctx, ctx.root / done.path, done.old_text, False)
                raise ToolError(f"Writing {file.path} failed ({exc}); the files already written were put back.") from None
            written.append(file)
        for file, target, bom in planned:
            if file.new_text is not None:
                mark_seen(ctx, file.path, _encoded(file.new_text, bom))
        said = ", ".join(f"{r.path} {_SUMMARY[r.verdict]}" for r in self.reviews)
        return ToolResult(output=self.report(), summary=f"applied as reviewed: {said}", changed=[f.path for f in self.files])

    def report(self) -> str:
        """What the model is told: each file's fate, the user's changes as a diff from its proposal."""
        lines = []
        for review in self.reviews:
            if review.verdict == "proposed":
                lines.append(f"- {review.path}: taken as you proposed it.")
            elif review.verdict == "none":
                lines.append(f"- {review.path}: none of your change was taken; the file is as it was.")
            else:
                diff = unified_diff(review.path, review.proposed, review.accepted, context=DIFF_CONTEXT)
                note = f"[The diff is cut here; read {review.path} to see the rest.]"
                shown = cut_lines(diff, DIFF_CHARS, lambda kept, note=note: note)
                lines.append(f"- {review.path}: the user changed your proposal; from your proposal to what was applied:\n```diff\n{shown.rstrip()}\n```")
        return prompt("reviewed_change.txt").format(files="\n".join(lines))


_SUMMARY: dict[Verdict, str] = {"proposed": "as proposed", "changed": "changed by the user", "none": "left unchanged"}


async def _unchanged_since_prepare(ctx: ToolContext, target: Path, file: ProposedFile) -> bool:
    """Whether the file had a BOM that the tool's view left out; ToolError when it is no longer
    what the proposal was made from (changed while the question was open)."""
    stat = await ctx.workspace.stat(target)
    now = None if stat is None else (await ctx.workspace.read_bytes(target)).decode("utf-8", errors="replace")
    if now == file.old_text:
        return False
    if now is not None and now.startswith(BOM) and now[len(BOM):] == file.old_text:
        return True
    raise ToolError(f"{file.path} changed while the change waited for permission; nothing was written. Read it again.")


async def _put(ctx: ToolContext, target: Path, text: str | None, bom: bool) -> None:
    if text is None:
        if await ctx.workspace.stat(target) is not None:
            await ctx.workspace.delete(target)
        return
    await ctx.workspace.write_bytes(target, _encoded(text, bom))


def _encoded(text: str, bom: bool) -> bytes:
    return ((BOM if bom else "") + text).encode("utf-8")
