"""The tool set of a run and the surfaces offered to small models.

What each tool is (read-only, changes files, kept on compaction, its surface) is declared on the
tool itself (tools/base.py ``Tool``): the turn asks the tool, never a list of names.
"""

from __future__ import annotations

from collections.abc import Sequence

from totem_engine.vocab.tools import ToolSpec
from totem_engine.jobs import Jobs
from totem_engine.terminals import Terminals
from totem_engine.skills import Skill
from totem_engine.tools.base import Tool
from totem_engine.tools.ask import AskTool
from totem_engine.tools.bash import BashTool
from totem_engine.tools.edit import EditTool
from totem_engine.tools.fetch import FetchTool
from totem_engine.tools.glob import GlobTool
from totem_engine.tools.grep import GrepTool
from totem_engine.tools.job import JobTool
from totem_engine.tools.patch import PatchTool
from totem_engine.tools.read import ReadTool
from totem_engine.tools.run_script import RunScriptTool
from totem_engine.tools.skill import SkillTool
from totem_engine.tools.terminal import TerminalTool
from totem_engine.tools.todo import TodoTool
from totem_engine.tools.write import WriteTool

def builtin_tools(
    *, skills: Sequence[Skill] | None = None, jobs: Jobs | None = None, terminals: Terminals | None = None
) -> dict[str, Tool]:
    """``skills``: the session's (skills.discover), the same list the system prompt shows; None:
    the skill tool discovers them at each call. ``jobs``: the runtime's background jobs, which
    the job tool starts and reads; None: no job tool. ``terminals``: likewise for the terminal
    tool."""
    tools: list[Tool] = [
        ReadTool(), GlobTool(), GrepTool(), WriteTool(), EditTool(), PatchTool(),
        BashTool(), FetchTool(), TodoTool(), AskTool(), SkillTool(skills), RunScriptTool(),
        *([JobTool(jobs)] if jobs is not None else []),
        *([TerminalTool(terminals)] if terminals is not None else []),
    ]
    return {tool.name: tool for tool in tools}



# The tool surface follows the model's window (seed 003): the full set costs about 2,500
# tokens of schemas, which a small window cannot spare. Each tool says the smallest surface it
# belongs to (``Tool.surface``). No `ask` in the core set (issue #9's list): a 1.5B model asked
# "Do you want to add median?" about a request that said exactly that, and a run with nobody to
# ask ended there.
SMALL_WINDOW = 65_536  # below it: the core tools only
TINY_WINDOW = 8_192  # below it: the minimal tools, each described in one sentence


def is_small(window: int | None, tier: str) -> bool:
    """A model that gets the core tools, the short prompt (prompts/small.txt), the files its
    message names, and, when it writes calls as text, whole-file blocks (seed 003)."""
    return (window is not None and window < SMALL_WINDOW) or tier == "small"


def surface(tools: dict[str, Tool], window: int | None, tier: str) -> tuple[dict[str, Tool], bool]:
    """The tools a model with this window and tier gets, and whether their descriptions are brief."""
    brief = window is not None and window < TINY_WINDOW
    return {name: tool for name, tool in tools.items() if on_surface(tool.surface, window, tier)}, brief


def on_surface(tool_surface: str, window: int | None, tier: str) -> bool:
    """Whether a tool of ``tool_surface`` (``Tool.surface``) is offered to a model with this window and tier."""
    if window is not None and window < TINY_WINDOW:
        return tool_surface == "minimal"
    if is_small(window, tier):
        return tool_surface in ("minimal", "core")
    return True


def narrowing(window: int | None, tier: str) -> str | None:
    """Why ``surface`` leaves tools out for a model with this window and tier, in words a user and
    the model both read (the session's tool list, the result of a call to a tool left out); None
    when it gets every tool."""
    if window is not None and window < TINY_WINDOW:
        return f"the model's window ({window:,} tokens) is under {TINY_WINDOW:,}: it gets the minimal tools only"
    if window is not None and window < SMALL_WINDOW:
        return f"the model's window ({window:,} tokens) is under {SMALL_WINDOW:,}: it gets the core tools only"
    if tier == "small":
        return "the model is a small one (tier small): it gets the core tools only"
    return None


def tool_specs(tools: dict[str, Tool], *, brief: bool = False) -> tuple[ToolSpec, ...]:
    """What the model is told about each tool, in a stable order (the prompt prefix stays cacheable).
    ``brief``: only the first sentence of each description."""
    return tuple(
        ToolSpec(
            name=tool.name,
            description=tool.description.split(". ", 1)[0].rstrip(".") + "." if brief and tool.description else tool.description,
            parameters=tool.parameters(),
        )
        for tool in sorted(tools.values(), key=lambda t: t.name)
    )
