"""The API a code-mode script calls (``import totem``), served in Totem's process.

Each method runs the tool of the same name against the script's staged view of the project
(staging.py): the same path confinement, edit matching with its tolerant tiers, binary refusal
and messages as the tool gives the model. Reads are checked against the run's permission rules
as the tool's call would be, without asking: a read that would ask (a secret file) is refused,
and the model can still read it with the read tool. Writes, edits and deletes only stage; the
change set is asked about once, when the script has ended (tools/run_script.py).

``run(command)`` and ``tests()`` are ``bash`` calls of the script's: asked like one, with its
process group handling and caps. Where the session's commands run in the sandbox, a command
runs over the project as the script left it, in an overlay whose writes go back into the stage
(codemode/overlaid.py), so they join the one change set and nothing reaches the project before
it is allowed. Without the sandbox a command sees the real project: the changes staged before
it are first asked about and written as one change set (snapshotted, so undo takes them back),
and what the command itself changes is taken in as ``bash``'s is, not staged. That part of a
script is then not transactional (docs/decisions.md).

Methods and their results (JSON values): ``files(pattern) -> [path]``; ``read(path, offset,
limit) -> text``; ``search(pattern, path, include) -> grep's answer``; ``glob(pattern) ->
glob's answer``; ``write(path, content)``, ``edit(path, old, new, replace_all)``,
``delete(path) -> what was staged``; ``run(command, timeout) -> {"output", "exit_code"}``;
``tests() -> the same, for the project's test command``. A failure is an ``ApiError`` with the
tool's message.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import anyio
from pydantic import ValidationError

from totem_engine.codemode.changes import CLASH, change_set, clash
from totem_engine.codemode.overlaid import StageScope
from totem_engine.codemode.runner import ApiError
from totem_engine.codemode.staging import StagedWorkspace
from totem_engine.command_changes import SandboxRequired
from totem_engine.sandbox.session import SandboxSession
from totem_engine.tools.base import Action, Tool, ToolContext, ToolInput
from totem_engine.tools.bash import BashInput, BashTool
from totem_engine.tools.edit import EditInput, EditTool, decode
from totem_engine.tools.glob import GlobInput, GlobTool, matching_files
from totem_engine.tools.grep import GrepInput, GrepTool
from totem_engine.tools.read import ReadInput, ReadTool
from totem_engine.tools.write import WriteInput, WriteTool
from totem_engine.verify import find_test_command
from totem_engine.vocab.tools import ToolError
from totem_engine.workspace.paths import project_path, refuse_totem_file, relative, resolve_in_project
from totem_engine.workspace.walk import glob_matcher


class ScriptApi:
    """One script's API over ``ctx``'s project; ``staged`` holds what it changed."""

    def __init__(self, ctx: ToolContext):
        self.staged = StagedWorkspace(ctx.workspace)
        # No read ledger: the change set is checked against the project as a whole when it is
        # applied (each file must still be as the script first saw it).
        self.ctx = dataclasses.replace(ctx, workspace=self.staged, reads=None)
        self.project = ctx  # the real project: what run() and the written change sets go through
        self.commands: list[str] = []  # what run() and tests() ran
        self.written: list[str] = []  # what was written before a command ("edited a.py"), one entry a change set

    async def __call__(self, method: str, params: dict[str, Any]) -> Any:
        handler = getattr(self, f"_{method}", None)
        if handler is None or not isinstance(params, dict):
            raise ApiError(f"totem has no function {method!r}: files, read, search, glob, write, edit, delete, run, tests.")
        try:
            return await handler(**params)
        except TypeError as exc:  # a wrong or missing argument
            raise ApiError(f"totem.{method}: {exc}") from None
        except ValidationError as exc:
            raise ApiError(f"totem.{method}: " + "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())) from None
        except ToolError as exc:
            raise ApiError(str(exc)) from None
        except OSError as exc:
            raise ApiError(f"{exc.strerror or exc} ({exc.filename or ''})") from None

    async def _through(self, tool: Tool, args: ToolInput, *, reads: bool) -> str:
        action = await tool.prepare(args, self.ctx)
        if reads:
            self._may_read(action)
        return (await action.apply(self.ctx)).output

    def _may_read(self, action: Action) -> None:
        verdict = self.ctx.decide(action)
        if verdict != "allow":
            what = ", ".join(action.patterns) or "this"
            raise ToolError(
                f"Reading {what} is {'denied' if verdict == 'deny' else 'asked about'} by the permission rules, "
                "which a script cannot ask: use the read tool."
            )

    async def _files(self, pattern: str = "**/*") -> list[str]:
        root = self.ctx.root.resolve()
        on_disk = {rel for _, rel in await anyio.to_thread.run_sync(matching_files, root, root, pattern)}
        matches = glob_matcher(pattern)
        for change in self.staged.changes():
            rel = relative(root, change.path)
            if change.after is None:
                on_disk.discard(rel)
            elif matches(rel):
                on_disk.add(rel)
        return sorted(on_disk)

    async def _read(self, path: str, offset: int = 1, limit: int = 0) -> str:
        target = resolve_in_project(self.ctx.root, path, self.ctx.extra_roots)
        self._may_read(await ReadTool().prepare(ReadInput(path=path), self.ctx))
        rel = project_path(self.ctx.root, target)
        stat = await self.staged.stat(target)
        if stat is None:
            raise ToolError(f"{rel} does not exist.")
        if stat.is_dir:
            raise ToolError(f"{rel} is a folder: totem.files('{rel}/**') lists it.")
        text, _ = decode(await self.staged.read_bytes(target), rel)
        lines = text.splitlines(keepends=True)
        start = max(offset, 1) - 1
        return "".join(lines[start : start + limit] if limit > 0 else lines[start:])

    async def _search(self, pattern: str, path: str = ".", include: str = "") -> str:
        return await self._through(GrepTool(), GrepInput(pattern=pattern, path=path, include=include or None), reads=True)

    async def _glob(self, pattern: str) -> str:
        return await self._through(GlobTool(), GlobInput(pattern=pattern), reads=True)

    async def _write(self, path: str, content: str) -> str:
        return await self._through(WriteTool(), WriteInput(path=path, content=content), reads=False)

    async def _edit(self, path: str, old: str, new: str, replace_all: bool = False) -> str:
        args = EditInput(path=path, old_string=old, new_string=new, replace_all=replace_all)
        return await self._through(EditTool(), args, reads=False)

    async def _delete(self, path: str) -> str:
        target = resolve_in_project(self.ctx.root, path, self.ctx.extra_roots)
        rel = project_path(self.ctx.root, target)
        refuse_totem_file(target, rel)
        stat = await self.staged.stat(target)
        if stat is None:
            raise ToolError(f"{rel} does not exist.")
        if stat.is_dir:
            raise ToolError(f"{rel} is a folder: delete its files one by one.")
        await self.staged.delete(target)
        return f"Deleted {rel}."

    async def _run(self, command: str, timeout: int = 0) -> dict[str, Any]:
        box = await self._sandbox()
        if box is None:
            await self._write_staged()
        action = await BashTool().prepare(BashInput(command=command, timeout=timeout or None), self.project)
        if not await self.project.permit(action):
            raise ToolError(f"Running `{command}` was not allowed; nothing ran.")
        if box is None:
            result = await self.project.commit(action)
        else:
            masked = await self.project.commands.masks() if action.unasked else ()
            scope = StageScope(
                box, self.staged, self.project.root, max_file_bytes=self.project.commands.max_file_bytes, command=command,
                masked=masked,
            )
            await scope.open()
            result = await action.run_in(self.project, scope)
            if scope.left_out:
                result.output += f"\n[Not part of the script's changes: {_listed(scope.left_out)}]"
        self.commands.append(command)
        return {"output": result.output, "exit_code": result.metadata.get("exit_code")}

    async def _sandbox(self) -> SandboxSession | None:
        """The sandbox a command of the script runs in, over its stage (None: on the project)."""
        if self.project.commands is None:
            return None
        try:
            return await self.project.commands.script_box(self.project.session_id)
        except SandboxRequired as exc:
            raise ToolError(str(exc)) from None

    async def _tests(self, timeout: int = 0) -> dict[str, Any]:
        files = await self._files()
        command = await find_test_command(self.project.test_command, files)
        if command is None:
            raise ToolError("This project has no test command: set test_command in the config, or run() one.")
        return await self._run(command, timeout)

    async def _write_staged(self) -> None:
        """What the script staged so far, asked about and written as one change set, so that a
        command sees it; the stage is empty after it."""
        action = change_set(self.project.root, self.staged.changes(), printed="")
        if not action.files:
            return
        clashing = await clash(self.project.workspace, self.project.root, self.staged.changes())
        if clashing:
            raise ToolError(f"The script's changes so far {CLASH.format(clashing)}, so the command did not run.")
        if not await self.project.permit(action):
            raise ToolError("Writing the script's changes so far was not allowed, so the command did not run.")
        await self.project.commit(action)
        self.written.append("; ".join(change.report for change in action.changes))
        self.staged.clear()


def _listed(items: list[str], most: int = 10) -> str:
    more = f"; and {len(items) - most} more" if len(items) > most else ""
    return "; ".join(items[:most]) + more
