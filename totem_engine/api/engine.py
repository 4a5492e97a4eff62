"""``Engine``: one project's sessions, turns and actions, the same for every door.

``open_project`` opens one (config layers, trust, the local model's default, every injection a
door brings: a client's file system, its terminal, its MCP servers); ``Engine.prompt`` takes what
the user typed and does all that a prompt means: a slash command expanded, a built-in action
done (``/undo``, ``/redo``, ``/compact``, ``/rewind``, ``/fork``, ``/retry``), the model chosen,
the session created and titled, the turn started. Every other session action is a method here,
one implementation each, so the four doors cannot drift. A door holds only ``Engine``,
``Running`` and the values they return; the runtime and the turn never cross this API.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from totem_engine.api import replies
from totem_engine.api.errors import EngineError, NothingToDo
from totem_engine.api.frontend import FrontEnd
from totem_engine.api.history import History
from totem_engine.api.hooks import Listed
from totem_engine.api.mcp_listing import McpListing, list_servers
from totem_engine.api.running import Claim, Reply, Running, Turns
from totem_engine.api.session_tools import SessionTools, session_tools
from totem_engine.agents import AgentDefinition, remove_agent, save_agent
from totem_engine.attachments import Attachment, with_attachments, withheld_secrets
from totem_engine.mentions import unasked_reads
from totem_engine.permissions import Policy
from totem_engine.branches import Tree
from totem_engine.commands import ACTIONS, Command
from totem_engine.config import Config, ModelOverride
from totem_engine.config_error import ConfigError
from totem_engine.mcp.servers import Say
from totem_engine.mcp.specs import ServerSpec
from totem_engine.opening import open_runtime
from totem_engine.providers.base import ModelInfo
from totem_engine.vocab.messages import Image
from totem_engine.providers.errors import ProviderError
from totem_engine.runtime import Rewound, Runtime, session_title
from totem_engine.session_state import SessionState
from totem_engine.session_diff import FileDiff
from totem_engine.snapshots import FileOutcome
from totem_engine.store import Session, SessionElsewhere, Store, StoredMessage
from totem_engine.tools.command_runner import CommandRunner
from totem_engine.workspace.files import Workspace
from totem_engine.trust import AskTrust, trust

MODES = {
    "build": "Reads, edits and runs commands, asking first where the rules say so.",
    "plan": "Reads and answers; nothing in the project is changed.",
}
# The thinking efforts a session may choose (the config's ``reasoning``), least first.
REASONING = {
    "none": "No thinking before answering.",
    "low": "A little thinking.",
    "medium": "Some thinking.",
    "high": "The most thinking the model does.",
}


@contextlib.asynccontextmanager
async def open_project(
    root: Path,
    *,
    holder: str,
    config_file: Path | None = None,
    editor_settings: dict[str, Any] | None = None,
    ask_trust: AskTrust | None = None,
    model: str | None = None,
    mode: str | None = None,
    start_local: bool = True,
    store: Store | None = None,
    turns: Turns | None = None,
    workspace: Workspace | None = None,
    command_runner: CommandRunner | None = None,
    mcp_servers: Sequence[ServerSpec] = (),
    extra_roots: Sequence[Path] = (),
) -> AsyncIterator["Engine"]:
    """The engine of the project at ``root`` for the ``async with`` block.

    ``holder`` names the door in the leases its turns take ("totem run", "totem lsp"; leases.py).
    ``config_file`` (``--config``) and ``editor_settings`` are the door's config layers;
    ``ask_trust(root, reasons)`` asks whether to trust an untrusted project (None: it stays
    restricted, ``engine.notices`` says what it lost). ``model`` and ``mode``: the door's choice
    over the config's for new sessions (the local model is started when neither names a model
    and setup has finished, unless ``start_local`` is False). ``store`` and ``turns`` are shared
    (``Engines``) and left open. Injections: ``workspace`` (the client's file system),
    ``command_runner`` (the client's terminal), ``mcp_servers`` (the client's servers).
    ``extra_roots``: absolute folders the engine's file tools, mentions and sandbox reach besides
    ``root`` (an ACP session's ``additionalDirectories``); a path outside every root is refused.

    Raises ``ConfigError`` (kind ``config``) and ``LocalServerError`` (kind ``unavailable``).
    """
    async with open_runtime(
        root, config_file=config_file, editor_settings=editor_settings, ask_trust=ask_trust, model=model,
        start_local=start_local, store=store, workspace=workspace, holder=holder, command_runner=command_runner,
        mcp_servers=list(mcp_servers), extra_roots=extra_roots,
    ) as runtime:
        yield Engine(runtime, turns=turns or Turns(), model=model, mode=mode)


class Engine:
    """One project's engine (``open_project``). Every method that names a session refuses one of
    another project (``SessionElsewhere``) and one that does not exist (``SessionNotFound``);
    those that change a session refuse while a turn of it runs (``SessionBusy`` here,
    ``SessionInUse`` in another process). Errors are ``EngineError``s with a ``kind``."""

    def __init__(self, runtime: Runtime, *, turns: Turns, model: str | None = None, mode: str | None = None):
        self._runtime = runtime
        self._turns = turns
        self._model = model
        self._mode = mode
        self._pruned = False
        self.history = History(runtime.store)

    # --- what a door shows ------------------------------------------------------------------

    @property
    def root(self) -> Path:
        return self._runtime.root

    @property
    def config(self) -> Config:
        """The merged config, to read (a door's own keys: ``permission_timeout``,
        ``acp_client_terminal``); changing it changes nothing."""
        return self._runtime.config

    @property
    def trusted(self) -> bool:
        return self._runtime.trusted

    @property
    def trust_notice(self) -> str | None:
        """What an untrusted project's own config lost (None: nothing, or trusted)."""
        return self._runtime.trust_notice

    @property
    def notices(self) -> list[str]:
        """What to tell the user on opening: the config's notes and the trust notice."""
        return [*self.config.notes, *([self.trust_notice] if self.trust_notice else [])]

    def default_model(self) -> str:
        """``provider/model`` a new session gets (ConfigError when none is configured)."""
        return self._runtime.resolve_model(self._model)

    def default_mode(self) -> str:
        return self._mode or self.config.mode

    def resolve_model(self, model: str) -> str:
        """``model`` as ``provider/model``; ConfigError when no configured provider has it."""
        return self._runtime.resolve_model(model)

    def set_default_model(self, model: str) -> str:
        """The door's choice of model for new sessions, checked (ConfigError); returns it resolved."""
        resolved = self._runtime.resolve_model(model)
        self._model = resolved
        return resolved

    def set_default_mode(self, mode: str) -> None:
        _check_mode(mode)
        self._mode = mode

    # --- turns ----------------------------------------------------------------------------

    def busy(self, session_id: str) -> bool:
        return self._turns.busy(session_id)

    def abort(self, session_id: str) -> bool:
        """Abort the session's running turn and drop the prompts waiting for it (``prompt``'s
        ``wait``); False when none runs here."""
        return self._turns.abort(session_id)

    async def prompt(
        self,
        text: str,
        frontend: FrontEnd,
        *,
        session_id: str | None = None,
        model: str | None = None,
        mode: str | None = None,
        max_steps: int | None = None,
        attachments: Sequence[Attachment] = (),
        images: tuple[Image, ...] = (),
        wait: bool = False,
    ) -> Running:
        """What the user typed (``text``), as a turn of ``session_id`` (None: a new session, titled
        by ``text``) or a built-in action on it (no session: the project's newest).

        ``model`` and ``mode`` are this prompt's over the session's (a slash command's model over
        the session's too); a new session keeps them. ``attachments``: context blocks put before
        the text (the editor's selection, a mention's file); ``images``: images the user attached.
        The session is busy from here until the returned ``Running``'s ``result()`` returns.
        ``wait``: while a turn of the session runs, wait for it (and for the prompts waiting
        before this one) instead of refusing with ``SessionBusy``; an abort of the session
        meanwhile drops this prompt (``Running.dropped``: it ends aborted, nothing stored).
        """
        if session_id and wait:
            claim = await self._turns.wait(session_id)
            if claim is None:
                return Running.dropped(session_id)
        else:
            claim = self._turns.claim(session_id) if session_id else None
        try:
            session = await self._runtime.project_session(session_id) if session_id else None
            prepared = self._runtime.prepare(text)
            if prepared.action is not None:
                return await self._act(prepared.action, prepared.arguments, session, frontend, claim, model=model, mode=mode)
            if not self._pruned:
                self._pruned = True
                await self._runtime.snapshots.prune()
            chosen = self._runtime.resolve_model(model or prepared.model or (session.model if session else self._model))
            if prepared.agent is not None and self._runtime.agents().get(prepared.agent) is None:
                # Before a session is made for a turn that cannot start.
                raise ConfigError(f"there is no agent named {prepared.agent!r} (totem agents list)")
            if session is None:
                session = await self._runtime.new_session(model=chosen, mode=mode or self.default_mode(), text=text)
            elif not session.title and text.strip():
                await self._runtime.store.update_session(session.id, title=session_title(text))
                session = await self._runtime.store.get_session(session.id)
            attachments = withheld_secrets(
                list(attachments), unasked_reads(Policy(rules=self._runtime.agent.rules), self._runtime.root, self._runtime.extra_roots),
            )
            body = with_attachments(prepared.text, attachments) if attachments else prepared.text
            turn = self._runtime.turn(
                body, frontend, session=session, model=chosen, mode=mode or session.mode, max_steps=max_steps,
                typed=text if body != text else None, as_agent=prepared.agent, attached=list(attachments), images=images,
            )
            return Running(session.id, turn=turn, turns=self._turns, aborted=claim is not None and claim.aborted)
        finally:
            if claim is not None:
                claim.free()

    async def retry(self, session_id: str, frontend: FrontEnd, *, model: str | None = None, mode: str | None = None) -> Running:
        """The session's last turn, which failed, taken up from its last completed step
        (``NothingToRetry`` when it did not fail, or failed too often)."""
        with self._claimed(session_id) as claim:
            turn = await self._runtime.retry(session_id, frontend, model=model, mode=mode)
            return Running(session_id, turn=turn, turns=self._turns, aborted=claim.aborted)

    async def regenerate(
        self, session_id: str, message_id: str, frontend: FrontEnd, *, model: str | None = None, mode: str | None = None
    ) -> Running:
        """A new answer (variant) to the request ``message_id`` is, or answers; the earlier
        answers stay, variants to switch back to (``switch_variant``)."""
        with self._claimed(session_id) as claim:
            turn = await self._runtime.regenerate(session_id, message_id, frontend, model=model, mode=mode)
            return Running(session_id, turn=turn, turns=self._turns, aborted=claim.aborted)

    # --- session actions ------------------------------------------------------------------

    async def new_session(self, *, model: str | None = None, mode: str | None = None, title: str = "") -> Session:
        """An empty session of this project (titled by its first prompt when ``title`` is empty)."""
        mode = mode or self.default_mode()
        _check_mode(mode)
        return await self._runtime.new_session(model=self._runtime.resolve_model(model or self._model), mode=mode, text=title)

    async def session(self, session_id: str, *, root: Path | None = None) -> Session:
        """The session, of this project; with ``root``, also refused unless ``root`` is this
        project (a client that names another folder for a session already open here)."""
        if root is not None and root.resolve() != self.root:
            session = await self._runtime.store.get_session(session_id)
            raise SessionElsewhere(session_id, session.cwd, root.resolve())
        return await self._runtime.project_session(session_id)

    async def sessions(self) -> list[Session]:
        """This project's sessions, newest first."""
        return await self.history.sessions(self.root)

    async def undo(self, session_id: str) -> Reply:
        """The files of the session's last changing turn put back."""
        with self._claimed(session_id, "undo waits until its turn ends"):
            return replies.undone(await self._runtime.undo(session_id))

    async def redo(self, session_id: str) -> Reply:
        """The last undone change put back again."""
        with self._claimed(session_id, "redo waits until its turn ends"):
            return replies.undone(await self._runtime.redo(session_id), redo=True)

    async def compact(self, session_id: str) -> Reply:
        """The conversation so far summarised into a checkpoint the next turns start from."""
        with self._claimed(session_id, "compaction waits until its turn ends"):
            return replies.compacted(await self._runtime.compact(session_id))

    async def rewind(
        self, session_id: str, message_id: str, *, files: bool = True,
        overwrite: Callable[[str], bool] = lambda path: False, dry_run: bool = False,
    ) -> Rewound:
        """The conversation continues from before ``message_id``; with ``files``, the files go back
        to that point (a file the user changed since is a conflict, left alone unless
        ``overwrite(path)``). ``dry_run``: what would happen."""
        with self._claimed(session_id, "rewind waits until its turn ends"):
            return await self._runtime.rewind(session_id, message_id, files=files, overwrite=overwrite, dry_run=dry_run)

    async def rewind_turns(self, session_id: str, turns: int = 1, *, files: bool = True) -> Reply:
        """``/rewind [N]``: back before the last ``turns`` requests, conversation and (unless not
        ``files``) files."""
        if turns < 1:
            raise NothingToDo("/rewind takes a number of turns, 1 or more")
        requests = await self._requests(session_id)
        if not requests:
            raise NothingToDo(f"session {session_id} has no request to rewind")
        done = await self.rewind(session_id, requests[-min(turns, len(requests))].id, files=files)
        return replies.rewound(min(turns, len(requests)), len(done.messages), done.files)

    async def request_id(self, session_id: str, back: int = 1) -> str:
        """The id of the request ``back`` requests before the conversation's end (1: the last
        one; the first when it has fewer); ``NothingToDo`` when it has none."""
        if back < 1:
            raise NothingToDo("a number of turns is 1 or more")
        requests = await self._requests(session_id)
        if not requests:
            raise NothingToDo(f"session {session_id} has no request in its conversation")
        return requests[-min(back, len(requests))].id

    async def switch_variant(self, session_id: str, message_id: str, index: int) -> tuple[str, int]:
        """The conversation follows answer ``index`` of the request ``message_id`` is or answers;
        (the request's id, how many answers it has)."""
        with self._claimed(session_id, "switching variants waits until its turn ends"):
            try:
                return await self._runtime.switch_variant(session_id, message_id, index)
            except IndexError as exc:
                raise NothingToDo(str(exc)) from None

    async def fork(self, session_id: str, message_id: str | None = None) -> Reply:
        """A new session of this project holding the conversation up to ``message_id`` (default:
        as it stands); the reply names it (``forked``)."""
        await self._runtime.project_session(session_id)
        forked = await self.history.fork(session_id, message_id)  # one fork for every door and `totem sessions fork`
        return replies.forked(session_id, forked.id)

    async def diff(self, session_id: str, *, turn_id: str | None = None) -> list[FileDiff]:
        """What the session (or one of its turns) changed in the project, one diff per file."""
        return await self._runtime.diff(session_id, turn_id=turn_id)

    async def set_mode(self, session_id: str, mode: str) -> Session:
        """The session's mode from its next turn on (a running turn keeps its own)."""
        _check_mode(mode)
        await self._runtime.project_session(session_id)
        await self._runtime.store.update_session(session_id, mode=mode)
        return await self._runtime.store.get_session(session_id)

    async def set_model(self, session_id: str, model: str) -> Session:
        """The session's model from its next turn on, as ``provider/model`` (ConfigError when the
        provider is not configured)."""
        await self._runtime.project_session(session_id)
        await self._runtime.store.update_session(session_id, model=self._runtime.resolve_model(model))
        return await self._runtime.store.get_session(session_id)

    # --- what the project offers ------------------------------------------------------------

    def commands(self) -> list[Command]:
        """The slash commands (the project's, the user's, the built-in ones) and the built-in
        actions (source ``built-in``, no file), by name."""
        found = self._runtime.commands()
        actions = [Command(name, what, "", "built-in", "") for name, what in ACTIONS.items() if name not in found]
        return sorted([*found.values(), *actions], key=lambda c: c.name)

    def agents(self) -> list[AgentDefinition]:
        """The agents ``task`` can run, by name (an untrusted project's restricted)."""
        return [d for _, d in sorted(self._runtime.agents().definitions.items())]

    def hooks(self) -> list[Listed]:
        """Every hook the config files declare (hooks/), in the order they run, each with its
        source file and, when it does not run, why (``ignored``: an untrusted project's)."""
        return list(self._runtime.agent.hooks.listed)

    def save_agent(self, definition: AgentDefinition) -> Path:
        """Write an agent's file in its scope; ValueError for a bad name or scope."""
        return save_agent(self.root, definition)

    def remove_agent(self, name: str) -> Path:
        """Remove a user's or the project's agent file; LookupError or ValueError when it cannot."""
        return remove_agent(self.root, name, self._runtime.agents())

    async def models(self) -> dict[str, list[ModelInfo] | ProviderError | ConfigError]:
        """What each configured provider serves, by provider name, with what the config's
        ``[models."<provider>/<id>"]`` says of a model over what the provider reports (its
        window, its vision: the turn's capability record reads the same); a provider that cannot
        say gives its error instead."""
        found: dict[str, list[ModelInfo] | ProviderError | ConfigError] = {}
        for name in self.config.providers:
            try:
                listed = await self._runtime.provider(name).models()
            except (ProviderError, ConfigError) as exc:
                found[name] = exc
                continue
            found[name] = [_as_configured(info, self.config.models.get(f"{name}/{info.id}")) for info in listed]
        return found

    async def stop_job(self, session_id: str, job_id: str) -> Any:
        """A background job's process group killed; the job as it ended (``JobNotFound``)."""
        return await self._runtime.jobs.stop(session_id, job_id)

    # --- inside -----------------------------------------------------------------------------

    async def _requests(self, session_id: str) -> list[StoredMessage]:
        """The user's requests on the conversation's path, oldest first (a session of this project)."""
        await self._runtime.project_session(session_id)
        return Tree(*await self._runtime.store.tree(session_id)).requests()

    @contextlib.contextmanager
    def _claimed(self, session_id: str, what: str = "a turn is still running") -> Iterator[Claim]:
        claim = self._turns.claim(session_id, what)
        try:
            yield claim
        finally:
            claim.free()

    async def _act(
        self, action: str, arguments: str, session: Session | None, frontend: FrontEnd, claim: Claim | None,
        *, model: str | None, mode: str | None,
    ) -> Running:
        """A built-in action on ``session`` (None: the project's newest), done now; ``/retry`` and
        ``/regenerate`` a turn. The prompt's claim is freed first: the action claims the session
        itself."""
        if claim is not None:
            claim.free()
        if session is None:
            session = await self.history.newest(self.root)
            if session is None:
                raise NothingToDo(f"/{action} works on a session, and this project has none yet")
        if action == "retry":
            return await self.retry(session.id, frontend, model=model, mode=mode)
        if action == "regenerate":
            request = await self.request_id(session.id)
            return await self.regenerate(session.id, request, frontend, model=model, mode=mode)
        if action == "undo":
            reply = await self.undo(session.id)
        elif action == "redo":
            reply = await self.redo(session.id)
        elif action == "compact":
            reply = await self.compact(session.id)
        elif action == "fork":
            reply = await self.fork(session.id)
        elif action == "diff":
            reply = replies.diffed(await self.diff(session.id))
        else:
            try:
                count = int(arguments) if arguments else 1
            except ValueError:
                raise NothingToDo(f"/rewind takes a number of turns, not {arguments!r}") from None
            reply = await self.rewind_turns(session.id, count)
        return Running(session.id, reply=reply, turns=None)

    # --- for a door that asks about trust itself (ACP: at a session's first prompt) -----------

    async def trust_project(self) -> None:
        """This project trusted and remembered (``trusted.json``, as ``totem trust`` does); its
        whole config applies in the engines opened from now on, not in this one."""
        await trust(self.root)

    # --- for the language server (totem lsp) ------------------------------------------------

    def editor_checkers(self) -> list[Any]:
        """The checks an editor shows as diagnostics (``api.checks.run_checks`` runs them): the
        built-in rules the project as it is now calls for, and its own commands (``external``)."""
        return self._runtime.editor_checkers()

    def action_of(self, text: str) -> str | None:
        """The built-in action ``text`` names (``undo`` for ``/undo``), None for a prompt: a chat
        with no session yet refuses an action rather than act on another session."""
        return self._runtime.prepare(text).action

    # --- for the command line (totem mcp list) -----------------------------------------------

    async def mcp_servers(self, frontend: FrontEnd, say: Say) -> McpListing:
        """The project's MCP servers started as a turn starts them (each start asked through
        ``frontend``, ``say`` told what went wrong), with their tools; they stop with the engine."""
        return await list_servers(self._runtime, frontend, say)


    async def session_tools(self, session_id: str) -> SessionTools:
        """The tools the session's next turn offers its model, and why fewer than all (session_tools.py)."""
        return await session_tools(self._runtime, await self._runtime.project_session(session_id))

    # --- for ACP (issue 35): the thinking effort as a session's option ----------------------

    async def thinks(self, model: str) -> bool:
        """Whether ``model`` (``provider/model``) reasons, so a thinking effort means something to it."""
        provider, _, model_id = self._runtime.resolve_model(model).partition("/")
        return bool((await self._runtime.capabilities.record(provider, model_id)).reasoning)

    def reasoning(self, session: Session) -> str | None:
        """The session's thinking effort: the one chosen for it, else the config's (None: the model's default)."""
        return SessionState.from_meta(session.meta).reasoning or self.config.reasoning

    async def set_reasoning(self, session_id: str, level: str | None) -> Session:
        """The session's thinking effort from its next turn on (one of ``REASONING``; None: the
        config's again); refused while a turn runs (the turn writes the session's state back as
        it ends)."""
        if level is not None and level not in REASONING:
            raise EngineError(f"there is no thinking effort {level!r}: {', '.join(REASONING)}")
        session = await self._runtime.project_session(session_id)
        with self._claimed(session_id, "a turn is still running; change the thinking effort after it"):
            state = SessionState.from_meta(session.meta)
            state.reasoning = level
            await self._runtime.store.update_session(session_id, meta=state.to_meta())
        return await self._runtime.store.get_session(session_id)

    # --- for ACP (issue 35): the session's roots beside its project (additionalDirectories) ---

    @property
    def extra_roots(self) -> tuple[Path, ...]:
        """The real paths of the folders this engine reaches besides ``root`` (``open_project``)."""
        return self._runtime.extra_roots


def _check_mode(mode: str) -> None:
    """A mode a request names (kind ``invalid``: the request is wrong, not the config)."""
    if mode not in MODES:
        raise EngineError(f"there is no mode {mode!r}: {' or '.join(MODES)}")


def _as_configured(info: ModelInfo, override: ModelOverride | None) -> ModelInfo:
    """``info`` with what the user's ``[models]`` entry knows of the model put over it."""
    if override is None:
        return info
    return dataclasses.replace(
        info,
        context_window=override.context_window or info.context_window,
        vision=info.vision if override.vision is None else override.vision,
    )
