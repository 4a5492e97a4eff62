"""The grep tool, driven through prepare/apply over a real folder, with both engines.

Every search runs on the same fixture tree with ripgrep and with the Python engine; the two
must give the same output, and that output must be the expected one.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import anyio
import pytest

from totem_engine.tools import grep as grep_mod
from totem_engine.tools.base import ToolContext, ToolResult
from totem_engine.tools.grep import MAX_LINE, MAX_MATCHES, GrepTool, check_regex
from totem_engine.vocab.tools import ToolError
from totem_engine.workspace.files import DiskWorkspace
from totem_engine.workspace.paths import BoundaryError


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A project with one of everything grep must skip or find; ``tmp_path/outside`` is not in it."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "leak.py").write_text("needle outside\n")
    project = tmp_path / "project"
    files = {
        ".gitignore": "build/\n*.log\n!keep.log\n",
        "a.py": "def alpha():\n    return 'needle'\n",
        "notes.md": "needle in md\nno match\nNEEDLE upper\n",
        "keep.log": "needle kept\n",
        "debug.log": "needle ignored\n",
        "build/out.py": "needle built\n",
        ".hidden.py": "needle hidden\n",
        ".config/settings.py": "needle in hidden dir\n",
        "server.pem": "needle secret\n",
        "src/.gitignore": "generated.py\n",
        "src/generated.py": "needle generated\n",
        "src/pkg/mod.py": "x = 1\nneedle = 2\n",
    }
    for rel, text in files.items():
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        (project / rel).write_text(text)
    (project / "blob.bin").write_bytes(b"needle\x00\x01 binary")
    (project / "src/crlf.txt").write_bytes(b"needle crlf\r\nsecond\r\n")
    (project / "src/latin1.txt").write_bytes(b"needle caf\xe9\n")
    (project / "src/utf16.txt").write_bytes("needle utf16\n".encode("utf-16"))
    (project / "out_link").symlink_to(outside, target_is_directory=True)
    (project / "out_file.py").symlink_to(outside / "leak.py")
    return project


@pytest.fixture
def ctx(root: Path) -> ToolContext:
    return ToolContext(root=root, workspace=DiskWorkspace(), session_id="s1", call_id="c1")


@pytest.fixture
def rg_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """rg from the `ripgrep` wheel (dev extra) sits beside the interpreter; put it on PATH."""
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    if shutil.which("rg") is None:
        pytest.fail("rg not found: install the dev extra (pip install -e '.[dev]'), which ships ripgrep")


@pytest.fixture(params=["ripgrep", "python"])
def engine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each test using this runs once per engine."""
    request.getfixturevalue("rg_on_path")
    if request.param == "python":
        monkeypatch.setattr(grep_mod, "ripgrep_for", lambda root, start: None)
    return request.param


async def grep(ctx: ToolContext, **arguments) -> ToolResult:
    tool = GrepTool()
    action = await tool.prepare(tool.Input.model_validate(arguments), ctx)
    return await action.apply(ctx)


async def both(ctx: ToolContext, monkeypatch: pytest.MonkeyPatch, **arguments) -> str:
    """The output of one search, after checking that both engines gave exactly that output."""
    with_rg = await grep(ctx, **arguments)
    with monkeypatch.context() as patch:
        patch.setattr(grep_mod, "ripgrep_for", lambda root, start: None)
        with_python = await grep(ctx, **arguments)
    assert (with_rg.metadata["engine"], with_python.metadata["engine"]) == ("ripgrep", "python")
    assert with_rg.output == with_python.output
    assert with_rg.summary == with_python.summary
    return with_python.output


# --- the two engines agree ------------------------------------------------------------------


async def test_whole_project_search_skips_what_it_must(ctx, monkeypatch, rg_on_path):
    output = await both(ctx, monkeypatch, pattern="needle")
    assert output.splitlines() == [
        "a.py:2:     return 'needle'",
        "keep.log:1: needle kept",  # re-included by !keep.log
        "notes.md:1: needle in md",
        "src/crlf.txt:1: needle crlf",  # no \r left at the end
        "src/latin1.txt:1: needle caf\ufffd",
        "src/pkg/mod.py:2: needle = 2",
        "src/utf16.txt:1: needle utf16",
    ]
    # Not there: .gitignore'd (debug.log, build/, src/generated.py by the nested .gitignore),
    # hidden files and folders, the binary file, the key file, and both links out of the project.


