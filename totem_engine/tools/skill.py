"""skill: the body of one skill, loaded when the agent asks for it (read-only).

The skills are the session's (``skills.discover``), given when the tool is built so the tool and
the system prompt's list agree; a tool built without them discovers the project's skills at the
call, with Total.js detection on the project's own files (config ``totaljs = "auto"``).
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio
from pydantic import Field

from totem_engine.skills import Skill, discover
from totem_engine.tools.base import Action, Tool, ToolContext, ToolInput, ToolResult
from totem_engine.vocab.tools import ToolError


class SkillInput(ToolInput):
    name: str = Field(description="The skill's name, exactly as listed in the system prompt.")


@dataclass
class SkillAction(Action):
    skill: Skill | None = None

    async def apply(self, ctx: ToolContext) -> ToolResult:
        assert self.skill is not None
        skill = self.skill
        try:
            body = await anyio.to_thread.run_sync(skill.body)
        except (OSError, UnicodeDecodeError) as exc:
            raise ToolError(f"The skill {skill.name} could not be read ({exc}).") from None
        notes = []
        if len(body) > ctx.output_budget:
            body = body[: ctx.output_budget]
            notes.append(f"[The skill was cut at {ctx.output_budget} characters.]")
        output = "\n".join([f'<skill name="{skill.name}">', body, "</skill>", *notes])
        return ToolResult(output=output, summary=f"{skill.name} ({skill.source})", metadata={"skill": skill.name})


class SkillTool(Tool):
    name = "skill"
    read_only = True
    kept_on_compaction = True
    Input = SkillInput

    def __init__(self, skills: Sequence[Skill] | None = None):
        self.skills = list(skills) if skills is not None else None

    async def _available(self, root: Path) -> list[Skill]:
        if self.skills is not None:
            return self.skills

        def find() -> list[Skill]:
            from totem_engine.checks.totaljs.detect import is_totaljs_project

            return discover(root, totaljs=is_totaljs_project(root))

        return await anyio.to_thread.run_sync(find)

    async def prepare(self, args: SkillInput, ctx: ToolContext) -> Action:
        available = await self._available(ctx.root)
        wanted = args.name.strip()
        skill = next((s for s in available if s.name == wanted), None)
        if skill is None:
            skill = next((s for s in available if s.name.lower() == wanted.lower()), None)
        if skill is None:
            names = [s.name for s in available]
            if not names:
                raise ToolError("There are no skills in this session.")
            close = difflib.get_close_matches(wanted, names, n=1)
            hint = f" Did you mean {close[0]}?" if close else ""
            raise ToolError(f"There is no skill named {wanted!r}.{hint} Available: {', '.join(names)}.")
        return SkillAction(
            title=f"Load skill {skill.name}",
            permission="skill",
            patterns=[skill.name],
            always_pattern=skill.name,
            notes=list(args.notes),
            skill=skill,
        )
