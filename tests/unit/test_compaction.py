"""Compaction: a derived message list that stays inside the window (totem_engine.compaction)."""

from __future__ import annotations

import json
from pathlib import Path


from totem_engine.compaction import (
    ACCOUNT_PREFIX,
    CHECKPOINT_PART,
    PINNED_HEADER,
    Ledger,
    apply_checkpoints,
    build_ledger,
    fit,
    ledger_present,
)
from totem_engine.compaction.accounts import Accounts
from totem_engine.context import estimate, output_reserve
from totem_engine.history import to_messages
from totem_engine.prompt_files import prompt
from totem_engine.vocab.chat import ChatRequest
from totem_engine.vocab.messages import Message
from totem_engine.vocab.tools import ToolCall, ToolSpec
from totem_engine.providers.errors import ContextOverflowError, ServerError
from totem_engine.store import Store
from totem_engine.tools.base import Tool, ToolInput
from totem_engine.tools.registry import builtin_tools

WINDOW = 4096
RESERVE = output_reserve(1024, WINDOW)  # 1024
SYSTEM = "You are a coding agent. Read, change and verify code."
SPECS = (
    ToolSpec("read", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}, "offset": {"type": "integer"}}}),
    ToolSpec("bash", "Run a command.", {"type": "object", "properties": {"command": {"type": "string"}}}),
)
FIRST = "Read every module under src/ and tell me which ones import os. Do not edit anything."
TODOS = [{"content": "Read all modules", "status": "in_progress"}, {"content": "Report the os imports", "status": "pending"}]
NESTED = '<instructions from="src/AGENTS.md">\nModules here must not import os directly.\n</instructions>'


def build(messages: list[Message]) -> ChatRequest:
    return ChatRequest(model="m", system=SYSTEM, messages=tuple(messages), tools=SPECS)


TOOLS = builtin_tools(skills=())


def account(name: str, arguments: str, output: str, *, is_error: bool = False) -> str:
    """What compaction puts in place of the result ``output`` of a call of ``name``."""
    call = ToolCall("c1", name, arguments)
    accounts = Accounts(TOOLS, [Message("assistant", tool_calls=(call,))], [])
    return accounts.line(Message("tool", output, tool_call_id="c1", name=name, is_error=is_error))


def file_output(index: int, lines: int = 70) -> str:
    body = "\n".join(f"{n}\tvalue_{index}_{n} = compute({n}, 'module {index}')" for n in range(1, lines + 1))
    return body


class Session:
    """A session written the way the loop writes it: user message, then one message per step."""

    def __init__(self, store: Store, session_id: str):
        self.store, self.id = store, session_id
        self.calls = 0

    @classmethod
    async def start(cls, tmp_path: Path, text: str = FIRST) -> "Session":
        store = Store(tmp_path / "totem.db")
        session = await store.create_session(cwd=str(tmp_path), model="sim/m")
        self = cls(store, session.id)
        await self.user(text)
        return self

    async def user(self, text: str) -> None:
        message = await self.store.add_message(self.id, "user", turn_id="t1")
        await self.store.add_part(message, "text", {"text": text})

    async def step(self, text: str, calls: list[tuple[str, dict, str]]) -> list[str]:
        message = await self.store.add_message(self.id, "assistant", turn_id="t1", step=1, model="sim/m")
        if text:
            await self.store.add_part(message, "text", {"text": text})
        ids = []
        for name, args, output in calls:
            self.calls += 1
            call_id = f"call_{self.calls}"
            ids.append(call_id)
            data = {"callId": call_id, "tool": name, "arguments": json.dumps(args), "input": args, "output": output, "summary": "x"}
            await self.store.add_part(message, "tool", data, status="ok")
        return ids

    async def read_step(self, index: int, lines: int = 70, extra: str = "") -> None:
        await self.step(f"Reading module {index}.", [("read", {"path": f"src/mod_{index:02d}.py"}, file_output(index, lines) + extra)])

    async def stored(self):
        return await self.store.messages(self.id)