@pytest.mark.parametrize(
    "arguments",
    [
        {"pattern": "^needle"},
        {"pattern": "(?i)needle"},
        {"pattern": r"needle\s\w+$"},
        {"pattern": "crlf$"},  # $ does not match before a \r, in either engine
        {"pattern": "[a-c]lpha|x = \\d"},
        {"pattern": "(?P<word>alpha)\\b"},
        {"pattern": "e{2}d"},
        {"pattern": "needle", "include": "*.py"},
        {"pattern": "needle", "include": "*.{md,log}"},
        {"pattern": "needle", "include": "[!a]*.py"},
        {"pattern": "needle", "path": "src"},
        {"pattern": "needle", "path": "src/pkg"},
        {"pattern": "nothing like this"},
    ],
)
async def test_engines_agree(ctx, monkeypatch, rg_on_path, arguments):
    await both(ctx, monkeypatch, **arguments)


async def test_include_filters_names_and_keeps_ignore_rules(ctx, monkeypatch, rg_on_path):
    # ripgrep's --glob would whitelist .hidden.py, build/out.py and src/generated.py here.
    output = await both(ctx, monkeypatch, pattern="needle", include="*.py")
    assert output.splitlines() == ["a.py:2:     return 'needle'", "src/pkg/mod.py:2: needle = 2"]


async def test_include_brace_alternatives(ctx, monkeypatch, rg_on_path):
    output = await both(ctx, monkeypatch, pattern="needle", include="*.{md,log}")
    assert output.splitlines() == ["keep.log:1: needle kept", "notes.md:1: needle in md"]


async def test_subfolder_paths_stay_project_relative(ctx, monkeypatch, rg_on_path):
    output = await both(ctx, monkeypatch, pattern="needle", path="src/pkg")
    assert output == "src/pkg/mod.py:2: needle = 2"


async def test_results_sorted_by_path_then_line(root, ctx, monkeypatch, rg_on_path):
    for name in ("b", "a-c", "a"):
        (root / "order" / name).mkdir(parents=True)
        (root / "order" / name / "f.txt").write_text("hit 1\nmiss\nhit 3\n")
    output = await both(ctx, monkeypatch, pattern="^hit", path="order")
    # Plain string order: "a-c" sorts before "a/" because "-" < "/".
    assert output.splitlines() == [
        "order/a-c/f.txt:1: hit 1", "order/a-c/f.txt:3: hit 3",
        "order/a/f.txt:1: hit 1", "order/a/f.txt:3: hit 3",
        "order/b/f.txt:1: hit 1", "order/b/f.txt:3: hit 3",
    ]


async def test_long_lines_are_cut_with_a_note(root, ctx, monkeypatch, rg_on_path):
    (root / "long").mkdir()
    (root / "long/f.txt").write_text("needle " + "x" * 1000 + "\n")
    output = await both(ctx, monkeypatch, pattern="needle", path="long")
    first, note = output.splitlines()
    assert first == "long/f.txt:1: " + ("needle " + "x" * 1000)[:MAX_LINE] + "…"
    assert f"longer than {MAX_LINE}" in note


async def test_match_lines_longer_than_one_read_of_rg_output(root, ctx, monkeypatch, rg_on_path):
    # rg's output is read in 1 MiB pieces: a 3 MiB line spans several, between short ones.
    (root / "huge").mkdir()
    (root / "huge/a.txt").write_text("needle short\n" + "needle " + "y" * (3 << 20) + "\nneedle tail\n")
    output = await both(ctx, monkeypatch, pattern="needle", path="huge")
    lines = output.splitlines()
    assert lines[0] == "huge/a.txt:1: needle short"
    assert lines[1] == "huge/a.txt:2: " + ("needle " + "y" * MAX_LINE)[:MAX_LINE] + "…"
    assert lines[2] == "huge/a.txt:3: needle tail"


async def test_match_count_is_capped(root, ctx, monkeypatch, rg_on_path):
    (root / "many").mkdir()
    (root / "many/f.txt").write_text("".join(f"hit {i}\n" for i in range(1, 251)))
    output = await both(ctx, monkeypatch, pattern="^hit", path="many")
    lines = output.splitlines()
    assert len(lines) == MAX_MATCHES + 1
    assert lines[MAX_MATCHES - 1] == f"many/f.txt:{MAX_MATCHES}: hit {MAX_MATCHES}"
    assert "250 matches" in lines[-1] and f"at most {MAX_MATCHES}" in lines[-1]


