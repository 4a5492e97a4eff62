"""One project's engine, wired: config, store, providers, tools and the agent.

The engine API (``api/engine.py``) holds one and is the only way a front end reaches it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from totem_engine.agents import Agents
from totem_engine.attachments import Attachment
from totem_engine.branches import FilesNotAtTurnStart, NothingToRetry, NotInConversation, Tree, request_text
from totem_engine.commands import Command, Prompt, discover_commands
from totem_engine.commands import prepare as prepare_prompt
from totem_engine.compaction.checkpoints import Checkpoint
from totem_engine.compaction.now import checkpoint_now
from totem_engine.checks.totaljs import is_totaljs_project
from totem_engine.config import Config, ConfigError, ConfigLayer, LoadedConfig, user_config_path
from totem_engine.hooks import Hooks, hooks_from_layers, listed_hooks
from totem_engine.api.frontend import FrontEnd
from totem_engine.command_changes import CommandChanges, SandboxSettings
from totem_engine.jobs import Jobs
from totem_engine.leases import holding, lease_in_force
from totem_engine.mcp.servers import McpServers
from totem_engine.terminals import Terminals
from totem_engine.turn.fitting import summariser
from totem_engine.retry import MAX_TURN_RETRIES
from totem_engine.turn.agent import Agent
from totem_engine.turn.loop import Turn
from totem_engine.turn.terms import Again, TurnOptions
from totem_engine.permissions import rules_from_config
from totem_engine.redaction import know_config
from totem_engine.providers.base import Provider
from totem_engine.vocab.messages import Image
from totem_engine.providers.capabilities import CapabilityCache, CapabilityRecord, record_for, with_evidence
from totem_engine.providers.errors import ProviderError
from totem_engine.providers.registry import make_provider
from totem_engine.session_diff import FileDiff, session_diff
from totem_engine.session_state import SessionState
from totem_engine.snapshots import FileOutcome, Snapshots
from totem_engine.store import Session, SessionElsewhere, SessionInUse, Store, new_id
from totem_engine.workspace import temp_journal
from totem_engine.tools.freshness import mark_restored, mark_seen_in
from totem_engine.tools.command_runner import CommandRunner
from totem_engine.tools.registry import builtin_tools
from totem_engine.workspace.files import DiskWorkspace, Workspace


# The summariser's window for ``/compact`` when the model's is not known: the context Totem's
# own local model runs with (config ``local_ctx``'s default).
COMPACT_WINDOW = 8192


class Capabilities:
    """What each model can do (providers.capabilities), from its provider's catalogue, the shipped
    table and the config's overrides, with what earlier sessions learned by evidence."""

    def __init__(self, runtime: "Runtime"):
        self.runtime = runtime
        self.cache = CapabilityCache()

    async def record(self, provider_name: str, model_id: str) -> CapabilityRecord:
        provider = self.runtime.provider(provider_name)
        settings = self.runtime.config.providers[provider_name]
        info = None
        try:
            listed = await self.cache.models(f"{provider_name}|{settings.base_url or ''}", provider.models)
            info = next((m for m in listed if m.id == model_id), None)
        except ProviderError:
            pass  # a catalogue that cannot be read leaves the table and the defaults
        fresh = record_for(settings.kind, model_id, info, self.runtime.config.models.get(f"{provider_name}/{model_id}"))
        return with_evidence(fresh, await self.cache.get_record(provider_name, model_id))

    async def remember(self, provider_name: str, model_id: str, record: CapabilityRecord) -> None:
        await self.cache.put_record(provider_name, model_id, record)


@dataclass(frozen=True)
class Rewound:
    """What a rewind did (or, as a dry run, would do): the ids of the messages it set aside, in
    order, and what became of each file (none without files)."""

    messages: list[str]
    files: list[FileOutcome] = field(default_factory=list)