def ledger_of(stored) -> Ledger:
    return build_ledger(stored, TODOS)


class FakeModel:
    """A summariser that records what it was asked; optionally overflows above ``max_chars``."""

    def __init__(self, max_chars: int | None = None, reply: str = "## Goal\nFind os imports.\n## Next step\nRead the next module."):
        self.inputs: list[str] = []
        self.systems: list[str] = []
        self.max_chars = max_chars
        self.reply = reply

    async def __call__(self, system: str, text: str) -> str:
        self.inputs.append(text)
        self.systems.append(system)
        if self.max_chars is not None and len(text) > self.max_chars:
            raise ContextOverflowError("prompt is too long: maximum context length exceeded")
        return self.reply


async def run_fit(session: Session, *, complete=None, force=False, window=WINDOW, tools=TOOLS, **kw):
    stored = await session.stored()
    return await fit(
        stored, build=build, window=window, output_reserve=RESERVE, ledger=ledger_of(stored), tools=tools,
        complete=complete, store=session.store, session_id=session.id, turn_id="t1", force=force, **kw,
    )


# --- one-line accounts ------------------------------------------------------------------------


def test_accounts_say_what_was_done():
    assert account("read", '{"path": "src/app.py"}', file_output(1, 348)) == "read src/app.py (348 lines)"
    partial = file_output(1, 20) + "\n[File has 900 lines; showed 1-20. Read on with offset=21.]"
    assert account("read", '{"path": "a.py"}', partial) == "read a.py lines 1-20 of 900"
    assert account("read", '{"path": "nope.py"}', "Error: nope.py does not exist.", is_error=True) == "read nope.py: Error: nope.py does not exist."
    failed = "collected 3 items\nTraceback (most recent call last):\n  File \"t.py\", line 3\nAssertionError: 2 != 3\n[exit code 1]"
    assert account("bash", '{"command": "pytest -q"}', failed) == "ran `pytest -q`: exit 1; last output: AssertionError: 2 != 3"
    assert account("bash", '{"command": "ls"}', "a\nb") == "ran `ls`: exit 0"
    hits = "a.py:1: import os\nb.py:7: import os"
    assert account("grep", '{"pattern": "import os"}', hits) == "2 matches for 'import os'"
    many = "a.py:1: x\n[250 matches in 40 files; showing the first 1 by path and line (at most 100 are shown).]"
    assert account("grep", '{"pattern": "x", "path": "src"}', many) == "250 matches for 'x' in src"
    assert account("grep", '{"pattern": "zz"}', "No matches found") == "0 matches for 'zz'"
    assert account("edit", '{"path": "a.py", "old_string": "x", "new_string": "y"}', "Edited a.py: 1 replacement.") == "edited a.py"
    assert account("write", '{"path": "b.txt", "content": "hi"}', "Created b.txt (1 lines).") == "created b.txt"
    assert account("edit", '{"path": "a.py"}', "Error: old_string not found", is_error=True).startswith("edit of a.py failed")


# --- tool results by budget -------------------------------------------------------------------


async def test_under_budget_nothing_changes(tmp_path):
    session = await Session.start(tmp_path)
    await session.read_step(1, lines=20)
    stored = await session.stored()
    fitted = await run_fit(session)
    assert not fitted.compacted
    assert fitted.messages == to_messages(stored)
    assert fitted.estimate == estimate(fitted.request, RESERVE)


async def test_oldest_results_replaced_first_newest_round_whole(tmp_path):
    session = await Session.start(tmp_path)
    for index in range(1, 6):
        await session.read_step(index)
    fitted = await run_fit(session)
    tools = [m for m in fitted.messages if m.role == "tool"]
    assert fitted.compacted and fitted.accounts >= 1
    assert tools[0].text == ACCOUNT_PREFIX + "read src/mod_01.py (70 lines)"
    assert tools[-1].text == file_output(5)  # the newest round, whole
    # Oldest first: once one result is kept whole, every later one is whole too.
    whole = [not t.text.startswith(ACCOUNT_PREFIX) for t in tools]
    assert whole == sorted(whole)
    assert fitted.estimate <= WINDOW * 0.7


