"""The bash tool driven directly (prepare, then apply) over a real folder, and how commands are split."""

from __future__ import annotations

import os
import re
from pathlib import Path

import anyio
import pytest

from totem_engine.tools.base import ToolContext, ToolResult
from totem_engine.tools.bash import BashTool, HeadTail, is_read_only
from totem_engine.vocab.tools import ToolError
from totem_engine.workspace.files import DiskWorkspace
from totem_engine.workspace.shell_words import parse


@pytest.fixture
def ctx(root: Path) -> ToolContext:
    return ToolContext(root=root, workspace=DiskWorkspace(), session_id="s1", call_id="c1")


async def prepare(ctx: ToolContext, **arguments):
    return await BashTool().prepare(BashTool.Input.model_validate(arguments), ctx)


async def bash(ctx: ToolContext, **arguments) -> ToolResult:
    action = await prepare(ctx, **arguments)
    with anyio.fail_after(20):  # a hang fails the test instead of stalling the suite
        return await action.apply(ctx)


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting to be reaped has already stopped)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


async def wait_gone(pid: int) -> bool:
    """The orphaned child is reaped by init asynchronously; give it a moment."""
    for _ in range(40):
        if not alive(pid):
            return True
        await anyio.sleep(0.05)
    return False


# --- running ---------------------------------------------------------------------------------


async def test_output_and_exit_zero(ctx: ToolContext):
    result = await bash(ctx, command="echo hello; echo oops >&2")
    assert not result.is_error
    assert result.output == "hello\noops"  # stderr merged, no exit note for 0
    assert result.summary == "exit 0"
    assert result.metadata == {"exit_code": 0, "timed_out": False}


async def test_non_zero_exit_is_ok_and_says_the_code(ctx: ToolContext):
    result = await bash(ctx, command="echo partial; exit 3")
    assert not result.is_error
    assert result.output == "partial\n[exit code 3]"
    assert result.summary == "exit 3"


async def test_no_output(ctx: ToolContext):
    result = await bash(ctx, command="true")
    assert result.output == "(no output)"


async def test_runs_in_the_project_root(root: Path, ctx: ToolContext):
    result = await bash(ctx, command="pwd; touch made-here")
    assert Path(result.output.strip()).resolve() == root.resolve()
    assert (root / "made-here").exists()


async def test_stdin_is_empty(ctx: ToolContext):
    result = await bash(ctx, command="cat; echo after")  # would hang reading a terminal
    assert result.output == "after"


async def test_background_child_holding_stdout_does_not_block(ctx: ToolContext):
    with anyio.fail_after(10):
        result = await bash(ctx, command="sleep 60 & echo $!; echo done")
    pid_line, done = result.output.splitlines()
    assert done == "done" and result.summary == "exit 0"
    os.kill(int(pid_line), 9)  # don't leave the sleeper behind the test


async def test_timeout_kills_the_whole_group(ctx: ToolContext):
    result = await bash(ctx, command="echo $$; sleep 31 & echo $!; sleep 30; echo never", timeout=1)
    shell_pid, child_pid = (int(line) for line in result.output.splitlines()[:2])
    assert result.is_error
    assert "Timed out after 1 s" in result.output and "killed" in result.output
    assert "never" not in result.output
    assert result.summary == "timed out after 1 s"
    assert result.metadata["timed_out"] is True
    assert not group_alive(shell_pid)  # the shell led the group: nothing of it is left
    assert await wait_gone(child_pid)


async def test_cancellation_kills_the_whole_group(root: Path, ctx: ToolContext):
    action = await prepare(ctx, command="echo $$ > shell.pid; sleep 31 & echo $! > child.pid; sleep 30")
    pids = root / "child.pid"
    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(action.apply, ctx)
            while not pids.exists() or not pids.read_text().strip():
                await anyio.sleep(0.02)
            group.cancel_scope.cancel()
    shell_pid = int((root / "shell.pid").read_text())
    child_pid = int(pids.read_text())
    assert not group_alive(shell_pid)
    assert await wait_gone(child_pid)


