"""The terminal front end of ``totem run``: the answer on stdout, activity on stderr, asks on the TTY.

Tool activity is one line per call and one indented line for what came back (seed 003 "Reading
the chat"). With ``--json`` stdout carries the engine's events as NDJSON and nothing else.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TextIO

import anyio

from totem_cli.answer import AnswerText
from totem_engine.api import events as ev
from totem_engine.api.frontend import PermissionReply, PermissionRequest, QuestionRequest
from totem_engine.api.frontend import MCP_START

_CHOICES = {
    "y": "allow_once",
    "a": "allow_always",
    "n": "reject_once",
    "r": "reject_always",
}


class TerminalFrontEnd:
    def __init__(
        self,
        *,
        json_mode: bool,
        assume_yes: bool,
        interactive: bool,
        hold_text: bool = False,
        out: TextIO = sys.stdout,
        err: TextIO = sys.stderr,
    ):
        """``hold_text``: stdout is not a terminal (``> answer.md``): each step's text is written
        when the step ends, so a step that is retried leaves nothing behind in the answer. A
        small model's file block shows as one line saying what was written (answer.py)."""
        self.json_mode = json_mode
        self.answer = AnswerText(out, hold=hold_text)
        self._titles: dict[str, str] = {}
        self._last_started: str | None = None
        self.assume_yes = assume_yes
        self.interactive = interactive
        self.out = out
        self.err = err
        self._reasoning_open = False  # the reasoning's last line on stderr has no newline yet

    async def emit(self, event: ev.Event) -> None:
        if self.json_mode:
            self.out.write(json.dumps(event.to_wire(), ensure_ascii=False) + "\n")
            self.out.flush()
            return
        if event.parent_call_id is not None:
            self._nested(event)
            return
        if self.answer.step_done and not isinstance(event, (ev.ToolStart, ev.Permission, ev.ToolEnd, ev.Todo, ev.Job)):
            self.answer.flush()  # the step and its calls are over
        if isinstance(event, ev.TextDelta):
            self.answer.text(event.text)
        elif isinstance(event, ev.StepEnd):
            self.answer.step_end()
        elif isinstance(event, ev.ReasoningDelta):
            self.err.write(event.text)
            self.err.flush()
            self._reasoning_open = not event.text.endswith("\n")
        elif isinstance(event, ev.ToolStart) and event.tool == MCP_START:
            self._titles[event.call_id] = event.title  # said with its end (a question, if any, names it)
        elif isinstance(event, ev.ToolStart):
            self._end_text_line()
            self.answer.tool_start(event.call_id, event.tool, event.input)
            self._titles[event.call_id] = event.title
            self._last_started = event.call_id
            self._line(f"→ {event.title}")
            command = _command_shown(event)
            if command:
                self._line(f"   $ {command}")
        elif isinstance(event, ev.ToolEnd) and event.tool == MCP_START:
            self._end_text_line()
            self._line(f"→ {self._titles.get(event.call_id, event.tool)}")
            self._line(f"   {'error: ' if event.status == 'error' else ''}{event.summary}")
        elif isinstance(event, ev.ToolEnd):
            if self._last_started != event.call_id:
                # Calls that ran together: say again which call this result belongs to.
                self._line(f"→ {self._titles.get(event.call_id, event.tool)}")
            self._last_started = None
            prefix = {"ok": "", "error": "error: ", "denied": "", "interrupted": ""}[event.status]
            if event.exit_code:
                prefix = "failed: "  # the call worked, the command did not
            self._line(f"   {prefix}{event.summary}")
            self.answer.tool_end(event.call_id, event.status, event.summary)
        elif isinstance(event, ev.Job):
            self._end_text_line()
            code = "" if event.exit_code is None else f" (exit code {event.exit_code})"
            self._line(f"   job {event.job_id} {event.state}{code}: {event.command}")
        elif isinstance(event, ev.Forge):
            self._end_text_line()
            self._line(_forge_line(event))
        elif isinstance(event, ev.StepDiscarded):
            self.answer.discard()
            self._end_text_line()
            self._line(f"(step {event.step} discarded: {event.reason})")
        elif isinstance(event, ev.Notice) and event.call_id in self._titles:
            pass  # a server's start or failure, already said by its call's end
        elif isinstance(event, ev.Notice):
            self._end_text_line()
            self._line(f"! {event.message}")
        elif isinstance(event, ev.Error):
            self._end_text_line()
            self._line(f"error: {event.message}")
            if event.hint:
                self._line(f"  {event.hint}")
        elif isinstance(event, ev.TurnEnd):
            self.answer.flush()  # an aborted or failed step: what it said so far
            self._end_text_line()
            self._line(f"— {event.model}")

    def _nested(self, event: ev.Event) -> None:
        """A sub-agent's activity, indented under its task call on stderr; its text is not the
        answer (only its final answer comes back, as the task call's result)."""
        if isinstance(event, ev.ToolStart):
            self._end_text_line()
            self._line(f"   [{event.agent}] → {event.title}")
        elif isinstance(event, ev.ToolEnd):
            self._line(f"   [{event.agent}]    {'error: ' if event.status == 'error' else ''}{event.summary}")
        elif isinstance(event, (ev.Notice, ev.Error)):
            self._end_text_line()
            self._line(f"   [{event.agent}] ! {event.message}")

    async def permission(self, request: PermissionRequest) -> PermissionReply:
        if self.assume_yes and not request.needs_person:
            return PermissionReply("allow_once")
        if not self.interactive and request.needs_person:
            return PermissionReply(
                "reject_once",
                reason="it reaches outside this machine, which takes a person's answer (--yes does not give it;"
                " mcp_allow in the user config does)",
            )
        if not self.interactive:
            # Nobody will be there for the next ask either: the turn ends here, with how to allow.
            return PermissionReply(
                "reject_once",
                reason="nobody could be asked for permission (no terminal; --yes allows)",
                end_turn=f"{request.title} needs permission and there is no terminal to ask: the run stopped. "
                "Run it again with --yes to allow each change, or from a terminal to answer.",
            )
        self._end_text_line()
        if request.diff:
            self.err.write(request.diff if request.diff.endswith("\n") else request.diff + "\n")
        prompt = (
            f"Allow {request.title}? [y] once, [a] always ({request.permission} {request.always_pattern}), "
            "[n] reject, [r] reject always, or type feedback: "
        )
        answer = (await self._ask(prompt)).strip()
        outcome = _CHOICES.get(answer.lower())
        if outcome:
            return PermissionReply(outcome)
        return PermissionReply("reject_once", answer or None)

    async def question(self, request: QuestionRequest) -> str | None:
        if not self.interactive:
            return None
        options = "".join(f"\n  {i}. {o}" for i, o in enumerate(request.options, start=1))
        answer = (await self._ask(f"{request.question}{options}\n> ")).strip()
        if answer.isdigit() and 0 < int(answer) <= len(request.options):
            return request.options[int(answer) - 1]
        return answer

    async def ask_trust(self, root: Path, reasons: list[str]) -> bool:
        """Whether the user trusts ``root``, whose config wants ``reasons``."""
        answer = await self._ask(
            f"The project {root} has a config or agent files that set: {', '.join(reasons)}.\n"
            "Trust this project (its config may then choose providers and allow actions)? [y/N] "
        )
        return answer.strip().lower() in ("y", "yes")

    async def _ask(self, prompt: str) -> str:
        self.err.write(prompt)
        self.err.flush()
        line = await anyio.to_thread.run_sync(sys.stdin.readline, abandon_on_cancel=True)
        return line

    def _end_text_line(self) -> None:
        if self._reasoning_open:
            self.err.write("\n")
            self._reasoning_open = False
        if self.answer.open:
            self.out.write("\n")
            self.out.flush()
            self.answer.open = False

    def _line(self, text: str) -> None:
        self.err.write(text + "\n")
        self.err.flush()


def _forge_line(event: ev.Forge) -> str:
    """``Forge: Title (url), Title (url); 3 more listed`` for the pages put beside the request."""
    if not event.pages:
        found = f"{len(event.others)} results listed, no page opened" if event.others else "nothing found"
        return f"Forge ({event.query!r}): {found}"
    pages = ", ".join(f"{page.title} ({page.url})" for page in event.pages)
    more = f"; {len(event.others)} more listed" if event.others else ""
    return f"Forge: {pages}{more}"


def _command_shown(event: ev.ToolStart) -> str | None:
    """The command a bash call runs, when its title (the model's description) does not already
    show it: after an "always" answer nothing else tells the user what ran."""
    command = event.input.get("command") if event.tool == "bash" else None
    if not isinstance(command, str) or not command.strip() or event.title.startswith(f"$ {command}"):
        return None
    lines = command.strip().splitlines()
    return lines[0] + (f" … ({len(lines) - 1} more lines)" if len(lines) > 1 else "")