async def test_skill_bodies_are_kept(tmp_path):
    session = await Session.start(tmp_path)
    skill_body = "# Skill: release\n" + "Step line of the release skill.\n" * 60
    await session.step("Loading the skill.", [("skill", {"name": "release"}, skill_body)])
    for index in range(1, 5):
        await session.read_step(index)
    fitted = await run_fit(session)
    assert fitted.accounts >= 1
    assert any(m.role == "tool" and m.text == skill_body for m in fitted.messages)


class _Query(ToolInput):
    q: str = ""


class _Probe(Tool):
    """A tool compaction has never heard of: it says itself what its results were."""

    name = "probe"
    Input = _Query

    async def prepare(self, args, ctx):
        raise NotImplementedError  # never called: only its results are compacted

    def account(self, args, output, *, summary="", is_error=False):
        return f"probed {args['q']} ({summary}, {len(output)} characters)"


class _Keeper(_Probe):
    name = "keeper"
    kept_on_compaction = True


async def test_tools_account_for_their_own_results_and_unknown_tools_get_the_plain_account(tmp_path):
    session = await Session.start(tmp_path)
    body = "result line of a tool\n" * 60
    await session.step("Probing.", [("probe", {"q": "os"}, body)])
    await session.step("Keeping.", [("keeper", {"q": "kept"}, body)])
    await session.step("An earlier run's tool.", [("gone", {"q": "old"}, body)])
    for index in range(1, 5):
        await session.read_step(index)
    fitted = await run_fit(session, tools={**TOOLS, "probe": _Probe(), "keeper": _Keeper()})
    tools = [m for m in fitted.messages if m.role == "tool"]
    assert tools[0].text == ACCOUNT_PREFIX + f"probed os (x, {len(body)} characters)"
    assert tools[1].text == body  # kept_on_compaction
    assert tools[2].text == ACCOUNT_PREFIX + "gone(q=old): x"  # its stored summary


async def test_a_failed_call_is_accounted_as_failed_by_its_stored_status(tmp_path):
    session = await Session.start(tmp_path)
    message = await session.store.add_message(session.id, "assistant", turn_id="t1", step=1, model="sim/m")
    output = "Error: src/gone.py does not exist. " + "Did you mean one of these files? " * 40
    data = {"callId": "bad", "tool": "read", "arguments": '{"path": "src/gone.py"}', "input": {}, "output": output, "summary": "x"}
    await session.store.add_part(message, "tool", data, status="error")
    for index in range(1, 5):
        await session.read_step(index)
    fitted = await run_fit(session)
    failed = next(m for m in fitted.messages if m.role == "tool" and m.tool_call_id == "bad")
    assert failed.is_error
    assert failed.text == ACCOUNT_PREFIX + "read src/gone.py: " + output[:119] + "…"


async def test_a_single_huge_round_is_cut_to_fit_with_a_note(tmp_path):
    session = await Session.start(tmp_path)
    await session.read_step(1, lines=20)
    huge = file_output(2, 2000)
    await session.step("Reading the big one.", [("read", {"path": "src/big.py"}, huge)])
    fitted = await run_fit(session, complete=FakeModel())
    last = [m for m in fitted.messages if m.role == "tool"][-1]
    assert fitted.estimate <= WINDOW * 0.7
    assert fitted.cut >= 1
    assert last.text.startswith("1\tvalue_2_1")
    shown = int(last.text.split("\n")[-2].split("\t")[0])
    assert f"Read on with offset={shown + 1}" in last.text
    # The store still holds the whole output.
    stored = await session.stored()
    outputs = [p.data["output"] for m in stored for p in m.parts if p.type == "tool"]
    assert outputs[-1] == huge
    assert not fitted.checkpoint_written  # the older round fits as an account beside the cut one


