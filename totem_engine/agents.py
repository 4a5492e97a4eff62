"""Agent definitions: who the ``task`` tool can start (seed 000 "Sub-agents", issue 17).

An agent is one Markdown file, ``<name>.md``: a front matter between ``---`` lines, the prompt
below it::

    ---
    name: reviewer                 # default: the file's name
    description: Reviews a change  # required: the model picks an agent by it
    tools: [read, grep]            # default: every built-in tool (never ``task``)
    max_steps: 20                  # default: the config's max_steps
    model: openai/gpt-4o-mini      # default: the conversation's model
    allow: [bash git diff*]        # rules "permission [pattern]", pattern "*" when left out
    deny: [bash]
    ---
    You review ...

Four sources, the last wins by name: built in (``prompts/agents/*.md``, installed as
``totem_prompts``), the user's for every project (``<user config dir>/agents``), the user's for
one project (``<user data dir>/projects/<key of the root>/agents``, outside the project), and the
project's own ``.totem/agents``. The project's files come with the project: until it is trusted
they cannot widen anything, so their ``allow`` and ``model`` are ignored and their ``max_steps``
is capped by the user's, each with a notice. The front matter is read by ``skills``' parser.
"""

from __future__ import annotations

import hashlib
import logging
import re
from dataclasses import dataclass, replace
from importlib import resources
from importlib.abc import Traversable
from pathlib import Path
from typing import Literal

import platformdirs

from totem_engine.api.events import RuleRef
from totem_engine.skills import split_front_matter

log = logging.getLogger(__name__)

Source = Literal["built-in", "user", "user-project", "project"]
SOURCES: tuple[Source, ...] = ("built-in", "user", "user-project", "project")
PROJECT_AGENTS = Path(".totem") / "agents"
_NAME = re.compile(r"^[A-Za-z0-9][\w.-]*$")
_ITEM = re.compile(r'\s*(?:"([^"]*)"|\'([^\']*)\'|([^,]+))\s*(?:,|$)')


@dataclass(frozen=True)
class AgentDefinition:
    """One agent. ``tools`` None: every built-in tool; ``max_steps`` / ``model`` None: the
    conversation's; ``allow`` / ``deny``: rules as ``"permission [pattern]"``; ``path``: its file."""

    name: str
    description: str
    prompt: str
    source: Source
    path: str
    tools: tuple[str, ...] | None = None
    max_steps: int | None = None
    model: str | None = None
    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()

    def rules(self) -> list[RuleRef]:
        """Its ``allow`` and ``deny`` as permission rules, their source naming the agent, so
        "explain" says which rule decided."""
        source = f"agent {self.name}"
        return [
            RuleRef(source=source, permission=permission, pattern=pattern, action=action)
            for action, entries in (("allow", self.allow), ("deny", self.deny))
            for permission, pattern in map(_rule, entries)
        ]

    def to_wire(self) -> dict:
        """The camelCase form of ``totem/agents`` and ``totem agents show --json``."""
        return {
            "name": self.name, "description": self.description, "source": self.source, "file": self.path,
            "tools": list(self.tools) if self.tools is not None else None, "maxSteps": self.max_steps,
            "model": self.model, "allow": list(self.allow), "deny": list(self.deny), "prompt": self.prompt,
        }


def _rule(entry: str) -> tuple[str, str]:
    permission, _, pattern = entry.strip().partition(" ")
    return permission, pattern.strip() or "*"


def items(value: str) -> list[str]:
    """A front matter list: ``[a, "b c"]``, a block of ``- a`` lines, or ``a, b``."""
    value = value.strip()
    if not value:
        return []
    if value.startswith("[") and value.endswith("]"):
        value = value[1:-1]
    elif value.startswith("- "):
        return [_unquoted(line[2:]) for line in value.split("\n") if line.startswith("- ") and line[2:].strip()]
    return [next(g for g in m.groups() if g is not None).strip() for m in _ITEM.finditer(value) if m.group(0).strip(" ,")]


def _unquoted(text: str) -> str:
    text = text.strip()
    return text[1:-1] if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"" else text


def parse_agent(text: str, *, source: Source, path: str, fallback_name: str) -> AgentDefinition:
    """The definition in ``text``; ValueError saying what is wrong (no description, a bad
    ``max_steps``, a model that is not ``provider/model``)."""
    meta, body = split_front_matter(text)
    name = meta.get("name", "").strip() or fallback_name
    if not _NAME.match(name):
        raise ValueError(f"the name {name!r} is not a word (letters, digits, '-', '_', '.')")
    description = " ".join(meta.get("description", "").split())
    if not description:
        raise ValueError("it has no description")
    max_steps = None
    if meta.get("max_steps", "").strip():
        try:
            max_steps = int(meta["max_steps"])
        except ValueError:
            raise ValueError(f"max_steps {meta['max_steps']!r} is not a number") from None
        if max_steps < 0:
            raise ValueError("max_steps is below 0")
    model = meta.get("model", "").strip() or None
    if model is not None and "/" not in model:
        raise ValueError(f"the model {model!r} is not provider/model")
    tools = tuple(items(meta["tools"])) if "tools" in meta else None
    return AgentDefinition(
        name=name, description=description, prompt=body.strip(), source=source, path=path, tools=tools,
        max_steps=max_steps, model=model, allow=tuple(items(meta.get("allow", ""))), deny=tuple(items(meta.get("deny", ""))),
    )


