"""One ACP session: its own engine, its front end, its running prompt.

Each session has an engine of its own (``Engines.private``, the process's one store shared), so
the client's file system, terminal and ``mcpServers`` of that session are its alone, and closing
the session (or the process) stops its servers and jobs. The session id is the store's:
``session/load`` finds it again, ``totem sessions show`` shows it. Everything the session does is
an ``Engine`` call: a prompt (``Engine.prompt``, which also does the built-in actions ``/undo``,
``/redo``, ``/rewind``, ``/retry``, ``/fork``, ``/compact``), the mode, the model, the commands.
"""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import anyio
from acp import RequestError
from acp.schema import (
    AvailableCommand,
    AvailableCommandInput,
    AvailableCommandsUpdate,
    ConfigOptionUpdate,
    CurrentModeUpdate,
    PromptResponse,
    SessionConfigOptionSelect,
    SessionConfigSelectOption,
    SessionInfoUpdate,
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
from totem_engine.api.engine import MODES, REASONING, Engine
from totem_engine.api.running import Result

MODEL_LIST_WAIT = 5.0  # seconds the providers' model lists may take before session/new answers without them
# What a built-in action takes after its name (the others take nothing); a command file takes arguments.
ACTION_INPUTS = {"rewind": "turns to go back"}
COMMAND_INPUT = "arguments"
# The thought level's value for "the config's effort, or the model's own default".
DEFAULT_EFFORT = "default"


class AcpSession:
    """``engine``: the session's own; ``workspace`` and ``terminals`` (None: commands run in
    Totem) were given to it before the session existed, and are bound to it here; ``forms``:
    the client takes form elicitation (the ``ask`` tool's questions)."""

    def __init__(
        self, engine: Engine, session_id: str, client: Any, *, workspace: ClientWorkspace,
        terminals: ClientTerminals | None, forms: bool,
    ):
        self.engine = engine
        self.id = session_id
        self.root = engine.root
        self.frontend = AcpFrontEnd(
            client, session_id, engine.root, abort=self.cancel, timeout=engine.config.permission_timeout, forms=forms,
            terminals=terminals.shown if terminals is not None else None,
        )
        workspace.bind(session_id)
        if terminals is not None:
            terminals.bind(session_id, self.frontend.send)
        self._cancels = 0  # session/cancels so far: one since a prompt came aborts it as it starts
        self._models: list[str] = []
        # What the client was last told (an answer or an update): told again only when it changes.
        self._title: str | None = None
        self._shown: tuple[tuple[str, str | bool], ...] = ()
        # Said at the first prompt: what the config or an untrusted project's restriction said.
        self.notices = list(engine.notices)

    # --- what the client is told about the session ---------------------------------------

    async def modes(self) -> SessionModeState:
        stored = await self.engine.session(self.id)
        available = [SessionMode(id=mode, name=mode.capitalize(), description=what) for mode, what in MODES.items()]
        return SessionModeState(current_mode_id=stored.mode, available_modes=available)

    async def config_options(self) -> list[SessionConfigOptionSelect]:
        """The options as the client is now told them (an answer carries them)."""
        options = await self._options()
        self._shown = _values(options)
        return options

    async def _options(self) -> list[SessionConfigOptionSelect]:
        """The model (category ``model``), the mode (``mode``) and, for a model that reasons, the
        thinking effort (``thought_level``) as select options."""
        stored = await self.engine.session(self.id)
        if not self._models:
            self._models = await self._listed_models()
        models = list(dict.fromkeys([stored.model, *self._models]))
        options = [
            SessionConfigOptionSelect(
                type="select", id="model", name="Model", category="model", current_value=stored.model,
                options=[SessionConfigSelectOption(value=m, name=m) for m in models],
            ),
            SessionConfigOptionSelect(
                type="select", id="mode", name="Mode", category="mode", current_value=stored.mode,
                options=[SessionConfigSelectOption(value=m, name=m.capitalize(), description=what) for m, what in MODES.items()],
            ),
        ]
        thinks = False
        with anyio.move_on_after(MODEL_LIST_WAIT):  # the model's record may ask its provider's catalogue
            thinks = await self.engine.thinks(stored.model)
        if thinks:
            chosen = self.engine.reasoning(stored)
            efforts = [SessionConfigSelectOption(value=DEFAULT_EFFORT, name="Default", description="The model's own default.")]
            efforts += [SessionConfigSelectOption(value=e, name=e.capitalize(), description=what) for e, what in REASONING.items()]
            options.append(SessionConfigOptionSelect(
                type="select", id="thought_level", name="Thinking", category="thought_level",
                current_value=chosen or DEFAULT_EFFORT, options=efforts,
            ))
        return options

    async def tell_changes(self) -> None:
        """What changed on Totem's side since the client was last told: the title (set by the
        first prompt) as ``session_info_update``, the options as ``config_option_update``."""
        stored = await self.engine.session(self.id)
        if stored.title and stored.title != self._title:
            self._title = stored.title
            updated = datetime.datetime.fromtimestamp(stored.updated_at, datetime.UTC).isoformat()
            await self.frontend.send(SessionInfoUpdate(session_update="session_info_update", title=stored.title, updated_at=updated))
        options = await self._options()
        if _values(options) != self._shown:
            self._shown = _values(options)
            await self.frontend.send(ConfigOptionUpdate(session_update="config_option_update", config_options=options))

    async def _listed_models(self) -> list[str]:
        """What the configured providers serve; a provider that cannot say adds nothing."""
        served: dict[str, Any] = {}
        with anyio.move_on_after(MODEL_LIST_WAIT):
            served = await self.engine.models()
        return [f"{name}/{m.id}" for name, models in served.items() if isinstance(models, list) for m in models]

    def commands_update(self) -> AvailableCommandsUpdate:
        """The slash commands (the project's, the user's, the built-in ones) and the built-in
        actions (``Engine.commands``), each with what it takes after its name."""
        listed = []
        for command in self.engine.commands():
            action = command.source == "built-in" and not command.path
            hint = ACTION_INPUTS.get(command.name) if action else COMMAND_INPUT
            shown = AvailableCommandInput(root=UnstructuredCommandInput(hint=hint)) if hint else None
            listed.append(AvailableCommand(name=command.name, description=command.description, input=shown))
        return AvailableCommandsUpdate(session_update="available_commands_update", available_commands=listed)

    # --- what the client changes --------------------------------------------------------

    async def set_mode(self, mode: str) -> None:
        """The mode of the next turn (a running one keeps its own); said as ``current_mode_update``."""
        await self.engine.set_mode(self.id, mode)
        await self.frontend.send(CurrentModeUpdate(session_update="current_mode_update", current_mode_id=mode))

    async def set_model(self, model: str) -> None:
        """The model of the next turn, as ``provider/model`` (ConfigError when not configured)."""
        await self.engine.set_model(self.id, model)

    async def set_thought_level(self, level: str) -> None:
        """The thinking effort of the next turns (``default``: the config's, or the model's own)."""
        await self.engine.set_reasoning(self.id, None if level == DEFAULT_EFFORT else level)

    # --- prompts ------------------------------------------------------------------------

    async def prompt(self, blocks: list[Block]) -> PromptResponse:
        """One prompt: a turn, or a built-in action whose reply is said as an agent message.
        Raises ``RequestError`` for a turn that ended in an error, ``EngineError`` for a refusal.
        A prompt that comes while a turn runs waits for it, in line (docs/acp.md "Prompts");
        a ``session/cancel`` meanwhile drops it, and it answers ``cancelled`` without running."""
        cancels = self._cancels
        while self.notices:
            await self.frontend.say(f"{self.notices.pop(0)}\n\n")
        message = user_message(blocks, self.root, self.engine.extra_roots)
        running = await self.engine.prompt(
            message.typed, self.frontend, session_id=self.id, attachments=message.attachments, images=message.images,
            wait=True,
        )
        if self._cancels != cancels:  # came before the prompt reached the engine
            running.abort()
        # The turn before has ended: what the front end heard from here on is this turn's.
        self.frontend.finish, self.frontend.failure = None, None
        result = await running.result()
        finish, failure = self.frontend.finish, self.frontend.failure  # before a prompt after it runs
        await self.tell_changes()
        if result.reply is not None:
            await self.frontend.say(result.text)
            return PromptResponse(stop_reason="end_turn")
        return PromptResponse(stop_reason=stop_reason(result, finish, failure))

    def cancel(self) -> None:
        """``session/cancel``: the running turn aborted (its processes killed, its open calls
        closed); a prompt still being prepared is aborted as soon as its turn exists, and the
        prompts waiting for the turn are dropped (they answer ``cancelled``)."""
        self._cancels += 1
        self.engine.abort(self.id)  # the turn, or the prompt being prepared (it starts aborted)

    @property
    def busy(self) -> bool:
        return self.engine.busy(self.id)


def _values(options: list[SessionConfigOptionSelect]) -> tuple[tuple[str, str | bool], ...]:
    return tuple((o.id, o.current_value) for o in options)


def stop_reason(result: Result, finish: str | None, failure: ev.Error | None) -> StopReason:
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


def extra_roots(directories: list[str] | None) -> tuple[Path, ...]:
    """A session's ``additionalDirectories`` as extra roots: each absolute and an existing folder
    (the real paths, in order, without repeats)."""
    for directory in directories or ():
        if not Path(directory).is_absolute() or not Path(directory).is_dir():
            raise RequestError.invalid_params(
                {"message": f"additionalDirectories must be absolute paths of folders, got {directory!r}"}
            )
    return tuple(dict.fromkeys(Path(directory).resolve() for directory in directories or ()))


def project_root(cwd: str) -> Path:
    """The session's ``cwd`` as the project root: absolute and an existing folder."""
    path = Path(cwd)
    if not path.is_absolute() or not path.is_dir():
        raise RequestError.invalid_params({"message": f"cwd must be the absolute path of a folder, got {cwd!r}"})
    return path.resolve()