async def test_a_huge_bash_round_keeps_start_and_end(tmp_path):
    session = await Session.start(tmp_path)
    output = "\n".join(f"line {n}" for n in range(5000)) + "\nFATAL: the end\n[exit code 2]"
    await session.step("Running.", [("bash", {"command": "make"}, output)])
    fitted = await run_fit(session)
    last = fitted.messages[-1]
    assert fitted.estimate <= WINDOW * 0.7
    assert last.text.startswith("line 0")
    assert "FATAL: the end\n[exit code 2]" in last.text
    assert "Cut to fit the context window" in last.text


# --- the 40-step session ----------------------------------------------------------------------


async def forty_steps(tmp_path: Path, complete=None):
    session = await Session.start(tmp_path)
    requests = []
    for index in range(1, 41):
        fitted = await run_fit(session, complete=complete)
        requests.append(fitted)
        if index == 3:
            await session.step("Following the folder rules.", [("read", {"path": "src/pkg/a.py"}, file_output(99, 10) + "\n" + NESTED)])
        await session.read_step(index)
    requests.append(await run_fit(session, complete=complete))
    return session, requests


async def test_forty_large_reads_never_exceed_the_window(tmp_path):
    session, requests = await forty_steps(tmp_path)
    for fitted in requests:
        assert fitted.estimate <= WINDOW
        assert estimate(fitted.request, RESERVE) <= WINDOW
        assert not fitted.over
    last = requests[-1]
    # Every tool output is still stored in full.
    stored = await session.stored()
    outputs = [p.data["output"] for m in stored for p in m.parts if p.type == "tool"]
    assert len(outputs) == 41
    assert all(file_output(i) in outputs for i in range(1, 41))
    # One-line accounts stand in for the old results; the newest is whole.
    tools = [m for m in last.messages if m.role == "tool"]
    assert tools[0].text == ACCOUNT_PREFIX + "read src/mod_01.py (70 lines)"
    assert sum(t.text.startswith(ACCOUNT_PREFIX) for t in tools) >= 35
    assert tools[-1].text == file_output(40)
    # The pinned ledger, verbatim, in the last request.
    ledger = build_ledger(stored, TODOS)
    assert NESTED in ledger.instructions
    assert last.messages[0].text.startswith(PINNED_HEADER)
    assert ledger_present(last.messages, ledger)
    assert FIRST in last.messages[0].text and NESTED in last.messages[0].text
    # The first request is not sent twice.
    assert sum(FIRST in m.text for m in last.messages) == 1


async def test_forty_steps_with_a_summariser_checkpoint_and_replay(tmp_path):
    model = FakeModel()
    session, requests = await forty_steps(tmp_path, complete=model)
    assert any(f.checkpoint_written for f in requests)
    assert all(f.estimate <= WINDOW for f in requests)
    stored = await session.stored()
    checkpoints = [p for m in stored for p in m.parts if p.type == CHECKPOINT_PART]
    assert checkpoints and all(p.data["covers"] for p in checkpoints)
    last = requests[-1]
    assert model.reply in last.messages[0].text
    assert ledger_present(last.messages, build_ledger(stored, TODOS))
    assert last.messages[-1].text == file_output(40)
    # The summariser saw the prompt's fixed structure and the turns it folded.
    assert model.systems[0] == prompt("summary.txt")
    for heading in ("Goal", "User instructions and constraints", "Discoveries", "Done", "Files touched", "Next step"):
        assert f"## {heading}" in model.systems[0]
    assert "mod_01.py" in model.inputs[0]
    # Every tool output still stored in full, and the covered messages still readable.
    outputs = [p.data["output"] for m in stored for p in m.parts if p.type == "tool"]
    assert all(file_output(i) in outputs for i in range(1, 41))


# --- summary checkpoint -----------------------------------------------------------------------


def talk(index: int) -> str:
    return f"Step {index} reasoning in the open. " + "I am thinking about the design at length. " * 25


