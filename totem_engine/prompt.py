"""The system prompt, assembled in a fixed order from files and functions (seed 000 "The prompt").

1. ``prompts/base.txt`` or, for a small model, ``prompts/small.txt`` (and ``prompts/plan.txt`` in plan mode); 2. in a Total.js project, the
primer ``prompts/totaljs.txt``; 3. the environment; 4. the project's root AGENTS.md, the files it
points to (instruction_pointers.py) and what was loaded of them; 5. the name and description of
each skill (totem_engine.skills; the ``skill`` tool loads a body). The tool definitions travel in
the request's own ``tools`` field. The result depends only on the project, the mode, the session's
Total.js detection, its skills and the day, so it is byte-identical across the steps of a session
and servers that cache a prompt prefix reuse it.
"""

from __future__ import annotations

import datetime
import platform
from collections.abc import Callable, Sequence
from pathlib import Path

from totem_engine.instruction_pointers import INSTRUCTIONS_FILE, Pointers, follow
from totem_engine.prompt_files import prompt
from totem_engine.skills import Skill, skills_section


def environment(root: Path, today: datetime.date | None = None) -> str:
    today = today or datetime.date.today()
    is_git = (root / ".git").exists()
    return "\n".join(
        [
            "<environment>",
            f"Working directory: {root}",
            f"Platform: {platform.system().lower()}",
            f"Git repository: {'yes' if is_git else 'no'}",
            f"Date: {today.isoformat()}",
            "</environment>",
        ]
    )


def project_instructions(root: Path, *, readable: Callable[[str], bool] | None = None, small: bool = False) -> str:
    """The root AGENTS.md, then each file it points to, then which were loaded and which not."""
    path = root / INSTRUCTIONS_FILE
    if not path.is_file():
        return ""
    text = path.read_text(encoding="utf-8", errors="replace").strip()
    if not text:
        return ""
    pointers = follow(root, text, readable=readable, small=small)
    blocks = [_block(INSTRUCTIONS_FILE, text)]
    for loaded in pointers.loaded:
        note = f"\n[cut: the first {len(loaded.text)} characters of {loaded.size} bytes; read the file for the rest]" if loaded.cut else ""
        blocks.append(_block(loaded.path, loaded.text + note))
    if pointers.loaded or pointers.skipped:
        blocks.append(_pointers_note(pointers))
    return "\n\n".join(blocks)


def _block(source: str, text: str) -> str:
    return f"<instructions from=\"{source}\">\n{text}\n</instructions>"


def _pointers_note(pointers: Pointers) -> str:
    loaded = ", ".join(f"{item.path} (cut)" if item.cut else item.path for item in pointers.loaded) or "none"
    skipped = "; ".join(f"{target} ({reason})" for target, reason in pointers.skipped) or "none"
    return prompt("instruction_pointers.txt").format(loaded=loaded, skipped=skipped)


def system_prompt(
    root: Path,
    mode: str,
    today: datetime.date | None = None,
    *,
    totaljs: bool = False,
    skills: Sequence[Skill] = (),
    small: bool = False,
    persona: str | None = None,
    readable: Callable[[str], bool] | None = None,
) -> str:
    """``totaljs``: the session's detection (checks.totaljs.is_totaljs_project), decided once;
    ``skills``: the session's skills (skills.discover), listed by name and description;
    ``small``: a small model's short rules (``prompts/small.txt``) instead of ``base.txt``, and
    a quarter of the room for AGENTS.md's pointed files;
    ``persona``: a sub-agent's own prompt (its definition's body) instead of either;
    ``readable(rel)``: whether ``read`` opens a project file without asking (a pointed file that
    it would not is left out)."""
    parts = [persona if persona is not None else prompt("small.txt" if small else "base.txt")]
    if mode == "plan":
        parts.append(prompt("plan.txt"))
    if totaljs:
        parts.append(prompt("totaljs.txt"))
    parts.append(environment(root, today))
    instructions = project_instructions(root, readable=readable, small=small)
    if instructions:
        parts.append(instructions)
    listed = skills_section(list(skills), prompt("skills_intro.txt"))
    if listed:
        parts.append(listed)
    return "\n\n".join(parts)