class Runtime:
    def __init__(
        self,
        root: Path,
        loaded: LoadedConfig,
        *,
        store: Store | None = None,
        workspace: Workspace | None = None,
        trust_notice: str | None = None,
        trusted: bool = False,
        holder: str = "totem",
        command_runner: CommandRunner | None = None,
        read_layers: list[ConfigLayer] | None = None,
        extra_roots: Sequence[Path] = (),
    ):
        """``holder``: the front end, as a session's lease names it to another process that
        wants the session ("totem run", "totem lsp", "totem mcp serve"; leases.py).
        ``read_layers``: the config layers as read, before trust restricted the project's (the
        hooks it lost are listed as ignored); None: ``loaded``'s. ``extra_roots``: folders the
        session reaches besides ``root`` (absolute; workspace/paths.py), none by default."""
        self.root = root.resolve()
        self.extra_roots = tuple(dict.fromkeys(r.resolve() for r in extra_roots if r.resolve() != self.root))
        self.holder = holder
        self.loaded = loaded
        know_config(loaded.config)  # scrubbed from events, the store, logs and errors (redaction.py)
        self.trust_notice = trust_notice  # what an untrusted project's config lost (trust.apply_trust)
        self.trusted = trusted  # the user trusts the project: its agent files may widen (agents.py)
        self.store = store or Store()
        settings = loaded.config.snapshots
        self.snapshots = Snapshots(
            self.store.path.parent, max_bytes=settings.max_bytes, max_age_days=settings.max_age_days
        )
        self.workspace = workspace or DiskWorkspace()
        self._providers: dict[str, Provider] = {}
        self.capabilities = Capabilities(self)
        self._editor_checkers: list | None = None
        # Where commands run and what they change, kept for undo (command_changes.py).
        self.command_changes = CommandChanges(
            self.root, max_file_bytes=settings.max_file_bytes, sandbox=sandbox_settings(loaded.config, self.store.path.parent),
            extra_roots=self.extra_roots,
        )
        self.jobs = Jobs(self.root, self.command_changes)  # the sessions' background jobs; all killed when the runtime closes
        self.terminals = Terminals(self.root, self.command_changes)  # and their interactive terminals, the same way
        self.command_changes.busy = lambda session_id: self.jobs.running(session_id) or self.terminals.running(session_id)
        self.mcp = McpServers(self.root, loaded.config, trusted=trusted)  # started by turns, stopped when it closes
        self.agent = Agent(
            root=self.root,
            store=self.store,
            provider_for=self.provider,
            tools=builtin_tools(jobs=self.jobs, terminals=self.terminals),
            jobs=self.jobs,
            terminals=self.terminals,
            commands=self.command_changes,
            mcp=self.mcp,
            workspace=self.workspace,
            snapshots=self.snapshots,
            config=loaded.config,
            capabilities=self.capabilities,
            trusted=trusted,
            rules=[r for layer in loaded.layers for r in rules_from_config(layer.data.get("permission", {}), layer.kind)],
            lease_holder=holder,
            hooks=Hooks(
                hooks_from_layers(loaded.layers), root=self.root, passed=loaded.config.command_env_pass,
                listed=listed_hooks(read_layers or loaded.layers, loaded.layers, trusted=trusted),
            ),
        )
        self.agent.command_runner = command_runner  # an ACP client's terminal (tools/command_runner.py)
        self.agent.extra_roots = self.extra_roots
        swept = temp_journal.sweep(self.root)
        if swept:
            self.agent.notices.append(
                f"Removed {len(swept)} temporary file{'s' if len(swept) > 1 else ''} that an interrupted write left"
                f" in the project: {', '.join(swept)}."
            )

    def agents(self) -> Agents:
        """The project's agents now (agents.discover_agents), an untrusted project's restricted."""
        return self.agent.agents()

    @property
    def config(self) -> Config:
        return self.loaded.config

    def editor_checkers(self) -> list:
        """The checks the editor shows as diagnostics: the project as it is now decides Total.js."""
        if self._editor_checkers is None:
            self._editor_checkers = self.agent.checkers(totaljs=is_totaljs_project(self.root, self.config.totaljs))
        return self._editor_checkers

    def provider(self, name: str) -> Provider:
        if name not in self._providers:
            settings = self.config.providers.get(name)
            if settings is None:
                raise ConfigError(f'provider "{name}" is not configured')
            self._providers[name] = make_provider(
                name,
                settings,
                timeout=min(self.config.stall_timeout, self.config.request_timeout),
                request_timeout=self.config.request_timeout,
            )
        return self._providers[name]

    def resolve_model(self, spec: str | None) -> str:
        """``provider/model`` from ``spec`` or the config; ConfigError when none or unknown."""
        provider, model = self.config.provider_and_model(spec)
        self.provider(provider)  # a provider that cannot be built is a config error, before any turn
        return f"{provider}/{model}"

    async def open_session(self, session_id: str | None, *, model: str, mode: str, text: str) -> Session:
        """``session_id`` when it belongs to this project, else a new session (``new_session``)."""
        if session_id:
            return await self.project_session(session_id)
        return await self.new_session(model=model, mode=mode, text=text)

    async def new_session(self, *, model: str, mode: str, text: str) -> Session:
        """A new session of this project, titled by ``text``, what the user typed (``session_title``)."""
        return await self.store.create_session(cwd=str(self.root), model=model, mode=mode, title=session_title(text))

    async def project_session(self, session_id: str) -> Session:
        """The session, refusing one of another project: its files, undo and history live there."""
        session = await self.store.get_session(session_id)
        if Path(session.cwd).resolve() != self.root:
            raise SessionElsewhere(session_id, session.cwd, self.root)
        return session

    def commands(self) -> dict[str, Command]:
        """The slash commands now (commands.discover_commands); their notices said at the next turn."""
        found, notices = discover_commands(self.root, trusted=self.trusted)
        self.agent.notices.extend(n for n in notices if n not in self.agent.notices)
        return found

    def prepare(self, typed: str) -> Prompt:
        """What the user typed as a ``Prompt``: a slash command expanded, ``/undo``, or as it is."""
        return prepare_prompt(typed, self.commands())

    def turn(
        self, text: str, frontend: FrontEnd, *, session: Session, model: str, mode: str | None = None, max_steps: int | None = None,
        typed: str | None = None, as_agent: str | None = None, again: Again | None = None,
        attached: list[Attachment] | None = None, images: tuple[Image, ...] = (),
    ) -> Turn:
        """A turn of ``session``, as just read or created (the turn does not read it again).
        ``typed``: what the user typed when ``text`` is a command's expansion; ``as_agent``: run as
        that agent (its prompt, tools, rules and step limit; a command's ``agent``), ConfigError
        when there is none; ``again``: the turn answers a stored request again (``regenerate``, ``retry``);
        ``attached``: the context blocks ``text`` begins with (attachments.py); ``images``: images
        the user attached (images.py)."""
        options = TurnOptions(
            mode=mode or self.config.mode,
            max_steps=self.config.chosen_max_steps if max_steps is None else max_steps,
            retry_max_wait=self.config.retry_max_wait,
            reasoning=SessionState.from_meta(session.meta).reasoning or self.config.reasoning,
        )
        agent = self.agent
        if as_agent is not None:
            definition = self.agents().get(as_agent)
            if definition is None:
                raise ConfigError(f"there is no agent named {as_agent!r} (totem agents list)")
            tools = {n: t for n, t in agent.tools.items() if definition.tools is None or n in definition.tools}
            agent = agent.nested(
                store=self.store, tools=tools, rules=[*agent.rules, *definition.rules()],
                mcp=self.mcp if definition.tools is None else None,  # an agent that lists its tools lists no server's
                lease_holder=self.agent.lease_holder,
            )
            agent.notices, self.agent.notices = self.agent.notices, []
            steps = definition.max_steps if max_steps is None and definition.max_steps is not None else options.max_steps
            options = replace(options, persona=definition.prompt, max_steps=steps)
        return Turn(
            agent, text, frontend, session_id=session.id, model=model, options=options, session=session, typed=typed, again=again,
            attached=attached, images=images,
        )

    async def regenerate(
        self, session_id: str, message_id: str, frontend: FrontEnd, *, model: str | None = None, mode: str | None = None
    ) -> Turn:
        """A new variant of the answer that ``message_id`` is part of (or of the request it is):
        the conversation follows its request again, and the turn answers it; the earlier answer
        stays, a variant to switch back to (``switch_variant``). Files are left as they are.
        ``SessionInUse`` while a turn of the session runs (this process's or another's)."""
        session = await self.project_session(session_id)
        await self.not_running(session_id)
        tree = Tree(*await self.store.tree(session_id))
        request = tree.request_of(tree.active(message_id))
        await self.store.move_head(session_id, request.id)
        return self.turn(
            request_text(request), frontend, session=session, model=self.resolve_model(model or session.model),
            mode=mode or session.mode, again=Again(request.id),
        )

    async def retry(self, session_id: str, frontend: FrontEnd, *, model: str | None = None, mode: str | None = None) -> Turn:
        """The conversation's last turn, which failed, taken up again: the step that failed (and
        what came after it) set aside, the steps that completed kept, and a turn answering the
        same request from there. ``NothingToRetry`` when the last turn did not fail, or failed
        again after ``MAX_TURN_RETRIES`` retries in a row; ``SessionInUse`` while a turn of it runs."""
        session = await self.project_session(session_id)
        await self.not_running(session_id)
        tree = Tree(*await self.store.tree(session_id))
        failed = tree.failed_turn()
        if failed is None:
            raise NothingToRetry("the session's last turn did not fail: there is nothing to retry")
        request, cut, retried = failed
        if retried >= MAX_TURN_RETRIES:
            raise NothingToRetry(
                f"the turn failed again after {retried} retries; send the request again, or try another model"
            )
        await self.store.move_head(session_id, cut.parent_id, rewound=tree.set_aside(cut))
        return self.turn(
            request_text(request), frontend, session=session, model=self.resolve_model(model or session.model),
            mode=mode or session.mode, again=Again(request.id, retry=retried + 1),
        )

    async def switch_variant(self, session_id: str, message_id: str, index: int) -> tuple[str, int]:
        """The conversation follows answer ``index`` (0: the oldest) of the request that
        ``message_id`` is or answers, from its newest message on; (the request's id, how many
        answers it has). ``NotInConversation`` when the request is not in the conversation;
        ``IndexError`` for an index it has no answer for; ``SessionInUse`` while a turn of it runs."""
        await self.project_session(session_id)
        await self.not_running(session_id)
        tree = Tree(*await self.store.tree(session_id))
        request = tree.request_of(tree.get(message_id))
        if not tree.on_path(request.id):
            raise NotInConversation(request.id)
        variants = tree.variants(request)
        if not 0 <= index < len(variants):
            raise IndexError(f"the request {request.id} has {len(variants)} answer(s); there is no variant {index}")
        await self.store.move_head(session_id, tree.newest_in(variants[index]).id)
        return request.id, len(variants)

    async def compact(self, session_id: str) -> Checkpoint | None:
        """``/compact``: the session so far summarised into a checkpoint now, by the model that
        writes its summaries (``small_model`` or the session's); None when nothing is new since the
        last checkpoint. Provider errors fall back to the one-line accounts (summary.py).
        ``SessionInUse`` while a turn of it runs."""
        session = await self.project_session(session_id)
        await self.not_running(session_id)
        provider_name, model_id = session.model.split("/", 1)
        provider = self.provider(provider_name)
        record = await self.capabilities.record(provider_name, model_id)
        await self.agent.hooks.run("PreCompact", {"session_id": session_id, "trigger": "manual", "custom_instructions": ""}, names=("manual",))
        return await checkpoint_now(
            await self.store.messages(session_id),
            tools=self.agent.tools,
            complete=summariser(self.config, provider, model_id, self.provider),
            store=self.store,
            session_id=session_id,
            provider=provider_name,
            window=record.context_window or COMPACT_WINDOW,
        )

    async def undo(self, session_id: str) -> list[FileOutcome]:
        """Restore the files of the session's last turn that changed something, holding its
        lease: ``SessionInUse`` while a turn of it runs (this process's or another's)."""
        await self.project_session(session_id)
        async with holding(self.store, session_id, holder=self.holder):
            outcomes = await self.snapshots.undo(self.workspace, session_id=session_id, root=self.root)
            await self._remember_restored(session_id, outcomes)
        return outcomes

    async def redo(self, session_id: str) -> list[FileOutcome]:
        """Re-apply the session's last undone turn, holding its lease (as ``undo``)."""
        await self.project_session(session_id)
        async with holding(self.store, session_id, holder=self.holder):
            outcomes = await self.snapshots.redo(self.workspace, session_id=session_id, root=self.root)
            await self._remember_restored(session_id, outcomes)
        return outcomes

    async def diff(self, session_id: str, *, turn_id: str | None = None) -> list[FileDiff]:
        """What the session (one of its turns, with ``turn_id``) changed in the project, from its
        snapshots (session_diff.py)."""
        await self.project_session(session_id)
        return await session_diff(self.snapshots, self.workspace, self.root, session_id, turn_id=turn_id)

    async def not_running(self, session_id: str) -> None:
        """``SessionInUse`` when a process (this one included) is running a turn of the session."""
        lease = await lease_in_force(self.store, session_id)
        if lease is not None:
            raise SessionInUse(lease)

    async def _remember_restored(self, session_id: str, outcomes: list[FileOutcome]) -> None:
        """What undo or redo left in each file becomes what the session knows of it (so the
        agent's next change of it is not stale), and the next turn tells the model (loop.py)."""
        moved = [o for o in outcomes if o.action in ("restored", "deleted")]
        if not moved:
            return
        session = await self.store.get_session(session_id)
        state = SessionState.from_meta(session.meta)
        for outcome in moved:
            data = None if outcome.action == "deleted" else await self.workspace.read_bytes(self.root / outcome.path)
            mark_restored(state.reads, outcome.path, data)
            state.restored[outcome.path] = outcome.action
        await self.store.update_session(session_id, meta=state.to_meta())

    async def rewind(
        self, session_id: str, message_id: str, *, files: bool = False,
        overwrite: Callable[[str], bool] = lambda path: False, dry_run: bool = False,
    ) -> Rewound:
        """The conversation continues from before ``message_id`` (which must be in it as it
        stands): it and every later message are set aside, marked rewound, never deleted. With
        ``files``, the files go back to their state at that point (the start of its turn,
        ``FilesNotAtTurnStart`` otherwise) through the snapshots: a file the user changed since is a
        conflict and left alone unless ``overwrite(path)`` (snapshots.rewind). ``dry_run``: what
        would happen, nothing done. ``SessionInUse`` while a turn of the session runs: the
        rewind holds its lease. A rewind to before the first message drops the session's title."""
        session = await self.project_session(session_id)
        if dry_run:
            await self.not_running(session_id)
            return await self._rewind(session, message_id, files=files, overwrite=overwrite, dry_run=True)
        async with holding(self.store, session_id, holder=self.holder):
            return await self._rewind(session, message_id, files=files, overwrite=overwrite, dry_run=False)

    async def _rewind(
        self, session: Session, message_id: str, *, files: bool, overwrite: Callable[[str], bool], dry_run: bool
    ) -> Rewound:
        session_id = session.id
        tree = Tree(*await self.store.tree(session_id))
        message = tree.active(message_id)
        if files and not tree.starts_turn(message):
            raise FilesNotAtTurnStart(message_id)
        rewound = Rewound(messages=tree.set_aside(message))
        if files:
            since = list(dict.fromkeys(m.turn_id for m in tree.since(message)))
            outcomes = await self.snapshots.rewind(
                self.workspace, session_id=session_id, since=since, root=self.root, turn_id=new_id("rwd"),
                overwrite=overwrite, dry_run=dry_run,
            )
            rewound = replace(rewound, files=outcomes)
        if dry_run:
            return rewound
        await self.store.move_head(session_id, message.parent_id, rewound=rewound.messages)
        if message.parent_id is None and session.title:
            # Back to before the first message: the title named what is set aside; the next
            # message titles the session again (Engine.chat titles an untitled session).
            await self.store.update_session(session_id, title="")
        if rewound.files:
            await self._seen_as_restored(session, rewound.files)
        return rewound

    async def _seen_as_restored(self, session: Session, outcomes: list[FileOutcome]) -> None:
        """The agent's view of the files a rewind put back is their restored content: the
        conversation is back at the point where it saw them so (its freshness check follows)."""
        state = SessionState.from_meta(session.meta)
        for outcome in outcomes:
            if outcome.path not in state.reads.seen or outcome.action not in ("restored", "deleted"):
                continue
            if outcome.action == "deleted":
                del state.reads.seen[outcome.path]
            else:
                mark_seen_in(state.reads, outcome.path, await self.workspace.read_bytes(self.root / outcome.path))
        await self.store.update_session(session.id, meta=state.to_meta())

    async def close_providers(self) -> None:
        """Close what this runtime owns alone (its MCP servers, jobs and terminals, stopped first;
        providers, caches, snapshot index), not a shared store. The sessions started here end
        first (their SessionEnd hooks)."""
        await self._end_sessions()
        await self.mcp.aclose()
        await self.jobs.aclose()
        await self.terminals.aclose()
        await self.command_changes.aclose()
        for provider in self._providers.values():
            await provider.aclose()
        await self.capabilities.cache.aclose()
        await self.snapshots.close()

    async def _end_sessions(self) -> None:
        hooks = self.agent.hooks
        for session_id in sorted(hooks.started):
            await hooks.run("SessionEnd", {"session_id": session_id, "reason": "other"}, names=("other",))
        hooks.started.clear()

    async def aclose(self) -> None:
        await self.close_providers()
        await self.store.close()


def sandbox_settings(config: Config, data_dir: Path) -> SandboxSettings:
    """The config's sandbox keys; Totem's data folder (``data_dir``: sessions, snapshots, keys)
    and config folder hidden from commands."""
    return SandboxSettings(
        mode=config.sandbox, network=config.sandbox_network,
        writable=tuple(Path(p).expanduser().resolve() for p in config.sandbox_writable),
        hidden=(data_dir.resolve(), user_config_path().parent.resolve()),
    )


def session_title(text: str) -> str:
    """A session's title from what the user typed first: one line, at most 60 characters."""
    line = " ".join(text.split())
    return line if len(line) <= 60 else line[:59] + "…"