async def chatty_session(tmp_path: Path, steps: int = 12) -> Session:
    """Long assistant texts: accounts cannot shrink them, so only a checkpoint helps."""
    session = await Session.start(tmp_path)
    for index in range(1, steps + 1):
        await session.step(talk(index), [("read", {"path": f"src/m{index}.py"}, file_output(index, 5))])
    return session


async def test_checkpoint_written_when_accounts_are_not_enough_and_replayed(tmp_path):
    session = await chatty_session(tmp_path)
    model = FakeModel()
    fitted = await run_fit(session, complete=model)
    assert fitted.checkpoint_written and fitted.compacted
    assert fitted.estimate <= WINDOW * 0.7
    assert len(model.inputs) == 1 and "Step 1 reasoning" in model.inputs[0]
    stored = await session.stored()
    parts = [p for m in stored for p in m.parts if p.type == CHECKPOINT_PART]
    assert len(parts) == 1 and parts[0].data["text"] == model.reply
    covers = parts[0].data["covers"]
    # The checkpoint replaces the covered turns in the derived list...
    checkpoint, rest = apply_checkpoints(stored)
    assert checkpoint is not None and checkpoint.covers == covers
    ids = [m.id for m in stored]
    assert [m.id for m in rest] == [i for i in ids[ids.index(covers) + 1 :] if i != parts[0].message_id]
    assert not any("Step 1 reasoning" in m.text for m in fitted.messages)
    assert model.reply in fitted.messages[0].text
    # ...while the originals stay readable in the session.
    assert any("Step 1 reasoning" in p.data.get("text", "") for m in stored for p in m.parts)
    # The next step replays it without asking the model again.
    await session.step("Short.", [("read", {"path": "x.py"}, "1\tx")])
    again = await run_fit(session, complete=model)
    assert not again.checkpoint_written
    assert len(model.inputs) == 1
    assert model.reply in again.messages[0].text
    assert not any("Step 1 reasoning" in m.text for m in again.messages)


async def test_a_second_checkpoint_summarises_the_first(tmp_path):
    session = await chatty_session(tmp_path)
    first = FakeModel(reply="FIRST SUMMARY")
    await run_fit(session, complete=first)
    for index in range(20, 32):
        talk = f"Later step {index}. " + "More long deliberation about the design. " * 25
        await session.step(talk, [("read", {"path": f"src/l{index}.py"}, file_output(index, 5))])
    second = FakeModel(reply="SECOND SUMMARY")
    fitted = await run_fit(session, complete=second)
    assert fitted.checkpoint_written
    assert second.inputs and "FIRST SUMMARY" in second.inputs[0]
    assert "SECOND SUMMARY" in fitted.messages[0].text and "FIRST SUMMARY" not in fitted.messages[0].text
    assert fitted.estimate <= WINDOW * 0.7


async def test_summary_overflow_drops_the_oldest_items_and_retries(tmp_path):
    session = await chatty_session(tmp_path)
    model = FakeModel(max_chars=3000)
    fitted = await run_fit(session, complete=model, summary_window=32_000)
    assert fitted.checkpoint_written
    assert len(model.inputs) >= 2
    lengths = [len(t) for t in model.inputs]
    assert lengths == sorted(lengths, reverse=True) and lengths[-1] <= 3000 < lengths[0]
    # The oldest went first: the last try lost step 1 in full but kept the newest covered step.
    assert talk(1) in model.inputs[0] and talk(1) not in model.inputs[-1]
    newest_covered = max(i for i in range(1, 13) if talk(i) in model.inputs[0])
    assert talk(newest_covered) in model.inputs[-1]
    assert model.reply in fitted.messages[0].text


async def test_summary_that_always_overflows_still_compacts(tmp_path):
    session = await chatty_session(tmp_path)
    model = FakeModel(max_chars=0)
    fitted = await run_fit(session, complete=model)
    assert fitted.checkpoint_written
    assert fitted.estimate <= WINDOW
    assert "read src/m1.py (5 lines)" in fitted.messages[0].text  # the accounts stand in


