"""The system prompt, assembled in a fixed order from files and functions (seed 000 "The prompt").

1. ``prompts/base.txt`` (and ``prompts/plan.txt`` in plan mode); 2. the environment; 3. the
project's root AGENTS.md. The tool definitions travel in the request's own ``tools`` field. The
result depends only on the project, the mode and the day, so it is byte-identical across the
steps of a session and servers that cache a prompt prefix reuse it.
"""

from __future__ import annotations

import datetime
import platform
from pathlib import Path

from totem_engine.prompt_files import prompt

INSTRUCTIONS_FILE = "AGENTS.md"


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


def project_instructions(root: Path) -> str:
    path = root / INSTRUCTIONS_FILE
    if not path.is_file():
        return ""
    text = path.read_text(encoding="utf-8", errors="replace").strip()
    return f"<instructions from=\"{INSTRUCTIONS_FILE}\">\n{text}\n</instructions>" if text else ""


def system_prompt(root: Path, mode: str, today: datetime.date | None = None) -> str:
    parts = [prompt("base.txt")]
    if mode == "plan":
        parts.append(prompt("plan.txt"))
    parts.append(environment(root, today))
    instructions = project_instructions(root)
    if instructions:
        parts.append(instructions)
    return "\n\n".join(parts)
