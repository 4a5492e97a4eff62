"""Slash commands: ``/NAME arguments`` typed as a prompt (seed 000 "Commands", issue 17).

A command is one Markdown file, ``<name>.md``, in the same form as an agent (agents.py): a front
matter with ``description`` (and optionally ``agent`` and ``model`` to run as), the prompt below.
In the prompt ``$ARGUMENTS`` is replaced by the arguments and ``$1`` to ``$9`` by their words;
arguments given to a prompt with no placeholder are added after it. Three places, the last wins
by name: built in (``prompts/commands/*.md``: ``/init``), the user's (``<user config
dir>/commands``) and the project's ``.totem/commands``. ``/undo`` and ``/compact`` are built-in actions, not
prompts (``ACTIONS``). Text that starts with ``/`` and names no command is a prompt
as it is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from importlib import resources
from importlib.abc import Traversable
from pathlib import Path
from typing import Literal

import platformdirs

from totem_engine.skills import split_front_matter

Source = Literal["built-in", "user", "project"]
# The actions a user types as slash commands, each with what it does (ACP's
# ``available_commands_update``, LSP ``totem/commands``, completion); ``Engine.prompt`` does them
# (api/engine.py). ``/retry`` and ``/regenerate`` start a turn; the others answer at once (api/replies.py).
ACTIONS = {
    "compact": "Summarise the conversation so far into a checkpoint; later turns start from it.",
    "diff": "Show what this session changed in the project, as a unified diff.",
    "fork": "Copy this session as it stands into a new session, to try another way there.",
    "redo": "Put back the change the last /undo took away.",
    "regenerate": "Answer the last request again; the earlier answer stays, a variant.",
    "retry": "Take up the last turn, which failed, from its last completed step.",
    "rewind": "Go back before the last request (/rewind N: the last N), the conversation and its file changes.",
    "undo": "Put back the files the last turn changed.",
}
_INVOCATION = re.compile(r"^/(?P<name>[A-Za-z0-9][\w.-]*)(?:\s+(?P<args>.*))?$", re.DOTALL)
# ``$1``..``$9`` only: a price such as ``$5.00`` or ``$12`` in a prompt is text, not a word.
_PLACEHOLDER = re.compile(r"\$ARGUMENTS|\$([1-9])(?!\d|\.\d)")


@dataclass(frozen=True)
class Command:
    name: str
    description: str
    prompt: str
    source: Source
    path: str
    agent: str | None = None
    model: str | None = None

    def to_wire(self) -> dict:
        return {"name": self.name, "description": self.description, "source": self.source, "file": self.path,
                "agent": self.agent, "model": self.model}


@dataclass(frozen=True)
class Prompt:
    """What the user typed, made ready for a turn: ``text`` is what the model receives (the
    expansion), ``typed`` what the conversation shows; ``action`` a built-in action instead of a
    turn (``undo``); ``agent`` and ``model`` the command's to run as."""

    typed: str
    text: str
    command: str | None = None
    action: str | None = None
    arguments: str = ""  # what follows an action's name (``/rewind 2``)
    agent: str | None = None
    model: str | None = None


def parse_command(text: str, *, source: Source, path: str, fallback_name: str) -> Command:
    """ValueError when it has no description or its model is not ``provider/model``."""
    meta, body = split_front_matter(text)
    description = " ".join(meta.get("description", "").split())
    if not description:
        raise ValueError("it has no description")
    model = meta.get("model", "").strip() or None
    if model is not None and "/" not in model:
        raise ValueError(f"the model {model!r} is not provider/model")
    return Command(
        name=meta.get("name", "").strip() or fallback_name, description=description, prompt=body.strip(),
        source=source, path=path, agent=meta.get("agent", "").strip() or None, model=model,
    )


def _folder(source: Source, root: Path) -> Traversable:
    if source == "built-in":
        return resources.files("totem_prompts").joinpath("commands")
    if source == "user":
        return Path(platformdirs.user_config_dir("totem")) / "commands"
    return Path(root) / ".totem" / "commands"


def discover_commands(root: Path, *, trusted: bool) -> tuple[dict[str, Command], list[str]]:
    """The commands by name (the last source winning) and the notices of files skipped or, in
    an untrusted project, of a model ignored."""
    found: dict[str, Command] = {}
    notices: list[str] = []
    inside = Path(root).resolve()
    for source in ("built-in", "user", "project"):
        place = _folder(source, root)
        try:
            files = sorted((f for f in place.iterdir() if f.name.endswith(".md") and f.is_file()), key=lambda f: f.name)
        except OSError:
            continue
        for file in files:
            shown = f".totem/commands/{file.name}" if source == "project" else str(file)
            # A link out of the project would send a file of the user's to the model as a prompt.
            if source == "project" and not Path(str(file)).resolve().is_relative_to(inside):
                notices.append(f"The command file {shown} points outside the project; skipped.")
                continue
            try:
                command = parse_command(file.read_text(encoding="utf-8"), source=source, path=str(file), fallback_name=file.name[:-3])
            except (OSError, UnicodeDecodeError, ValueError) as exc:
                notices.append(f"The command file {shown} was skipped: {exc}.")
                continue
            if source == "project" and not trusted and command.model:
                notices.append(
                    f"{shown} is in a project that is not trusted, so its model {command.model} was ignored. "
                    f"Run `totem trust {root}` to trust this project."
                )
                command = replace(command, model=None)
            if command.name in ACTIONS:
                # /undo and /compact act on the user's files and session: no file may replace them.
                notices.append(f"The command file {shown} was skipped: /{command.name} is built in and cannot be replaced.")
                continue
            found[command.name] = command
    return found, notices


def expand(command: Command, arguments: str) -> str:
    """The command's prompt with ``$ARGUMENTS`` and ``$1``, ``$2``, … filled in (a missing word is
    empty), in one pass, so a ``$1`` the user typed stays as typed; arguments for a prompt with
    neither come after it. A ``$`` followed by anything else stays as it is (``$5.00`` is not a word)."""
    words = arguments.split()

    def fill(match: re.Match) -> str:
        if match[0] == "$ARGUMENTS":
            return arguments
        n = int(match[1])
        return words[n - 1] if 0 < n <= len(words) else ""

    text, filled = _PLACEHOLDER.subn(fill, command.prompt)
    if arguments and not filled:
        text = f"{text}\n\n{arguments}"
    return text


def prepare(typed: str, commands: dict[str, Command]) -> Prompt:
    """``typed`` as a ``Prompt``: a command expanded, a built-in action, or the text as it is."""
    match = _INVOCATION.match(typed.strip())
    if match is None:
        return Prompt(typed=typed, text=typed)
    name, arguments = match["name"], (match["args"] or "").strip()
    if name in ACTIONS:
        return Prompt(typed=typed, text=typed, command=name, action=name, arguments=arguments)
    command = commands.get(name)
    if command is not None:
        return Prompt(typed=typed, text=expand(command, arguments), command=name, agent=command.agent, model=command.model)
    return Prompt(typed=typed, text=typed)
