"""One ACP session: its own engine (a ``Runtime`` of its ``cwd``), its front end, its turn.

Each session opens the project of its ``cwd`` for itself (``opening.open_project``, the one
store of the process shared), so the client's ``mcpServers`` of that session are its servers
alone, and closing the session (or the process) stops them and its jobs. The session id is the
store's: ``session/load`` finds it again, ``totem sessions show`` shows it.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import anyio
from acp import RequestError
from acp.schema import (
    AvailableCommand,
    AvailableCommandInput,
    AvailableCommandsUpdate,
    CurrentModeUpdate,
    PromptResponse,
    SessionConfigOptionSelect,
    SessionConfigSelectOption,
    SessionMode,
    SessionModeState,
    StopReason,
    UnstructuredCommandInput,
)

from totem_acp.frontend import AcpFrontEnd
from totem_acp.prompt import Block, user_message
from totem_acp.terminal import ClientTerminals
from totem_acp.workspace import ClientWorkspace
from totem_engine.api import events as ev
from totem_engine.commands import ACTIONS
from totem_engine.config_error import ConfigError
from totem_engine.providers.errors import ProviderError
from totem_engine.runtime import Runtime, session_title
from totem_engine.turn.loop import Turn
from totem_engine.turn.terms import TurnResult

MODES = {
    "build": "Reads, edits and runs commands, asking first where the rules say so.",
    "plan": "Reads and answers; nothing in the project is changed.",
}
MODEL_LIST_WAIT = 5.0  # seconds a provider's model list may take before session/new answers without it


class AcpSession:
    def __init__(self, runtime: Runtime, session_id: str, client: Any, workspace: ClientWorkspace, *, terminal: bool = False):
        """``terminal``: the client offers ``terminal/*``; with config ``acp_client_terminal``
        bash runs there (terminal.py)."""
        self.runtime = runtime
        self.id = session_id
        self.root = runtime.root
        self.workspace = workspace
        self.frontend = AcpFrontEnd(
            client, session_id, runtime.root, abort=self.cancel, timeout=runtime.config.permission_timeout,
        )
        if terminal and runtime.config.acp_client_terminal:
            terminals = ClientTerminals(client, session_id, self.frontend.send)
            self.frontend.terminals = terminals.shown
            runtime.agent.command_runner = terminals
        self.turn: Turn | None = None
        self._busy = False
        self._cancelled = False  # session/cancel came while the prompt was being prepared
        self._models: list[str] = []
        # Said at the first prompt: what the config or an untrusted project's restriction said.
        self.notices = [*runtime.config.notes, *([runtime.trust_notice] if runtime.trust_notice else [])]

    # --- what the client is told about the session ---------------------------------------

    async def modes(self) -> SessionModeState:
        stored = await self.runtime.store.get_session(self.id)
        available = [SessionMode(id=mode, name=mode.capitalize(), description=what) for mode, what in MODES.items()]
        return SessionModeState(current_mode_id=stored.mode, available_modes=available)

    async def config_options(self) -> list[SessionConfigOptionSelect]:
        """The model (category ``model``) and the mode (category ``mode``) as select options."""
        stored = await self.runtime.store.get_session(self.id)
        if not self._models:
            self._models = await self._listed_models()
        models = list(dict.fromkeys([stored.model, *self._models]))
        return [
            SessionConfigOptionSelect(
                type="select", id="model", name="Model", category="model", current_value=stored.model,
                options=[SessionConfigSelectOption(value=m, name=m) for m in models],
            ),
            SessionConfigOptionSelect(
                type="select", id="mode", name="Mode", category="mode", current_value=stored.mode,
                options=[SessionConfigSelectOption(value=m, name=m.capitalize(), description=what) for m, what in MODES.items()],
            ),
        ]

    async def _listed_models(self) -> list[str]:
        """What the configured providers serve; a provider that cannot say adds nothing."""
        found: list[str] = []
        for name in self.runtime.config.providers:
            with anyio.move_on_after(MODEL_LIST_WAIT), contextlib.suppress(ProviderError, ConfigError):
                found += [f"{name}/{m.id}" for m in await self.runtime.provider(name).models()]
        return found

    def commands_update(self) -> AvailableCommandsUpdate:
        """The slash commands (the project's, the user's, the built-in ones) and the actions."""
        found = self.runtime.commands()
        listed = [(c.name, c.description) for _, c in sorted(found.items())]
        listed += [(name, what) for name, what in sorted(ACTIONS.items()) if name not in found]
        hint = AvailableCommandInput(root=UnstructuredCommandInput(hint="arguments"))
        return AvailableCommandsUpdate(
            session_update="available_commands_update",
            available_commands=[AvailableCommand(name=n, description=d, input=hint) for n, d in listed],
        )

    # --- what the client changes --------------------------------------------------------

    async def set_mode(self, mode: str) -> None:
        """The mode of the next turn (a running one keeps its own); said as ``current_mode_update``."""
        if mode not in MODES:
            raise RequestError.invalid_params({"message": f"there is no mode {mode!r}: build or plan"})
        await self.runtime.store.update_session(self.id, mode=mode)
        await self.frontend.send(CurrentModeUpdate(session_update="current_mode_update", current_mode_id=mode))

    async def set_model(self, model: str) -> None:
        """The model of the next turn, as ``provider/model`` (ConfigError when not configured)."""
        await self.runtime.store.update_session(self.id, model=self.runtime.resolve_model(model))

    # --- turns --------------------------------------------------------------------------

    async def prompt(self, blocks: list[Block]) -> PromptResponse:
        """One prompt turn; raises ``RequestError`` for a turn that ended in an error."""
        if self._busy:
            raise RequestError.invalid_request({"message": f"session {self.id} is busy: a prompt is still running"})
        self._busy, self._cancelled = True, False
        try:
            return await self._prompt(blocks)
        finally:
            self._busy, self.turn = False, None

    async def _prompt(self, blocks: list[Block]) -> PromptResponse:
        runtime = self.runtime
        while self.notices:
            await self.frontend.say(f"{self.notices.pop(0)}\n\n")
        message = user_message(blocks, self.root)
        prepared = runtime.prepare(message.typed)  # a slash command expanded (commands.py)
        if prepared.action is not None:
            await self.frontend.say(await self._act(prepared.action))
            return PromptResponse(stop_reason="end_turn")
        stored = await runtime.store.get_session(self.id)
        if not stored.title and message.typed:
            await runtime.store.update_session(self.id, title=session_title(message.typed))
        model = runtime.resolve_model(prepared.model or stored.model)
        self.turn = runtime.turn(
            message.text(prepared.text), self.frontend, session=stored, model=model, mode=stored.mode,
            typed=message.typed if prepared.command else None, as_agent=prepared.agent, images=message.images,
        )
        if self._cancelled:
            self.turn.abort()
        self.frontend.finish, self.frontend.failure = None, None
        return self._response(await self.turn.run())

    def _response(self, result: TurnResult) -> PromptResponse:
        return PromptResponse(stop_reason=stop_reason(result, self.frontend.finish, self.frontend.failure))

    def cancel(self) -> None:
        """``session/cancel``: the running turn aborted (its processes killed, its open calls
        closed); a prompt still being prepared is aborted as soon as its turn exists."""
        self._cancelled = True
        if self.turn is not None:
            self.turn.abort()

    @property
    def busy(self) -> bool:
        return self._busy

    async def _act(self, action: str) -> str:
        """``/undo`` or ``/compact`` on this session, as the language server does them."""
        if action == "undo":
            outcomes = await self.runtime.undo(self.id)
            lines = [f"{o.action} {o.path}" + (f" ({o.reason})" if o.reason else "") for o in outcomes]
            return "\n".join(lines) if lines else "Nothing to undo."
        checkpoint = await self.runtime.compact(self.id)
        if checkpoint is None:
            return "Nothing new to compact."
        return f"Compacted: {checkpoint.messages} message(s) summarised; the next turn starts from the summary."


def stop_reason(result: TurnResult, finish: str | None, failure: ev.Error | None) -> StopReason:
    """The prompt's stop reason for how the turn ended (docs/acp.md "Stop reasons"); a turn that
    ended in an error raises ``RequestError`` with its message (and its class and hint)."""
    if result.stop_reason == "error":
        data = {"errorClass": failure.error_class, "hint": failure.hint} if failure is not None else None
        raise RequestError(-32603, result.reason or "the turn failed", data)
    if result.stop_reason == "aborted":
        return "cancelled"
    if result.stop_reason == "step_limit":
        return "max_turn_requests"
    if result.stop_reason == "finished" and finish == "length":
        return "max_tokens"
    if result.stop_reason == "finished" and finish == "refusal":
        return "refusal"
    return "end_turn"  # finished, or a guard (its reason was said as an agent message)


def project_root(cwd: str) -> Path:
    """The session's ``cwd`` as the project root: absolute and an existing folder."""
    path = Path(cwd)
    if not path.is_absolute() or not path.is_dir():
        raise RequestError.invalid_params({"message": f"cwd must be the absolute path of a folder, got {cwd!r}"})
    return path.resolve()