def render_agent(definition: AgentDefinition) -> str:
    """The file text of ``definition`` (what ``parse_agent`` reads back)."""
    lines = ["---", f"name: {definition.name}", f"description: {definition.description}"]
    if definition.tools is not None:
        lines.append(f"tools: [{', '.join(definition.tools)}]")
    if definition.max_steps is not None:
        lines.append(f"max_steps: {definition.max_steps}")
    if definition.model:
        lines.append(f"model: {definition.model}")
    for key, entries in (("allow", definition.allow), ("deny", definition.deny)):
        if entries:
            lines.append(f"{key}: [{', '.join(_quoted(e) for e in entries)}]")
    return "\n".join([*lines, "---", definition.prompt.strip(), ""])


def _quoted(entry: str) -> str:
    return f'"{entry}"' if any(c in entry for c in ",[]'\"#") or " " in entry else entry


def project_key(root: Path) -> str:
    """The key of a project root in the user's per-project store."""
    return hashlib.sha256(str(Path(root).resolve()).encode("utf-8")).hexdigest()[:16]


def folder(source: Source, root: Path) -> Path:
    """Where the agents of ``source`` (not built in) are written."""
    if source == "user":
        return Path(platformdirs.user_config_dir("totem")) / "agents"
    if source == "user-project":
        return Path(platformdirs.user_data_dir("totem")) / "projects" / project_key(root) / "agents"
    if source == "project":
        return Path(root) / PROJECT_AGENTS
    raise ValueError(f"built-in agents are not written: {source}")


def _files(source: Source, root: Path) -> list[Traversable]:
    place: Traversable = resources.files("totem_prompts").joinpath("agents") if source == "built-in" else folder(source, root)
    try:
        entries = sorted(place.iterdir(), key=lambda e: e.name) if place.is_dir() else []
    except OSError:
        return []
    return [entry for entry in entries if entry.name.endswith(".md") and entry.is_file()]


def project_files(root: Path, kind: str = "agents") -> list[str]:
    """The project's own ``.totem/<kind>/*.md``, project-relative: what the trust question names."""
    place = Path(root) / ".totem" / kind
    try:
        return sorted(f".totem/{kind}/{p.name}" for p in place.iterdir() if p.name.endswith(".md") and p.is_file())
    except OSError:
        return []


@dataclass
class Agents:
    """The agents of a project, by name, and what an untrusted project's files lost (notices)."""

    definitions: dict[str, AgentDefinition]
    notices: list[str]

    def get(self, name: str) -> AgentDefinition | None:
        return self.definitions.get(name)


def discover_agents(root: Path, *, trusted: bool, max_steps: int) -> Agents:
    """Every source's agents, the last winning by name. ``trusted``: the project is; else its
    files are restricted (``max_steps``: the user's cap, 0 = none). A file that cannot be read or
    is wrong is skipped with a notice."""
    found: dict[str, AgentDefinition] = {}
    notices: list[str] = []
    inside = Path(root).resolve()
    for source in SOURCES:
        for file in _files(source, root):
            shown = f".totem/agents/{file.name}" if source == "project" else str(file)
            if source == "project" and not Path(str(file)).resolve().is_relative_to(inside):
                notices.append(f"The agent file {shown} points outside the project; skipped.")
                continue
            try:
                definition = parse_agent(
                    file.read_text(encoding="utf-8"), source=source, path=str(file), fallback_name=file.name[: -len(".md")]
                )
            except (OSError, UnicodeDecodeError, ValueError) as exc:
                notices.append(f"The agent file {shown} was skipped: {exc}.")
                continue
            if source == "project" and not trusted:
                definition, lost = restrict(definition, max_steps)
                if lost:
                    notices.append(
                        f"{shown} is in a project that is not trusted, so these settings of it were ignored: "
                        f"{', '.join(lost)}. Run `totem trust {root}` to trust this project."
                    )
            found[definition.name] = definition
    return Agents(definitions=found, notices=notices)


def restrict(definition: AgentDefinition, max_steps: int) -> tuple[AgentDefinition, list[str]]:
    """An untrusted project's agent: no ``allow``, no model, ``max_steps`` at most the user's."""
    lost: list[str] = [f"allow {entry!r}" for entry in definition.allow]
    if definition.model:
        lost.append(f"model {definition.model}")
    steps = definition.max_steps
    if max_steps and (steps is None or steps == 0 or steps > max_steps):
        if steps is not None:
            lost.append(f"max_steps {steps} (above {max_steps})")
        steps = max_steps
    return replace(definition, allow=(), model=None, max_steps=steps), lost


def save_agent(root: Path, definition: AgentDefinition) -> Path:
    """Write ``definition`` into its source's folder (``definition.source``, not built in);
    ValueError for a name that is not a word."""
    if not _NAME.match(definition.name):
        raise ValueError(f"the name {definition.name!r} is not a word (letters, digits, '-', '_', '.')")
    target = folder(definition.source, root) / f"{definition.name}.md"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(render_agent(definition), encoding="utf-8")
    return target


def remove_agent(root: Path, name: str, agents: Agents) -> Path:
    """Delete the file of the agent ``name`` wins by; LookupError when there is none, ValueError
    for a built-in one (a file of the same name elsewhere replaces it instead)."""
    definition = agents.get(name)
    if definition is None:
        raise LookupError(f"there is no agent named {name!r}")
    if definition.source == "built-in":
        raise ValueError(f"{name} is built in; write an agent of the same name to replace it")
    path = Path(definition.path)
    path.unlink()
    return path
