"""The glob tool and the project walk under it, driven through prepare/apply over a real folder."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from totem_engine.tools import glob as glob_mod
from totem_engine.tools.base import ToolContext, ToolResult
from totem_engine.tools.glob import MAX_RESULTS, GlobTool
from totem_engine.vocab.tools import ToolError
from totem_engine.workspace.files import DiskWorkspace
from totem_engine.workspace.paths import BoundaryError
from totem_engine.workspace.walk import expand_braces, glob_matcher


@pytest.fixture(autouse=True)
def rg_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """rg from the `ripgrep` wheel (dev extra) sits beside the interpreter; put it on PATH, so
    which engine answers depends on the tree, not on the machine."""
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    if shutil.which("rg") is None:
        pytest.fail("rg not found: install the dev extra (pip install -e '.[dev]'), which ships ripgrep")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "leak.py").write_text("")
    project = tmp_path / "project"
    for rel in [
        "a.py", "README.md", "docs/guide.md", "src/main.py", "src/pkg/util.py", "src/pkg/data.json",
        "src/generated.py", "build/out.py", "debug.log", "keep.log", ".hidden.py", ".config/c.py", ".git/HEAD",
    ]:
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        (project / rel).write_text("")
    (project / ".gitignore").write_text("build/\n*.log\n!keep.log\n")
    (project / "src/.gitignore").write_text("generated.py\n")
    (project / "out_dir").symlink_to(outside, target_is_directory=True)
    (project / "out_file.py").symlink_to(outside / "leak.py")
    (project / "in_file.py").symlink_to(project / "a.py")
    return project


@pytest.fixture
def ctx(root: Path) -> ToolContext:
    return ToolContext(root=root, workspace=DiskWorkspace(), session_id="s1", call_id="c1")


async def glob(ctx: ToolContext, **arguments) -> ToolResult:
    tool = GlobTool()
    action = await tool.prepare(tool.Input.model_validate(arguments), ctx)
    return await action.apply(ctx)


async def found(ctx: ToolContext, **arguments) -> set[str]:
    return set((await glob(ctx, **arguments)).output.splitlines())


async def test_honours_gitignore_hidden_and_the_project_boundary(ctx):
    assert await found(ctx, pattern="**/*.py") == {"a.py", "in_file.py", "src/main.py", "src/pkg/util.py"}
    # Left out: build/ and src/generated.py (.gitignore, root and nested), .hidden.py and
    # .config/ (hidden), out_file.py and out_dir/ (links out of the project).


async def test_negated_gitignore_pattern_re_includes(ctx):
    assert await found(ctx, pattern="*.log") == {"keep.log"}


async def test_name_pattern_matches_at_any_depth_path_pattern_is_anchored(ctx):
    assert await found(ctx, pattern="*.md") == {"README.md", "docs/guide.md"}
    assert await found(ctx, pattern="src/*.py") == {"src/main.py"}
    assert await found(ctx, pattern="src/**/*.py") == {"src/main.py", "src/pkg/util.py"}


async def test_brace_alternatives(ctx):
    assert await found(ctx, pattern="src/**/*.{py,json}") == {"src/main.py", "src/pkg/util.py", "src/pkg/data.json"}


async def test_path_narrows_and_results_stay_project_relative(ctx):
    assert await found(ctx, pattern="*.py", path="src/pkg") == {"src/pkg/util.py"}
    # The pattern is matched below `path`: "pkg/*.py" from src.
    assert await found(ctx, pattern="pkg/*.py", path="src") == {"src/pkg/util.py"}


async def test_newest_first_then_by_path(root, ctx):
    for rel, mtime in [("a.py", 100), ("src/main.py", 300), ("src/pkg/util.py", 200), ("in_file.py", 100)]:
        os.utime(root / rel, (mtime, mtime), follow_symlinks=False)
    result = await glob(ctx, pattern="**/*.py")
    # in_file.py links to a.py, so it has a.py's time; the tie goes by path.
    assert result.output.splitlines() == ["src/main.py", "src/pkg/util.py", "a.py", "in_file.py"]
    assert result.summary == "4 files"


async def test_capped_with_a_note_on_what_was_left_out(root, ctx):
    (root / "many").mkdir()
    for i in range(MAX_RESULTS + 5):
        path = root / "many" / f"f{i:03}.txt"
        path.write_text("")
        os.utime(path, (i, i))
    lines = (await glob(ctx, pattern="*.txt", path="many")).output.splitlines()
    assert len(lines) == MAX_RESULTS + 1
    assert lines[0] == f"many/f{MAX_RESULTS + 4:03}.txt"  # the newest
    assert "5 more files" in lines[-1]


async def test_nothing_found(ctx):
    result = await glob(ctx, pattern="*.rs")
    assert (result.output, result.summary) == ("No files found", "0 files")


async def test_hidden_or_ignored_folder_named_as_path_is_searched(ctx):
    assert await found(ctx, pattern="*.py", path=".config") == {".config/c.py"}
    assert await found(ctx, pattern="*.py", path="build") == {"build/out.py"}


async def test_linked_folder_inside_is_listed_once_and_loops_end(root, ctx):
    (root / "src/pkg/up").symlink_to(root / "src", target_is_directory=True)  # a loop
    (root / "pkg_link").symlink_to(root / "src/pkg", target_is_directory=True)
    # Under its own name only: the links lead back into folders the walk reaches anyway.
    assert await found(ctx, pattern="**/util.py") == {"src/pkg/util.py"}
    # Searched from src/pkg, the link up to src leaves the start folder: followed, once.
    assert await found(ctx, pattern="**/main.py", path="src/pkg") == {"src/pkg/up/main.py"}


async def test_prepare_asks_read_permission_on_the_folder(ctx):
    tool = GlobTool()
    action = await tool.prepare(tool.Input.model_validate({"pattern": "*.py", "path": "src/pkg"}), ctx)
    assert (action.permission, action.patterns, action.always_pattern) == ("read", ["src/pkg"], "src/*")
    action = await tool.prepare(tool.Input.model_validate({"pattern": "*.py"}), ctx)
    assert action.patterns == ["."]


async def test_refusals(ctx):
    with pytest.raises(BoundaryError):
        await glob(ctx, pattern="*.py", path="out_dir")
    with pytest.raises(ToolError, match="is a file"):
        await glob(ctx, pattern="*.py", path="a.py")
    with pytest.raises(ToolError, match="does not exist"):
        await glob(ctx, pattern="*.py", path="nope")
    with pytest.raises(ToolError, match=r"\.\."):
        await glob(ctx, pattern="../*.py")
    with pytest.raises(ToolError, match="leading /"):
        await glob(ctx, pattern="/etc/*")


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("*.py", "a/b/c.py", True),
        ("*.py", "a/b/c.pyc", False),
        ("a/*.py", "a/b/c.py", False),
        ("a/**/*.py", "a/c.py", True),
        ("a/**", "a/b/c", True),
        ("?.py", "ab.py", False),
        ("[!a]*.py", "b.py", True),
        ("[!a]*.py", "a.py", False),
        ("[a-c].md", "b.md", True),
        (r"\*.md", "*.md", True),
        (r"\*.md", "x.md", False),
        ("a/[!x]/c", "a/b/c", True),
        ("a[/]b", "a/b", False),  # a set never matches the separator
    ],
)
def test_glob_dialect(pattern, path, expected):
    assert glob_matcher(pattern)(path) is expected


def test_brace_expansion():
    assert expand_braces("*.{ts,tsx}") == ["*.ts", "*.tsx"]
    assert expand_braces("{a,b{c,d}}.x") == ["a.x", "bc.x", "bd.x"]
    assert expand_braces("{a,b}/{c,d}") == ["a/c", "a/d", "b/c", "b/d"]
    assert expand_braces("{x}.py") == ["{x}.py"]
    assert expand_braces("{a,b") == ["{a,b"]


# --- the ripgrep engine ---------------------------------------------------------------------


@pytest.fixture
def linkless(root: Path) -> ToolContext:
    """The same project without its symlinks, which only the walk follows."""
    for name in ("out_dir", "out_file.py", "in_file.py"):
        (root / name).unlink()
    (root / "src/caf\xe9.py").write_text("")
    for n, rel in enumerate(["a.py", "src/main.py", "src/pkg/util.py", "src/caf\xe9.py", "docs/guide.md"]):
        os.utime(root / rel, (100 + n % 2, 100 + n % 2))  # ties, broken by path in both engines
    return ToolContext(root=root, workspace=DiskWorkspace(), session_id="s1", call_id="c1")


@pytest.mark.parametrize(
    "arguments",
    [
        {"pattern": "**/*.py"},
        {"pattern": "*.log"},
        {"pattern": "*.md"},
        {"pattern": "src/**/*.{py,json}"},
        {"pattern": "pkg/*.py", "path": "src"},
        {"pattern": "*.rs"},
        {"pattern": "*.py", "path": ".config"},
        {"pattern": "*.py", "path": "build"},
    ],
)
async def test_ripgrep_and_the_walk_give_the_same_answer(linkless: ToolContext, monkeypatch, arguments):
    with_rg = await glob(linkless, **arguments)
    with monkeypatch.context() as patch:
        patch.setattr(glob_mod, "ripgrep_for", lambda root, start: None)
        with_walk = await glob(linkless, **arguments)
    ignored = arguments.get("path") == "build"  # rg would apply the .gitignore above it
    assert (with_rg.metadata["engine"], with_walk.metadata["engine"]) == ("python" if ignored else "ripgrep", "python")
    assert (with_rg.output, with_rg.summary) == (with_walk.output, with_walk.summary)
    assert with_walk.output != "" and with_walk.summary


async def test_ripgrep_engine_keeps_the_cap_and_the_newest(linkless: ToolContext, root: Path):
    (root / "many").mkdir()
    for i in range(MAX_RESULTS + 5):
        path = root / "many" / f"f{i:03}.txt"
        path.write_text("")
        os.utime(path, (1000 + i // 3, 1000 + i // 3))  # threes share a time, the cut among them
    result = await glob(linkless, pattern="*.txt", path="many")
    lines = result.output.splitlines()
    assert result.metadata["engine"] == "ripgrep" and result.summary == f"{MAX_RESULTS + 5} files"
    newest = sorted(range(MAX_RESULTS + 5), key=lambda i: (-(i // 3), f"f{i:03}"))[:MAX_RESULTS]
    assert lines[:-1] == [f"many/f{i:03}.txt" for i in newest]
    assert "5 more files" in lines[-1]


async def test_a_symlink_in_an_ignored_folder_keeps_the_ripgrep_engine(linkless: ToolContext, root: Path, monkeypatch):
    # A pnpm project's node_modules is all links; the walk does not enter it either.
    (root / "build" / "linked").symlink_to(root / "src", target_is_directory=True)
    # And one a nested .gitignore ignores (src/.gitignore: generated.py).
    (root / "src" / "pkg" / "generated.py").symlink_to(root / "a.py")
    with_rg = await glob(linkless, pattern="**/*.py")
    monkeypatch.setattr(glob_mod, "ripgrep_for", lambda root, start: None)
    with_walk = await glob(linkless, pattern="**/*.py")
    assert with_rg.metadata["engine"] == "ripgrep" and with_rg.output == with_walk.output


async def test_a_tree_with_a_symlink_is_walked_even_with_ripgrep(ctx: ToolContext):
    result = await glob(ctx, pattern="**/*.py")
    assert result.metadata["engine"] == "python"
    assert set(result.output.splitlines()) == {"a.py", "in_file.py", "src/main.py", "src/pkg/util.py"}


async def test_without_ripgrep_installed_the_result_says_the_search_was_slower(linkless: ToolContext, monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    result = await glob(linkless, pattern="*.md")
    assert result.metadata["engine"] == "python"
    assert result.output.splitlines()[:-1] == ["README.md", "docs/guide.md"]  # README.md is the newer
    assert result.output.splitlines()[-1].startswith("[ripgrep (rg) is not installed")