async def test_timeout_is_clamped_with_a_note(ctx: ToolContext):
    action = await prepare(ctx, command="echo hi", timeout=5000)
    assert action.timeout == 600
    result = await action.apply(ctx)
    assert "timeout=5000 is above the maximum; used 600." in result.output
    assert (await prepare(ctx, command="echo hi", timeout=0)).timeout == 120
    assert (await prepare(ctx, command="echo hi")).timeout == 120


async def test_output_cap_keeps_head_and_tail(ctx: ToolContext):
    ctx.output_budget = 1000
    result = await bash(ctx, command="seq 1 5000")
    lines = result.output.splitlines()
    assert lines[0] == "1" and lines[-1] == "5000"
    note = re.search(r"\[\.\.\. (\d+) lines \((\d+) characters\) left out \.\.\.\]", result.output)
    assert note is not None
    full = "".join(f"{n}\n" for n in range(1, 5001))
    assert int(note.group(2)) == len(full) - 1000  # exactly half the cap kept at each end
    assert int(note.group(1)) == full.count("\n", 500, len(full) - 500)
    assert "2500" not in lines  # the middle is gone


async def test_output_cap_is_at_most_30000(ctx: ToolContext):
    ctx.output_budget = 10**6
    result = await bash(ctx, command="head -c 100000 /dev/zero | tr '\\0' a")
    assert 30_000 <= len(result.output) < 30_200


def test_head_tail_counts_dropped_lines():
    kept = HeadTail(10)
    for chunk in ("ab\ncd\n", "ef\ngh\nij\n", "kl\nmn\n"):
        kept.add(chunk)
    # 21 characters: the first 5 and the last 5 are kept; 11 characters holding 4 newlines go
    assert kept.text() == "ab\ncd\n[... 4 lines (11 characters) left out ...]\nl\nmn\n"


def test_head_tail_passes_short_output_whole():
    kept = HeadTail(100)
    kept.add("short\n")
    assert kept.text() == "short\n"


async def test_invalid_utf8_is_replaced_not_fatal(ctx: ToolContext):
    result = await bash(ctx, command="printf 'a\\377b'")
    assert result.output == "a\ufffdb"


# --- prepare: title, permission, patterns ------------------------------------------------------


async def test_prepare_describes_and_touches_nothing(root: Path, ctx: ToolContext):
    action = await prepare(ctx, command="touch x && npm test")
    assert action.title == "$ touch x && npm test"
    assert action.permission == "bash"
    assert action.patterns == ["touch x", "npm test"]
    assert action.changes is True
    assert not (root / "x").exists()
    described = await prepare(ctx, command="ls", description="List files")
    assert described.title == "List files" and described.changes is False


async def test_empty_command_is_refused(ctx: ToolContext):
    with pytest.raises(ToolError, match="empty"):
        await prepare(ctx, command="  # only a comment\n")


async def test_assignments_give_a_second_pattern(ctx: ToolContext):
    action = await prepare(ctx, command="FOO=1 rm -rf build")
    assert action.patterns == ["FOO=1 rm -rf build", "rm -rf build"]  # so a deny of "rm *" still applies
    assert action.always_pattern == "rm"


@pytest.mark.parametrize(
    "command, expected",
    [
        ("npm test --watch", "npm test"),
        ("git status", "git status"),
        ("ls", "ls"),
        ("ls -la src", "ls"),
        ("python app.py", "python"),
        ("cargo build --release", "cargo build"),
        ("make", "make"),
        ("./run.sh fast", "./run.sh fast"),
        ("cat src/a.py", "cat"),
        ("cd web && npm run build", "npm run"),  # the part that needed asking
        ("git status && git log", "git status"),  # all read-only: the first
    ],
)
async def test_always_pattern(ctx: ToolContext, command: str, expected: str):
    assert (await prepare(ctx, command=command)).always_pattern == expected