async def test_first_matches_span_files_and_the_totals_count_all(root, ctx, monkeypatch, rg_on_path):
    # rg's engine counts every file, then reads the lines of only those holding the first 200.
    (root / "spread").mkdir()
    for name in ("c", "a", "b"):
        (root / "spread" / f"{name}.txt").write_text("".join(f"hit {i}\n" for i in range(1, 151)))
    output = await both(ctx, monkeypatch, pattern="^hit", path="spread")
    lines = output.splitlines()
    assert lines[149:151] == ["spread/a.txt:150: hit 150", "spread/b.txt:1: hit 1"]
    assert lines[MAX_MATCHES - 1] == "spread/b.txt:50: hit 50"
    assert lines[MAX_MATCHES].startswith("[450 matches in 3 files; showing the first 200")


async def test_odd_file_names(root, ctx, monkeypatch, rg_on_path):
    # rg's counts name a file as "path NUL count"; a name may hold ':', a newline, bad UTF-8.
    (root / "odd").mkdir()
    (root / "odd" / "we:ird.txt").write_text("needle colon\n")
    (root / "odd" / "two\nlines.txt").write_text("needle newline\n")
    (root / "odd" / os.fsdecode(b"caf\xe9.txt")).write_text("needle latin\n")
    (root / "odd" / "-dash.txt").write_text("needle dash\n")
    output = await both(ctx, monkeypatch, pattern="needle", path="odd")
    assert output.split("\n") == [
        "odd/-dash.txt:1: needle dash",
        "odd/caf\ufffd.txt:1: needle latin",
        "odd/two",
        "lines.txt:1: needle newline",
        "odd/we:ird.txt:1: needle colon",
    ]


async def test_a_file_with_a_nul_byte_past_rgs_first_read_is_binary_too(root, ctx, monkeypatch, rg_on_path):
    # rg sees the NUL only after it has matched lines before it; the file is skipped all the same.
    (root / "late").mkdir()
    (root / "late/blob.dat").write_bytes(b"needle early\n" * 20_000 + b"\x00needle late\n")
    (root / "late/text.txt").write_text("needle text\n")
    result_output = await both(ctx, monkeypatch, pattern="needle", path="late")
    assert result_output == "late/text.txt:1: needle text"


async def test_lines_shown_are_those_counted_when_a_file_grows_between_rgs_runs(root, ctx, monkeypatch, tmp_path):
    (root / "grown").mkdir()
    (root / "grown/f.txt").write_text("hit 1\nhit 2\n")
    real_rg = shutil.which("rg", path=str(Path(sys.executable).parent))
    wrapper = tmp_path / "rg-then-append"
    # The real rg; after its counting run, one more matching line lands in the file.
    wrapper.write_text(
        f'#!/bin/sh\n"{real_rg}" "$@"\ncode=$?\n'
        'case " $* " in *" --count "*) printf "hit 3\\n" >> grown/f.txt ;; esac\nexit $code\n'
    )
    wrapper.chmod(0o755)
    monkeypatch.setattr(grep_mod, "ripgrep_for", lambda root, start: str(wrapper))
    result = await grep(ctx, pattern="^hit", path="grown")
    assert (root / "grown/f.txt").read_text().endswith("hit 3\n")
    assert result.output.splitlines() == ["grown/f.txt:1: hit 1", "grown/f.txt:2: hit 2"]
    assert result.summary == "2 matches in 1 files"


async def test_ripgrep_failing_to_search_is_an_error(root, ctx, monkeypatch, tmp_path):
    fake_rg = tmp_path / "fake-rg"
    fake_rg.write_text("#!/bin/sh\necho 'rg: regex parse error' >&2\nexit 2\n")
    fake_rg.chmod(0o755)
    monkeypatch.setattr(grep_mod, "ripgrep_for", lambda root, start: str(fake_rg))
    with pytest.raises(ToolError, match="ripgrep failed: rg: regex parse error"):
        await grep(ctx, pattern="needle")


async def test_output_budget_caps_the_output(root, ctx, monkeypatch, rg_on_path):
    (root / "many").mkdir()
    (root / "many/f.txt").write_text("".join(f"hit {i}\n" for i in range(1, 101)))
    ctx.output_budget = 1000
    output = await both(ctx, monkeypatch, pattern="^hit", path="many")
    assert len(output) <= 1000
    assert "output budget" in output.splitlines()[-1]
    assert "many/f.txt:1: hit 1" in output and "many/f.txt:100:" not in output


async def test_no_match(ctx, engine):
    result = await grep(ctx, pattern="absent-token")
    assert (result.output, result.metadata["engine"]) == ("No matches found", engine)


