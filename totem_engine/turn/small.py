"""The small-model policy: what a turn does differently for a small model (docs/decisions.md,
"Small models"), as a ``TurnPolicy`` (policy.py).

A model with a window under 64K tokens or a small tier (tools/registry.py ``is_small``) gets, on
top of its short prompt (prompt.py), its output capped at what its window keeps free, its
earlier calls replayed as it wrote them (textcalls/fileblocks.py `as_written`) and the file blocks it writes
(textcalls/fileblocks.py, taught by ``small_tool_prompt``):

- the files its request names shown with the request, and its Python checked (``prepare``);
- a block naming a new file the request does not mention written to the file it names
  (``block_path``);
- what its Python gets wrong in a known way mended in the change (``mend``);
- the turn ended once an answer was a clean change and the project's tests pass, a failure
  going back to it (``done_after``);
- one more ask when it stops having changed nothing after saying what it would change or after
  a request for a change, or repeats itself before changing anything (``after_stall``), and
  another when a call it wrote could not be read (``after_answer``);
- a fresh attempt at the request when it ends with its change failing the tests or the checks,
  or sends the files back unchanged after they failed (``afresh``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import anyio

from totem_engine.api import events as ev
from totem_engine.checks.copied_tests import without_copied_tests
from totem_engine.checks.imports import fixed_imports
from totem_engine.checks.python import PythonChecker
from totem_engine.context import output_reserve
from totem_engine.mentions import PROJECT_FILES_LIMIT, mentions, project_files, unasked_reads
from totem_engine.prompt_files import prompt
from totem_engine.providers.capabilities import CapabilityRecord, detect_prose_edit
from totem_engine.store import new_id
from totem_engine.textcalls import FILE_BLOCK_TOOLS, as_written, looks_like_a_call, small_tool_prompt
from totem_engine.tools.base import Action, ToolContext, ToolResult
from totem_engine.tools.freshness import content_hash, mark_seen, mark_seen_in
from totem_engine.turn.host import PolicyHost
from totem_engine.turn.policy import Afresh, AfterAnswer, AskAgain, Finish
from totem_engine.turn.round import Round
from totem_engine.turn.stream import FileBlocks
from totem_engine.turn.unmade import UnmadeChange, asks_for_a_change
from totem_engine.verify import MAX_RUNS, TEST_RUN, find_test_command, is_test_file, passed
from totem_engine.vocab.tools import ToolCall, ToolSpec

DEFAULT_WINDOW = 8192  # tokens, when the model's window is not known
# A fresh attempt's sampling temperature, when the configured one is lower: at 0 the same request
# gets the same failing answer; at 0.7 the local model's answers to the README's task passed its
# test in half the seeds tried.
FRESH_TEMPERATURE = 0.7


class _Attempt:
    """What the policy knows of one attempt at the request; a fresh attempt starts a new one."""

    def __init__(self, number: int):
        self.number = number
        self.test_runs = 0
        self.unmade = UnmadeChange()
        self.malformed_asks = 2
        self.untested = False  # a file was changed since the tests last ran
        self.flagged: set[str] = set()  # the files the checks found something in during the attempt
        # Why the attempt's files are not right: what the checks still find in them, or the output
        # of the tests' last run, when it failed. None: no failure known.
        self.failure: str | None = None


class SmallModelPolicy:
    """The ``TurnPolicy`` of a small model (tools/registry.py ``is_small``), for one turn."""

    short_prompt = True
    whole_files = True
    scripts = False

    def __init__(self, turn: PolicyHost):
        self.turn = turn
        self.named: list[str] = []  # the files the request names (mentions.py)
        self.files: set[str] | None = None  # the project's at the turn's start; None: too many to list
        self.attempt = _Attempt(1)

    def _edits_files(self, name: str) -> bool:
        tool = self.turn.tools.get(name)
        return tool is not None and tool.edits_files

    @property
    def writes_blocks(self) -> bool:
        """It writes its calls as text, so files come as blocks (and can be echoed)."""
        return self.turn.text_calls_wanted()

    def max_tokens(self, record: CapabilityRecord) -> int | None:
        """A small model that loses its way can write until its window is full (minutes on a CPU):
        its answers are capped at the output the window keeps free for them."""
        return output_reserve(record.max_output_tokens, record.context_window)

    def history(self, history: list) -> list:
        """Its earlier calls replayed as it wrote them, when it writes them as text."""
        return as_written(history) if self.writes_blocks else history

    def tool_prompt(self, specs: tuple[ToolSpec, ...]) -> str:
        return small_tool_prompt(specs)

    def file_blocks(self) -> FileBlocks:
        return FileBlocks(enabled=self.writes_blocks, default_path=self.default_path, path_for=self.block_path)

    @property
    def default_path(self) -> str | None:
        """The file a block that names none is taken for: the one file the request names, or the
        one that is not a test ("add f to report.py; the test in test_report.py checks it")."""
        if len(self.named) == 1:
            return self.named[0]
        code = [rel for rel in self.named if not is_test_file(rel)]
        return code[0] if len(code) == 1 else None

    def block_path(self, path: str) -> str:
        """The file a block naming ``path`` is written to: ``default_path`` when ``path`` is a new
        file the request does not mention (asked to add ``median`` to calc.py, the model named its
        block median.py), ``path`` otherwise."""
        if self.default_path is None or self.files is None or path in self.files:
            return path
        return path if path.rsplit("/", 1)[-1] in self.turn.text else self.default_path

    async def prepare(self) -> None:
        """Its Python checked after each change; the files its request names (and, on a session's
        first turn, the others mentions.py picks) shown with the request, counted as read."""
        turn = self.turn
        turn.checkers.append(PythonChecker())
        if turn.answering_again:
            return  # what was shown with the request the first time is stored with it, and still shown
        root = turn.agent.root
        window = turn.record.context_window or DEFAULT_WINDOW
        files = await anyio.to_thread.run_sync(project_files, root)
        self.files = set(files) if len(files) < PROJECT_FILES_LIMIT else None
        found = await mentions(
            root,
            turn.text,
            budget=window,  # characters: about a quarter of the window
            read=turn.agent.workspace.read_bytes,
            files=files,
            first_turn=len(await turn.agent.store.messages(turn.session_id)) == 1,
            readable=unasked_reads(turn.calls.policy, root),
            others_budget=window // 2,
        )
        if found is None:
            return
        text = found.text
        if found.shown and self.writes_blocks:
            text += "\n\n" + prompt("small_reminder.txt")  # last, nearest to the answer
        self.named = found.named
        await turn.agent.store.add_part(turn.user_message, "context", {"text": text, "files": [rel for rel, _ in found.shown]})
        for rel, data in found.shown:
            mark_seen_in(turn.state.reads, rel, data)
            turn.state.reads.shown[rel] = content_hash(data)

    async def after_answer(self, reply: str, message_id: str, *, changed: bool, malformed: bool) -> AfterAnswer:
        """After an answer without calls (``reply``, in message ``message_id``): whether it is
        asked again, to write a call it got wrong (``malformed``: a json fence naming a tool that
        did not parse, as ``"arguments": [...]``, or a fenced call of a tool that does not exist;
        twice a turn at most) or to make the change it claimed, announced or described
        (unmade.UnmadeChange). The answer asked again for is discarded (kept in the store, as
        a retried step's): shown it, the model wrote it again word for word."""
        if not self.writes_blocks:
            return Finish()
        if (malformed or looks_like_a_call(reply)) and self.attempt.malformed_asks > 0:
            self.attempt.malformed_asks -= 1
            tools = ", ".join(spec.name for spec in self.turn.specs if spec.name not in FILE_BLOCK_TOOLS)
            notice = "The model's tool call could not be read; it is asked to write it again."
            await self._ask_again(message_id, "malformed_call.txt", notice, tools=tools)
            return AskAgain()
        requested = asks_for_a_change(self.turn.text)
        if not self.attempt.unmade.nudge(reply, changed=changed, prose_edit=detect_prose_edit(reply), requested=requested):
            return Finish()
        await self._ask_again(message_id, "unmade_change.txt", "The model changed no file; it is asked to make the change.")
        return AskAgain()

    async def after_stall(self, message_id: str, *, changed: bool) -> None:
        """After a round of calls (in message ``message_id``) that brought nothing new: a request
        for a change with none made yet is asked for again, once a turn with the other asks for
        it, and the round is discarded. The model otherwise repeats the round (the tests run four
        times over, the same file read again) until a guard ends the turn."""
        requested = asks_for_a_change(self.turn.text)
        if self.writes_blocks and self.attempt.unmade.nudge("", changed=changed, prose_edit=False, requested=requested):
            await self._ask_again(message_id, "unmade_change.txt", "The model changed no file; it is asked to make the change.")

    async def done_after(self, calls: list[ToolCall], round_: Round, *, changed: bool) -> bool:
        """After the round ``round_`` of ``calls`` (``changed``: the attempt has changed a file):
        whether the attempt is done; never after a round a guard stopped. A round that changed a
        file leaves the attempt untested. An answer that was a clean change is, once the tests
        pass (another round would only restate it; aider stops there too); one that leaves a file
        the checks still find something in (``_findings_left``) is not, and that is its failure. Files sent back unchanged are not asked for
        again: a small model also echoes the file it was asked a question about, and asked for
        "the change" it invents one. But the tests run after them too: when the model took the
        file as it was for the fix, a failure shows it what is still wrong; when they pass after
        the attempt's change, it is done. Sent back after a failure, they end the attempt, for a
        fresh one (``afresh``) while the turn has one left: the model has no other idea."""
        if round_.changed:
            self.attempt.untested = True
        if round_.stop:
            return False
        if round_.changed:
            self.attempt.failure = await self._findings_left(round_)  # an earlier failure is the old files'
        if not (self.writes_blocks and round_.ok and all(self._edits_files(call.name) for call in calls)):
            return False
        if round_.changed:
            return self.attempt.failure is None and await self._tests_pass()
        if self.attempt.failure is not None and self._may_start_afresh:
            return True
        return await self._tests_pass() and changed

    async def _findings_left(self, round_: Round) -> str | None:
        """What the checks find now, the answer all written, in the files they found something in
        during the attempt: a later file of the answer can mend what a finding on an earlier one
        said (a function renamed, then its importer), and a file the model left as it was keeps
        its findings though this answer's results do not repeat them."""
        self.attempt.flagged.update(round_.flagged)
        lines: list[str] = []
        for rel in sorted(self.attempt.flagged):
            found = (await self.turn.calls.findings(rel))[0]
            if not found:
                self.attempt.flagged.discard(rel)
            lines += found
        return "\n".join(lines) or None

    @property
    def _may_start_afresh(self) -> bool:
        return self.writes_blocks and self.attempt.number <= self.turn.agent.config.fresh_attempts

    async def afresh(self, stop: ev.StopReason, *, changed: bool) -> Afresh | None:
        """After an attempt that ended ``stop`` (``changed``: having changed a file): whether the
        request is tried afresh, at most ``fresh_attempts`` times a turn. It is when the attempt
        failed at a change (``_failed_at_a_change``). The files the turn changed are put back
        (unless the user changed one meanwhile: then the attempt stands), the attempt's messages
        are discarded (kept in the store, still shown), and the next attempt is sampled
        (``FRESH_TEMPERATURE``, the attempt's number as the seed). A small model does not get out
        of its own mistake: told of the failure, it sent the same code back; a new draw from the
        request did the task."""
        turn, agent = self.turn, self.turn.agent
        if stop not in ("finished", "guard") or turn.calls.guards.rejections or not self._may_start_afresh:
            return None  # rejected calls: the user is saying no, not the tests
        if not await self._failed_at_a_change(changed):
            return None
        outcomes = await agent.snapshots.restore_turn(
            agent.workspace, session_id=turn.session_id, turn_id=turn.turn_id, root=agent.root
        )
        if any(outcome.action == "conflict" for outcome in outcomes):
            return None
        for outcome in outcomes:
            if outcome.action == "deleted":
                turn.state.reads.seen.pop(outcome.path, None)
            else:
                mark_seen_in(turn.state.reads, outcome.path, await agent.workspace.read_bytes(agent.root / outcome.path))
        for message in await agent.store.messages(turn.session_id):
            said = any(part.type == "notice" for part in message.parts)  # Totem's, to the user
            if message.turn_id == turn.turn_id and message.id != turn.user_message and not said:
                await agent.store.discard_message_parts(message.id)
        self.attempt = _Attempt(self.attempt.number + 1)
        put_back = f"put {', '.join(o.path for o in outcomes)} back and " if outcomes else ""
        notice = (
            f"The model's attempt still fails the project's tests or checks; Totem {put_back}asks it afresh"
            f" (attempt {self.attempt.number} of {agent.config.fresh_attempts + 1})."
        )
        return Afresh(temperature=FRESH_TEMPERATURE, seed=self.attempt.number, notice=notice)

    async def _failed_at_a_change(self, changed: bool) -> bool:
        """The attempt was for a change (it made one, or the request asks for one) and its last
        change has check findings, or the project's tests fail (run once more when a change came
        after their last run), naming a file the request names or the turn changed, or its test
        file (``_names_file``): a test that fails elsewhere, perhaps since before the turn, is
        not this change's doing."""
        turn = self.turn
        if not (changed or asks_for_a_change(turn.text)):
            return False
        if self.attempt.untested and self.attempt.failure is None:
            await self._tests_pass(limited=False)
        if self.attempt.failure is None:
            return False
        changed_files = await turn.agent.snapshots.turn_paths(session_id=turn.session_id, turn_id=turn.turn_id)
        return any(_names_file(self.attempt.failure, rel, turn.agent.root) for rel in {*self.named, *changed_files})

    async def _tests_pass(self, *, limited: bool = True) -> bool:
        """The project's tests (verify.py) as a ``bash`` call of a message of its own, asked and
        shown like the model's; True when they passed or do not run (``limited``: after
        ``MAX_RUNS`` in the attempt, they do not). A failure stays in the history for the model's
        next step, and is the attempt's ``failure``."""
        turn = self.turn
        if limited and self.attempt.test_runs >= MAX_RUNS:
            return True
        files = await anyio.to_thread.run_sync(project_files, turn.agent.root)
        command = await find_test_command(turn.agent.config.test_command, files)
        if command is None:
            return True
        self.attempt.test_runs += 1
        self.attempt.untested = False
        message_id = await turn.agent.store.add_message(turn.session_id, "assistant", turn_id=turn.turn_id, model=turn.model)
        arguments = json.dumps({"command": command, "description": "Run the project's tests"})
        run = await turn.calls.run([turn.unique_call(ToolCall(id=new_id(TEST_RUN), name="bash", arguments=arguments))], message_id)
        if run.stop or run.last is None:
            return True  # a guard stopped it: nothing more to learn from the tests
        ok = run.clean and passed(command, run.last.metadata.get("exit_code"))
        self.attempt.failure = None if ok else run.last.output
        return ok

    async def mend(self, action: Action, ctx: ToolContext, result: ToolResult) -> None:
        """What a small model's Python file gets wrong in a known way, mended in the call's change
        set like the formatter's rewrite, and said in the result: a copy of a project test taken
        out (checks/copied_tests.py), then an import of a name from a module that lacks it moved
        to the one project module that defines it (checks/imports.py ``fixed_imports``)."""
        root, workspace = self.turn.agent.root, self.turn.agent.workspace
        for rel in [f.path for f in action.files if f.new_text is not None and f.path.endswith(".py")]:
            try:
                text = (await workspace.read_bytes(root / rel)).decode("utf-8", errors="replace")
            except OSError:
                continue  # the write's own result stands; the checks will say what they can
            notes = []
            without = await anyio.to_thread.run_sync(without_copied_tests, root, rel, text)
            if without is not None:
                text = without[0]
                notes.append(f"Totem took {', '.join(without[1])} out of {rel}: a project test, which stays in its test file")
            fixed = await anyio.to_thread.run_sync(fixed_imports, root, rel, text)
            if fixed is not None:
                text = fixed[0]
                notes.append(f"Totem fixed an import in {rel}: {'; '.join(fixed[1])}")
            if not notes:
                continue
            data = text.encode("utf-8")
            await workspace.write_bytes(root / rel, data)
            mark_seen(ctx, rel, data)
            result.output += "".join(f"\n({note})" for note in notes)

    async def _ask_again(self, message_id: str, prompt_file: str, notice: str, **fields: str) -> None:
        """Discard the answer in ``message_id`` and ask the model again, in the user's place, with
        ``prompts/<prompt_file>`` (``{request}``: the user's request, repeated where a small model
        heeds it most, last; ``{name}`` for each of ``fields``); say so."""
        turn = self.turn
        await turn.agent.store.discard_message_parts(message_id)
        message = await turn.agent.store.add_message(turn.session_id, "user", turn_id=turn.turn_id)
        text = prompt(prompt_file).replace("{request}", turn.text)
        for name, value in fields.items():
            text = text.replace(f"{{{name}}}", value)
        await turn.agent.store.add_part(message, "context", {"text": text, "nudge": True})
        await turn.emit(ev.Notice(session_id=turn.session_id, level="info", message=notice))


def _names_file(text: str, rel: str, root: Path) -> bool:
    """Whether ``text`` names the project file ``rel`` (by its absolute path or as a path of its
    own, not inside another name: ``utils.py`` is not in ``test_string_utils.py``) or, for a
    module, its test file by the usual names (``test_calc.py`` or ``calc_test.py``, in any
    folder): an assertion that fails in the test need not pass through the module."""
    if str(root / rel) in text or re.search(rf"(?<![\w./\\-]){re.escape(rel)}(?![\w/])", text):
        return True
    stem, dot, suffix = rel.rsplit("/", 1)[-1].rpartition(".")
    tests = [f"test_{stem}{dot}{suffix}", f"{stem}_test{dot}{suffix}"] if dot and not is_test_file(rel) else []
    return any(re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w/])", text) for name in tests)
