"""Hooks in process (issue 36): a hook's exit code and output read as Claude Code's contract reads
them, its decision entering the permission model, its matcher, its process, its config, and the
name and input every built-in tool shows a hook."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import anyio
import pytest

from totem_engine.api.events import RuleRef
from totem_engine.config import ConfigError, ConfigLayer, merge_layers
from totem_engine.hooks import Hooks, hooks_from_layers
from totem_engine.hooks.process import MAX_OUTPUT, Ran, run_command
from totem_engine.hooks.spec import Hook
from totem_engine.hooks.verdict import Verdict, read_outcome
from totem_engine.jobs import Jobs
from totem_engine.permissions import Decision, with_hook
from totem_engine.terminals import Terminals
from totem_engine.tools.registry import builtin_tools


def hook(event: str = "PreToolUse", matcher: str | None = None) -> Hook:
    return Hook(event, "true", matcher, 60.0, "test")


# --- what an exit code and an output mean -------------------------------------------------------


def test_exit_2_blocks_with_stderr_as_the_reason():
    outcome = read_outcome(hook(), Ran(2, stdout="ignored", stderr="no rm -rf\n"))
    assert outcome.block and outcome.permission == "deny" and outcome.reason == "no rm -rf"


def test_another_exit_code_a_timeout_and_a_failed_start_are_errors_that_block_nothing():
    for ran, said in [
        (Ran(1, stderr="boom"), "exited with 1: boom"),
        (Ran(None, timed_out=True), "killed after its timeout of 60 s"),
        (Ran(None, failed="could not start: No such file"), "could not start: No such file"),
    ]:
        outcome = read_outcome(hook(), ran)
        assert outcome.error == said and not outcome.block and outcome.permission is None


@pytest.mark.parametrize("event,context", [("UserPromptSubmit", "ctx"), ("SessionStart", "ctx"), ("PostToolUse", "ctx"), ("PreToolUse", ""), ("Stop", "")])
def test_plain_stdout_is_context_only_where_the_event_takes_it(event, context):
    assert read_outcome(hook(event), Ran(0, stdout="ctx\n")).context == context


def test_json_output_decisions():
    def read(out: dict, event: str = "PreToolUse"):
        return read_outcome(hook(event), Ran(0, stdout=json.dumps(out)))

    denied = read({"hookSpecificOutput": {"permissionDecision": "deny", "permissionDecisionReason": "not on main"}})
    assert denied.block and denied.reason == "not on main"
    asked = read({"hookSpecificOutput": {"permissionDecision": "ask"}})
    assert asked.permission == "ask" and not asked.block
    assert read({"decision": "approve"}).permission == "allow"
    blocked = read({"decision": "block", "reason": "tests fail"}, "Stop")
    assert blocked.block and blocked.reason == "tests fail"
    stopped = read({"continue": False, "stopReason": "enough", "systemMessage": "bye"})
    assert stopped.stop == "enough" and stopped.message == "bye" and not stopped.block
    assert read({"hookSpecificOutput": {"additionalContext": "branch x"}}, "SessionStart").context == "branch x"
    assert read({"hookSpecificOutput": {"permissionDecision": "maybe"}}).permission is None  # not a decision


def test_a_verdict_joins_its_hooks_the_strictest_permission_winning():
    verdict = Verdict((
        read_outcome(hook(), Ran(0, stdout='{"decision": "approve"}')),
        read_outcome(hook(), Ran(0, stdout='{"hookSpecificOutput": {"permissionDecision": "ask", "permissionDecisionReason": "check"}}')),
    ))
    assert verdict.permission == "ask" and not verdict.blocked and verdict.reason == "check"
    assert Verdict().permission is None and not Verdict().blocked


# --- a hook's decision in the permission model -------------------------------------------------


def decision(action: str, source: str) -> Decision:
    return Decision(action, RuleRef(source=source, permission="bash", pattern="*", action=action))


@pytest.mark.parametrize("source", ["default", "user", "project", "protected", "session", "mode", "boundary"])
@pytest.mark.parametrize("action", ["allow", "ask", "deny"])
@pytest.mark.parametrize("said", [None, "allow", "ask", "deny"])
def test_a_hook_denies_and_asks_but_its_allow_lifts_only_a_default_question(source, action, said):
    before = decision(action, source)
    after = with_hook(before, said, permission="bash")
    if action == "deny":
        assert after is before  # a deny rule, plan mode, the boundary: nothing lifts them
    elif said == "deny":
        assert after.action == "deny" and after.rule.source == "hook"
    elif said == "ask":
        assert after.action == "ask"
    elif said == "allow" and action == "ask":
        assert after.action == ("allow" if source == "default" else "ask")
    else:
        assert after == before


# --- the matcher --------------------------------------------------------------------------------


def test_the_matcher_is_a_whole_regular_expression_without_case():
    assert hook(matcher="Edit|Write").matches(["edit"]) and hook(matcher="Edit|Write").matches(["write", "Write"])
    assert not hook(matcher="Edit").matches(["edit_notebook"])
    assert hook(matcher="mcp__.*").matches(["github__issue", "mcp__github__issue"])
    assert all(hook(matcher=m).matches(["anything"]) for m in (None, "", "*"))
    assert hook("Stop", matcher="Bash").matches([])  # an event with nothing to match runs it


def test_hooks_come_from_every_layer_in_order_and_a_bad_one_is_a_config_error():
    user = ConfigLayer("user.toml", "user", {"hooks": {"PreToolUse": [{"command": "audit", "matcher": "Bash"}]}})
    project = ConfigLayer("project.toml", "project", {"hooks": {"PreToolUse": [{"command": "lint", "timeout": 5.0}]}})
    found = hooks_from_layers([user, project])
    assert [(h.command, h.source, h.timeout) for h in found] == [("audit", "user.toml", 60.0), ("lint", "project.toml", 5.0)]
    with pytest.raises(ConfigError, match=r"hooks.PreToolUse\[0\].matcher: not a regular expression"):
        merge_layers([ConfigLayer("bad.toml", "user", {"hooks": {"PreToolUse": [{"command": "x", "matcher": "(["}]}})])
    with pytest.raises(ConfigError, match="hooks.BeforeEverything: expected one of .PreToolUse."):
        merge_layers([ConfigLayer("bad.toml", "user", {"hooks": {"BeforeEverything": [{"command": "x"}]}})])


# --- the process --------------------------------------------------------------------------------


async def test_a_hook_gets_the_payload_on_stdin_and_its_output_is_cut(tmp_path):
    ran = await run_command(
        "cat; python3 -c 'print(\"x\" * 200000)'", {"tool_name": "Bash"}, cwd=tmp_path, env=dict(os.environ), timeout=10,
    )
    assert ran.exit_code == 0 and ran.stdout.startswith('{"tool_name": "Bash"}')
    assert len(ran.stdout.encode()) == MAX_OUTPUT


async def test_a_timeout_kills_the_hooks_whole_process_group(tmp_path):
    pid_file = tmp_path / "child"
    started = time.monotonic()
    ran = await run_command(f"sleep 30 & echo $! > {pid_file}; wait", {}, cwd=tmp_path, env=dict(os.environ), timeout=1)
    assert ran.timed_out and time.monotonic() - started < 10
    child = int(pid_file.read_text())
    await anyio.sleep(0.2)
    assert not Path(f"/proc/{child}").exists() or "Z" in Path(f"/proc/{child}/stat").read_text().split()[2]


async def test_hooks_of_one_event_run_together(tmp_path):
    hooks = Hooks([Hook("Stop", "sleep 1", None, 10.0, "t") for _ in range(3)], root=tmp_path)
    started = time.monotonic()
    verdict = await hooks.run("Stop", {"session_id": "s"})
    assert len(verdict.outcomes) == 3 and time.monotonic() - started < 2.5


# --- every built-in tool, as a hook sees it -----------------------------------------------------

CLAUDE_CODE_TOOLS = {"Bash", "Read", "Write", "Edit", "MultiEdit", "Grep", "Glob", "WebFetch", "Task", "TodoWrite", "NotebookEdit"}


def test_every_built_in_tool_has_a_hook_name_claude_code_knows_or_none(tmp_path):
    tools = builtin_tools(jobs=Jobs(tmp_path), terminals=Terminals(tmp_path))
    named = {name: tool.hook_name for name, tool in tools.items() if tool.hook_name is not None}
    assert set(named.values()) <= CLAUDE_CODE_TOOLS
    assert len(set(named.values())) == len(named)  # no two tools answer to one name
    # The tools Claude Code's hook scripts most often match on are there.
    assert {named.get("bash"), named.get("edit"), named.get("write"), named.get("read")} == {"Bash", "Edit", "Write", "Read"}


# --- Notification: beside a question, never holding it back ------------------------------------


class _Turn:
    """What HookPoints reads of a turn."""

    def __init__(self, hooks: Hooks):
        from types import SimpleNamespace

        self.agent = SimpleNamespace(hooks=hooks, root=hooks.root, subagent=False)
        self.session_id = "ses_1"
        self.options = SimpleNamespace(mode="build")
        self.events: list = []

    async def emit(self, event) -> None:
        self.events.append(event)


async def test_a_notification_hook_runs_while_the_question_waits_and_is_stopped_by_the_answer(tmp_path):
    from totem_engine.turn.hook_points import HookPoints

    log = tmp_path / "rang"
    slow = tmp_path / "slow-started"
    hooks = Hooks([
        Hook("Notification", f"cat > {log}", "permission_prompt", 10.0, "t"),
        Hook("Notification", f"touch {slow}; sleep 30", None, 60.0, "t"),
    ], root=tmp_path)
    points = HookPoints(_Turn(hooks))

    async def answer() -> str:
        while not (log.exists() and log.read_text() and slow.exists()):
            await anyio.sleep(0.05)
        return "allow_once"

    started = time.monotonic()
    with anyio.fail_after(10):
        assert await points.while_asking("Totem needs your permission: write a.txt", "permission_prompt", answer) == "allow_once"
    assert time.monotonic() - started < 10  # the sleeping hook did not hold the answer back
    rang = json.loads(log.read_text())
    assert rang["message"] == "Totem needs your permission: write a.txt" and rang["notification_type"] == "permission_prompt"
    assert rang["session_id"] == "ses_1" and rang["hook_event_name"] == "Notification"