async def test_summariser_failure_falls_back_to_accounts(tmp_path):
    session = await chatty_session(tmp_path)

    async def broken(system: str, text: str) -> str:
        raise ServerError("upstream failed")

    fitted = await run_fit(session, complete=broken)
    assert fitted.checkpoint_written and fitted.estimate <= WINDOW
    assert "could not write this summary" in fitted.messages[0].text


async def test_without_a_summariser_the_window_still_holds(tmp_path):
    session = await chatty_session(tmp_path, steps=20)
    fitted = await run_fit(session, complete=None)
    assert not fitted.checkpoint_written
    assert fitted.estimate <= WINDOW and not fitted.over


# --- force, ledger ----------------------------------------------------------------------------


async def test_force_compacts_to_a_stricter_budget(tmp_path):
    session = await Session.start(tmp_path)
    for index in range(1, 4):
        await session.read_step(index, lines=25)
    normal = await run_fit(session)
    assert not normal.compacted
    forced = await run_fit(session, force=True)
    assert forced.compacted and forced.accounts >= 1
    assert forced.estimate < normal.estimate
    assert forced.estimate <= WINDOW * 0.7 * 0.5 + 1


async def test_ledger_present_detects_a_missing_piece(tmp_path):
    session = await Session.start(tmp_path)
    for index in range(1, 6):
        await session.read_step(index)
    stored = await session.stored()
    ledger = build_ledger(stored, TODOS)
    fitted = await run_fit(session)
    assert ledger_present(fitted.messages, ledger)
    assert not ledger_present(fitted.messages[1:], ledger)
    assert not ledger_present(to_messages(stored), ledger)  # the todo list is not in a plain history


def test_build_ledger_takes_first_user_text_todos_and_nested_instructions():
    from totem_engine.store import StoredMessage, StoredPart

    def part(n, type, data):
        return StoredPart(f"p{n}", "m", n, type, data, "ok", False, 0.0, 0.0)

    stored = [
        StoredMessage("m1", "s", 1, "user", "t", None, None, 0.0, [part(1, "text", {"text": "first"})]),
        StoredMessage("m2", "s", 2, "assistant", "t", 1, "x", 0.0, [part(2, "tool", {"callId": "c", "tool": "read", "output": "1\tx\n" + NESTED})]),
        StoredMessage("m3", "s", 3, "user", "t", None, None, 0.0, [part(3, "text", {"text": "second"})]),
    ]
    ledger = build_ledger(stored, TODOS)
    assert ledger.first_request == "first"
    assert ledger.instructions == (NESTED,)
    assert ledger.todos == (("in_progress", "Read all modules"), ("pending", "Report the os imports"))
    rendered = ledger.render()
    assert "first" in rendered and "- [in_progress] Read all modules" in rendered and NESTED in rendered


async def test_a_huge_user_message_is_cut_so_the_window_holds(tmp_path):
    session = await Session.start(tmp_path)
    await session.read_step(1, lines=10)
    await session.user("Here is the log:\n" + "log line that goes on and on\n" * 3000)
    fitted = await run_fit(session, complete=None)
    assert fitted.estimate <= WINDOW and not fitted.over
    assert any("Cut to fit the context window" in m.text for m in fitted.messages if m.role == "user")


async def test_unknown_window_sends_the_history_as_is(tmp_path):
    session = await Session.start(tmp_path)
    for index in range(1, 30):
        await session.read_step(index)
    stored = await session.stored()
    fitted = await run_fit(session, window=None)
    assert not fitted.compacted and fitted.window is None
    assert fitted.messages == to_messages(stored)
    assert fitted.estimate > WINDOW  # estimated all the same, for the context event


async def test_a_checkpoint_outside_a_forked_list_is_ignored(tmp_path):
    session = await chatty_session(tmp_path)
    await run_fit(session, complete=FakeModel())
    stored = await session.stored()
    checkpoint, rest = apply_checkpoints(stored)
    assert checkpoint is not None
    cut = [m for m in stored if m.id != checkpoint.covers]  # as if forked before it
    again, rest = apply_checkpoints(cut)
    assert again is None and len(rest) == len(cut) - 1  # the checkpoint's own message is left out