# --- splitting --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command, parts",
    [
        ("a && b | c ; d || e", ["a", "b", "c", "d", "e"]),
        ("ls\npwd\n\ngit  status", ["ls", "pwd", "git status"]),
        ('echo "a && b; c" | grep   x', ["echo a && b; c", "grep x"]),
        ("echo 'x | y' && ls", ["echo x | y", "ls"]),
        ("echo a\\;b", ["echo a;b"]),
        ("sleep 60 & echo done", ["sleep 60", "echo done"]),
        ("make 2>&1 | tee log", ["make 2>&1", "tee log"]),
        ("ls &> out", ["ls &> out"]),
        ("(cd x && make) |& cat", ["cd x", "make", "cat"]),
        ("npm test \\\n  --watch", ["npm test --watch"]),
        ("echo hi # && rm -rf /", ["echo hi"]),
        ("echo a#b", ["echo a#b"]),
        ("echo $(rm -rf x) `date`", ["echo $(rm -rf x) `date`", "rm -rf x", "date"]),
        ('echo "$(git rev-parse HEAD)"', ["echo $(git rev-parse HEAD)", "git rev-parse HEAD"]),
        ("echo $((1 + 2)) && ls", ["echo $((1 + 2))", "ls"]),
        ("diff <(ls a) <(ls b)", ["diff <(ls a) <(ls b)", "ls a", "ls b"]),
        ("if grep -q x f; then echo y; else rm f; fi", ["grep -q x f", "echo y", "rm f"]),
        ("cat > f.py <<'EOF'\nimport os; os.remove('x')\nEOF\npython f.py", ["cat > f.py <<EOF", "python f.py"]),
        ("cat <<EOF\n$(whoami) is here\nEOF", ["cat <<EOF", "whoami"]),
        ("cat <<-END\n\trm x\n\tEND\nls", ["cat <<-END", "ls"]),
    ],
)
def test_the_simple_commands_of_a_line(command: str, parts: list[str]):
    assert [part.text for part in parse(command)] == parts


@pytest.mark.parametrize(
    "command, writes",
    [("ls > out.txt", True), ("ls >> out.txt", True), ("ls &>log", True), ("ls >& log", True),
     ("ls 2>&1", False), ("ls 2>/dev/null", False), ("ls > /dev/null 2>&1", False), ("ls >&2", False),
     ("sort < in.txt", False), ("echo '>' x", False), ("cat <<EOF > f\nx\nEOF", True)],
)
def test_output_redirection_is_noticed(command: str, writes: bool):
    assert parse(command)[0].writes is writes


# --- read-only commands -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    ["ls", "ls -la src", "cat a | grep b", "find . -name '*.py'", "grep -rn foo src 2>/dev/null", "cd src && ls",
     "if grep -q x f; then echo y; fi", "head -n 5 README.md; tail -3 log"],
)
def test_read_only(command: str):
    assert is_read_only(command)


@pytest.mark.parametrize(
    "command",
    ["ls > out.txt", "echo hi >> notes.md", "git push", "git commit -m x", "git branch feature",
     "git branch -D old", "npm test", "cat a | sh", "ls && rm -rf build", "find . -delete",
     "find . -exec rm {} \\;", "find . -execdir mv {} x \\;", "echo $(rm x)", "echo `touch y`",
     "PATH=. ls", "git diff --output=patch.txt", "rg --pre ./run x", "tree -o out.txt",
     "cat <<EOF > f\nx\nEOF", "", "python -c 'print(1)'",
     # a repository's own config can make git run programs (core.fsmonitor, diff.external, textconv)
     "git status", "git --no-pager log -3", "git -C sub diff HEAD", "git branch",
     # a substitution runs a command wherever it sits, arithmetic included
     "echo $(git rev-parse HEAD)", "wc -l $(find . -name '*.py')", "echo $(( $(touch p) 1 ))",
     "echo $((a[$(touch p)]))", "cat <(ls)", "date -s 2020-01-01", "file -C -m x"],
)
def test_not_read_only(command: str):
    assert not is_read_only(command)


@pytest.mark.parametrize(
    "command",
    ["cat .env", "cat ~/.ssh/id_rsa", "grep -r x /", "cat /etc/passwd", "cat ../outside.txt",
     "head --lines=3 /etc/hosts", "cat keys/server.pem"],
)
async def test_a_read_only_command_that_reads_outside_the_project_or_a_secret_asks(command: str, ctx):
    action = await prepare(ctx, command=command)
    assert not action.changes and not action.safe_patterns


async def test_a_read_only_command_inside_the_project_needs_no_asking(ctx):
    action = await prepare(ctx, command="cat src/a.py | grep x")
    assert action.safe_patterns == {"cat src/a.py", "grep x"}
