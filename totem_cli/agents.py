"""``totem agents list|show NAME|new NAME [--project]|edit NAME|remove NAME``: the agent files.

The agents are the project's as ``task`` would see them (api/agents.py ``project_agents``: four sources,
the last wins; an untrusted project's own files restricted). ``new`` writes an agent for this
project into the user's per-project store (``--project``: into ``.totem/agents``); ``edit`` opens
the winning file in ``$VISUAL`` or ``$EDITOR`` (a built-in agent is first copied into the user's
per-project store, which then replaces it); ``remove`` deletes the winning file.

Exit codes: 0 done, 1 refused (exists, built in, no editor), 2 no such agent or usage error.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

EXIT_REFUSED = 1
EXIT_USAGE = 2


def add_subcommands(sub: argparse._SubParsersAction, command: str | None) -> None:
    """``agents``; its actions only when it is the ``command`` given (main.build_parser)."""
    agents = sub.add_parser("agents", help="list, show, create, edit or remove agent definitions")
    agents.add_argument("--cwd", type=Path, default=None, help="project root (default: the current directory)")
    if command != "agents":
        return
    actions = agents.add_subparsers(dest="action", required=True)
    actions.add_parser("list", help="every agent: name, source, description, file")
    for name, what in (("show", "an agent's definition"), ("edit", "open an agent's file in $EDITOR"), ("remove", "delete an agent's file")):
        actions.add_parser(name, help=what).add_argument("name")
    new = actions.add_parser("new", help="write a new agent file (for this project, kept outside it)")
    new.add_argument("name")
    new.add_argument("--project", action="store_true", help="write it into the project's .totem/agents instead")
    new.add_argument("--description", default=None, help="what it is for (default: a line to edit)")


async def run(args: argparse.Namespace) -> int:
    from totem_engine.api.agents import project_agents

    root = (args.cwd or Path.cwd()).resolve()
    agents = await project_agents(root)
    for notice in agents.notices:
        print(f"! {notice}", file=sys.stderr)
    if args.action == "list":
        for name, definition in sorted(agents.definitions.items()):
            print(f"{name}\t{definition.source}\t{definition.description}\t{definition.path}")
        return 0
    if args.action == "new":
        return _new(root, args, agents)
    definition = agents.get(args.name)
    if definition is None:
        print(f"totem: there is no agent named {args.name!r} (totem agents list)", file=sys.stderr)
        return EXIT_USAGE
    if args.action == "show":
        from totem_engine.api.agents import render_agent

        print(f"# {definition.source}: {definition.path}")
        print(render_agent(definition), end="")
        return 0
    if args.action == "edit":
        return _edit(root, definition)
    from totem_engine.api.agents import remove_agent

    try:
        path = remove_agent(root, args.name, agents)
    except ValueError as exc:
        print(f"totem: {exc}", file=sys.stderr)
        return EXIT_REFUSED
    print(f"removed {path}")
    return 0


def _new(root: Path, args: argparse.Namespace, agents) -> int:
    from totem_engine.api.agents import AgentDefinition, folder, save_agent

    source = "project" if args.project else "user-project"
    target = folder(source, root) / f"{args.name}.md"
    if target.exists():
        print(f"totem: {target} exists; edit it with: totem agents edit {args.name}", file=sys.stderr)
        return EXIT_REFUSED
    definition = AgentDefinition(
        name=args.name, description=args.description or f"What {args.name} is for (edit this line)",
        prompt=f"You are {args.name}, an agent working for another agent in the user's project. Say what to do and what to answer.",
        source=source, path=str(target),
    )
    try:
        print(save_agent(root, definition))
    except ValueError as exc:
        print(f"totem: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return 0


def _edit(root: Path, definition) -> int:
    import shlex
    import shutil
    import subprocess
    from dataclasses import replace

    from totem_engine.api.agents import save_agent

    # The editor is checked before a built-in is copied: a copy replaces the built-in for good.
    editor = shlex.split(os.environ.get("VISUAL") or os.environ.get("EDITOR") or "")
    if not editor or shutil.which(editor[0]) is None:
        where = f"{editor[0]!r} (from $VISUAL or $EDITOR) is not a command here" if editor else "set $EDITOR to edit"
        print(f"totem: {where}; the file is {definition.path or 'built in'}", file=sys.stderr)
        return EXIT_REFUSED
    if definition.source == "built-in":
        path = save_agent(root, replace(definition, source="user-project"))
        print(f"copied the built-in {definition.name} to {path}, which now replaces it", file=sys.stderr)
    else:
        path = Path(definition.path)
    code = subprocess.call([*editor, str(path)])
    if code != 0:
        print(f"totem: the editor {editor[0]} exited with {code}; the file is {path}", file=sys.stderr)
    return code