def cut(name: str, arguments: str, output: str, chars: int) -> str:
    """What compaction makes of the result ``output`` of a call of ``name`` cut to ``chars``."""
    call = ToolCall("c1", name, arguments)
    accounts = Accounts(TOOLS, [Message("assistant", tool_calls=(call,))], [])
    return accounts.cut(Message("tool", output, tool_call_id="c1", name=name), chars)


def test_each_tool_cuts_its_own_results_with_its_own_note():
    log = "\n".join(f"line {n}" for n in range(1, 400)) + "\nAssertionError: 2 != 3\n[exit code 1]"
    ran = cut("bash", '{"command": "pytest"}', log, 600)
    assert ran.startswith("line 1\n") and "AssertionError: 2 != 3\n[exit code 1]" in ran  # the start and the end
    assert ran.endswith(f"the start and end of {len(log)} characters shown. Run it again with the output sent to a file, then read or grep that file in parts.]")
    assert len(ran) <= 600
    hits = "\n".join(f"a.py:{n}: import os" for n in range(1, 200))
    found = cut("grep", '{"pattern": "os"}', hits, 500)
    assert found.startswith("a.py:1: import os\n") and found.endswith("Narrow the pattern, path or include.]")
    other = cut("gone", "{}", "x\n" * 500, 300)  # a tool this run does not have
    assert other.startswith("x\nx\n") and other.endswith("Ask for a smaller part to see the rest.]") and len(other) <= 300
    assert cut("read", '{"path": "a.py"}', "short", 300) == "short"


def test_read_account_ignores_an_attached_instructions_block():
    output = file_output(1, 30) + "\n" + NESTED
    assert account("read", '{"path": "src/a.py"}', output) == "read src/a.py (30 lines)"


async def test_completer_asks_the_model_without_tools_and_joins_its_text():
    from totem_engine.compaction import completer
    from totem_engine.vocab.chat import FinishChunk, TextChunk

    seen = []

    class Scripted:
        name = "sim"

        async def stream(self, request):
            seen.append(request)
            yield TextChunk("<think>hmm</think>## Goal\n")
            yield TextChunk("Find os imports.")
            yield FinishChunk(reason="stop")

    text = await completer(Scripted(), "small-m")("SYSTEM", "the transcript")
    assert text == "## Goal\nFind os imports."
    assert seen[0].model == "small-m" and seen[0].system == "SYSTEM" and not seen[0].tools
    assert seen[0].messages[0].text == "the transcript" and seen[0].max_tokens


# --- /compact ---------------------------------------------------------------------------------


async def test_checkpoint_now_covers_the_whole_session_and_a_later_one_includes_it(tmp_path):
    from totem_engine.compaction.now import checkpoint_now

    session = await Session.start(tmp_path)
    await session.read_step(1)
    model = FakeModel(reply="## Goal\nFind os imports.")

    async def now():
        return await checkpoint_now(
            await session.stored(), tools=TOOLS, complete=model, store=session.store, session_id=session.id,
            provider=None, window=WINDOW,
        )

    first = await now()
    stored = await session.stored()
    assert first is not None and first.messages == 2 and first.covers == stored[-2].id
    assert FIRST in model.inputs[0] and "mod_01.py" in model.inputs[0]
    assert await now() is None and len(model.inputs) == 1  # nothing new: no request
    # Within budget, fit still replays it: the next request starts from the summary.
    fitted = await run_fit(session, complete=model)
    assert first.text in fitted.messages[0].text and file_output(1) not in str(fitted.messages)

    await session.read_step(2)
    second = await now()
    assert second is not None and second.messages == 3
    assert first.text in model.inputs[1] and "mod_02.py" in model.inputs[1] and file_output(1) not in model.inputs[1]
