"""Skills: instructions for one kind of task, listed in the system prompt, loaded on demand.

A skill is a folder holding ``SKILL.md``: front matter between ``---`` lines with ``name`` and
``description``, the body below. Built-in skills are ``prompts/skills/<folder>/`` (installed as
``totem_prompts``); a project's own are ``<project>/.totem/skills/<folder>/``, and a project skill
with the same name replaces the built-in one (seed 000 "The prompt"). The system prompt lists
each skill's name and description; the ``skill`` tool returns the body when the agent asks.

The front matter is read by a small parser of ``key: value`` lines (quoted values, indented
continuation lines, ``>`` and ``|`` blocks), enough for SKILL.md, without a YAML dependency.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from importlib import resources
from importlib.abc import Traversable
from pathlib import Path

log = logging.getLogger(__name__)

SKILL_FILE = "SKILL.md"
PROJECT_SKILLS = Path(".totem") / "skills"
# Built-in skills that only Total.js projects get.
TOTALJS_SKILLS = frozenset({"totaljs-conventions"})
MAX_DESCRIPTION = 1024  # characters shown in the system prompt

_KEY = re.compile(r"^(?P<key>[A-Za-z_][\w-]*)\s*:\s*(?P<value>.*)$")


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    source: str  # "built-in" or ".totem/skills"
    location: Traversable  # the SKILL.md file

    def body(self) -> str:
        """The text below the front matter, read now (a skill's body loads on demand)."""
        return split_front_matter(self.location.read_text(encoding="utf-8"))[1].strip()


def split_front_matter(text: str) -> tuple[dict[str, str], str]:
    """``({key: value}, body)``; text without front matter is all body."""
    text = text.removeprefix("\ufeff")
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        return {}, text
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() in ("---", "..."))
    except StopIteration:
        return {}, text
    return parse_front_matter(lines[1:end]), "\n".join(lines[end + 1 :])


def parse_front_matter(lines: list[str]) -> dict[str, str]:
    """Top-level ``key: value`` pairs. A value continues on indented lines (joined with a space,
    or with newlines after ``|`` and for a block list of ``- item`` lines); a value in quotes loses
    them; nested keys are kept as text."""
    data: dict[str, str] = {}
    key: str | None = None
    block: str | None = None  # "|" keeps newlines, ">" folds
    parts: list[str] = []

    def finish() -> None:
        if key is None:
            return
        # A block list (``- item`` lines under the key) keeps one item a line (agents.items).
        listed = block is None and parts[:1] == [""] and all(p.startswith("- ") for p in parts[1:] if p)
        joiner = "\n" if block == "|" or listed else " "
        data[key] = _unquote(joiner.join(p for p in parts if p or block == "|").strip())

    for raw in lines:
        line = raw.rstrip("\r")
        if not line.strip() or line.lstrip().startswith("#") and not line[:1].isspace():
            if block == "|" and key is not None:
                parts.append("")
            continue
        match = _KEY.match(line) if not line[:1].isspace() else None
        if match:
            finish()
            key, value = match["key"], match["value"].strip()
            block = value[0] if value[:1] in ("|", ">") else None
            parts = [] if block else [value]
        elif key is not None:
            parts.append(line.strip())
    finish()
    return data


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in ("'", '"'):
        inner = value[1:-1]
        return inner.replace("''", "'") if value[0] == "'" else inner.replace('\\"', '"')
    return value


def read_skill(location: Traversable, source: str) -> Skill | None:
    """The skill in ``location`` (a SKILL.md), or None when it has no description or cannot be read.

    A missing ``name`` is the folder's name.
    """
    try:
        meta, _ = split_front_matter(location.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        log.warning("skill %s cannot be read: %s", location, exc)
        return None
    folder = Path(str(location)).parent.name
    name = " ".join(meta.get("name", "").split()) or folder
    description = " ".join(meta.get("description", "").split())
    if not description:
        log.warning("skill %s has no description; skipped", location)
        return None
    if len(description) > MAX_DESCRIPTION:
        description = description[: MAX_DESCRIPTION - 3].rstrip() + "..."
    return Skill(name=name, description=description, source=source, location=location)


def builtin_skills(*, totaljs: bool) -> list[Skill]:
    folder = resources.files("totem_prompts").joinpath("skills")
    found: list[Skill] = []
    if not folder.is_dir():
        return found
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        file = entry.joinpath(SKILL_FILE)
        if not entry.is_dir() or not file.is_file():
            continue
        skill = read_skill(file, "built-in")
        if skill is not None and (totaljs or skill.name not in TOTALJS_SKILLS):
            found.append(skill)
    return found


def project_skills(root: Path) -> list[Skill]:
    """The project's ``.totem/skills/*/SKILL.md``; a file that resolves outside the project is skipped."""
    folder = Path(root) / PROJECT_SKILLS
    found: list[Skill] = []
    try:
        entries = sorted(folder.iterdir(), key=lambda e: e.name)
    except OSError:
        return found
    inside = Path(root).resolve()
    for entry in entries:
        file = entry / SKILL_FILE
        if not file.is_file():
            continue
        if not file.resolve().is_relative_to(inside):
            log.warning("skill %s points outside the project; skipped", file)
            continue
        skill = read_skill(file, str(PROJECT_SKILLS))
        if skill is not None:
            found.append(skill)
    return found


def discover(root: Path, *, totaljs: bool) -> list[Skill]:
    """The skills of a session, sorted by name: built in (the Total.js ones only when ``totaljs``),
    then the project's, which replace built-in skills of the same name."""
    skills: dict[str, Skill] = {}
    for skill in builtin_skills(totaljs=totaljs) + project_skills(root):
        skills[skill.name] = skill
    return [skills[name] for name in sorted(skills)]


def skills_section(skills: list[Skill], intro: str) -> str:
    """The system prompt's list of skills ("" when there are none)."""
    if not skills:
        return ""
    lines = ["<skills>", intro, *(f"- {s.name}: {s.description}" for s in skills), "</skills>"]
    return "\n".join(lines)