# --- patterns outside the shared subset -----------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "says"),
    [
        ("foo(?=bar)", "lookahead"),
        ("foo(?!bar)", "lookahead"),
        ("(?<=foo)bar", "lookbehind"),
        ("(?<!foo)bar", "lookbehind"),
        (r"(a)\1", "backreference"),
        ("(?P<x>a)(?P=x)", "backreference"),
        ("a++", "possessive"),
        ("a{2}+", "possessive"),
        ("(?>a)", "atomic"),
        ("def f() {", "\\{"),
        ("x{,3}", "\\{"),
        (r"end\Z", "\\Z"),
        (r"\<word\>", "word boundaries"),
        ("[[:alpha:]]", "nested sets"),
        ("[a-z&&[^aeiou]]", "set operations"),
        ("(?x)a b", "flag"),
        ("(?<name>a)", "(?P<name>"),
        (r"a\nb", "one line at a time"),
        ("(", "Invalid regular expression"),
    ],
)
async def test_unsupported_patterns_refused_before_either_engine(ctx, engine, pattern, says):
    with pytest.raises(ToolError) as refused:
        await grep(ctx, pattern=pattern)
    assert says in str(refused.value)


@pytest.mark.parametrize("pattern", ["a*?b", r"\d{2,}", "(?i:foo)", "(?im)^x", r"[\]a-]", "a?b+c*", r"\.\*"])
def test_shared_subset_is_accepted(pattern):
    assert check_regex(pattern).pattern == pattern


@pytest.mark.parametrize("include", ["src/*.py", "a,b", "*.{py}"])
async def test_unusable_include_refused(ctx, include):
    with pytest.raises(ToolError, match="include"):
        await grep(ctx, pattern="x", include=include)


# --- paths ----------------------------------------------------------------------------------


async def test_prepare_asks_read_permission_on_the_path(ctx):
    tool = GrepTool()
    action = await tool.prepare(tool.Input.model_validate({"pattern": "x", "path": "src/pkg"}), ctx)
    assert (action.permission, action.patterns, action.always_pattern) == ("read", ["src/pkg"], "src/*")


async def test_path_outside_the_project_is_refused(ctx):
    with pytest.raises(BoundaryError):
        await grep(ctx, pattern="needle", path="out_link")


async def test_missing_path(ctx):
    with pytest.raises(ToolError, match="does not exist"):
        await grep(ctx, pattern="needle", path="nope")


async def test_secret_file_named_explicitly_is_refused(ctx):
    with pytest.raises(ToolError, match="read asks first"):
        await grep(ctx, pattern="needle", path="server.pem")


async def test_file_named_explicitly_is_searched_even_if_hidden(ctx, engine):
    result = await grep(ctx, pattern="needle", path=".hidden.py")
    assert result.output == ".hidden.py:1: needle hidden"
    assert result.metadata["engine"] == "python"  # one file needs no walk


async def test_ignored_folder_named_explicitly_is_searched(ctx, engine):
    result = await grep(ctx, pattern="needle", path="build")
    assert result.output == "build/out.py:1: needle built"
    assert result.metadata["engine"] == "python"  # ripgrep would apply the rules above build/


async def test_gitignore_above_the_root_is_not_honoured(root, ctx, rg_on_path):
    # ripgrep would honour it (it reads every parent's .gitignore); the project's answer does not.
    (root.parent / ".gitignore").write_text("*.py\n")
    result = await grep(ctx, pattern="needle", path="src")
    assert result.metadata["engine"] == "python"
    assert "src/pkg/mod.py:2: needle = 2" in result.output


# --- cancellation ---------------------------------------------------------------------------


async def test_cancel_kills_the_ripgrep_process_group(root, ctx, monkeypatch, tmp_path):
    pid_file = tmp_path / "child.pid"
    fake_rg = tmp_path / "fake-rg"
    # Stands in for a long rg run with a child of its own: both must die on cancel.
    fake_rg.write_text(f"#!/bin/sh\nsleep 60 &\necho $! > {pid_file}\nwait\n")
    fake_rg.chmod(0o755)
    monkeypatch.setattr(grep_mod, "ripgrep_for", lambda root, start: str(fake_rg))
    with anyio.move_on_after(5) as scope:
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: grep(ctx, pattern="needle"))
            while not pid_file.exists() or not pid_file.read_text().strip():
                await anyio.sleep(0.02)
            tg.cancel_scope.cancel()
    assert not scope.cancelled_caught, "the search did not start"
    child = int(pid_file.read_text())
    await anyio.sleep(0.2)
    assert not _running(child)


def _running(pid: int) -> bool:
    """Alive and not a zombie (an orphan may wait a while to be reaped)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


async def test_without_ripgrep_installed_the_result_says_the_search_was_slower(ctx, monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    result = await grep(ctx, pattern="needle")
    assert result.metadata["engine"] == "python"
    assert result.output.splitlines()[-1].startswith("[ripgrep (rg) is not installed")
