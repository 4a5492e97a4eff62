"""A read-only command runs without asking only when every path it touches is proven inside.

The regression tests are the four commands that ran without a question before (issue 16, item
1); the properties vary the form (variables, quoting, globs, ``cd``, symlinks at any depth,
option spellings), so a fix for one spelling cannot pass.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from totem_engine.tools.base import ToolContext
from totem_engine.tools.bash import BashTool
from totem_engine.tools.shell_confinement import confined_commands
from totem_engine.workspace.files import DiskWorkspace
from totem_engine.workspace.shell_words import parse

PROPERTY = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _layout(base: Path, link_depth: int = 1) -> tuple[Path, Path]:
    """``base/project`` with src/a.py and a symlink out at ``link_depth``; ``base/home`` outside."""
    root, home = base / "project", base / "home"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("print(1)\n")
    home.mkdir()
    (home / ".bash_history").write_text("export OPENAI_API_KEY=sk-secret\n")
    (home / "secret.txt").write_text("SECRET\n")
    folder = root
    for level in range(link_depth - 1):
        folder = folder / f"d{level}"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "link").symlink_to(home)
    return root, home


def _safe(command: str, root: Path, env: dict[str, str]) -> frozenset[str]:
    parts = parse(command)
    return confined_commands(parts, command, root, env, set(range(len(parts))))


# --- the reproductions ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    ["cat $HOME/.bash_history", "cd && cat .bash_history", "grep -r SECRET ${HOME}", "cat link/secret.txt"],
)
async def test_the_commands_that_read_outside_without_asking_now_ask(command, tmp_path, monkeypatch):
    root, home = _layout(tmp_path)
    monkeypatch.setenv("HOME", str(home))
    ctx = ToolContext(root=root, workspace=DiskWorkspace(), session_id="s", call_id="c")
    action = await BashTool().prepare(BashTool.Input.model_validate({"command": command}), ctx)
    assert not action.changes
    assert not action.safe_patterns


async def test_a_read_only_command_inside_still_runs_without_asking(tmp_path, monkeypatch):
    root, home = _layout(tmp_path)
    monkeypatch.setenv("HOME", str(home))
    ctx = ToolContext(root=root, workspace=DiskWorkspace(), session_id="s", call_id="c")
    action = await BashTool().prepare(BashTool.Input.model_validate({"command": "cd src && cat a.py | wc -l"}), ctx)
    assert action.safe_patterns == {"cd src", "cat a.py", "wc -l"}


# --- forms of a path outside ------------------------------------------------------------------

_QUOTES = st.sampled_from(["{}", "'{}'", '"{}"'])
_READERS = st.sampled_from(["cat", "head -n 3", "tail", "grep -r SECRET", "ls -la", "wc -l", "stat", "du -a", "find", "nl"])


@st.composite
def outside_reads(draw) -> tuple[str, int]:
    """A command that reads the outside folder, and the depth of the symlink out it may use."""
    depth = draw(st.integers(1, 4))
    link = "/".join([f"d{i}" for i in range(depth - 1)] + ["link"])
    name = draw(st.sampled_from(["secret.txt", ".bash_history", "", "*", "s*", ".b?sh_history"]))
    var = draw(st.sampled_from(["HOME", "V", "DATA_DIR"]))
    form = draw(st.sampled_from([
        "${VAR}/NAME", "$VAR/NAME", "~/NAME", "LINK/NAME", "./LINK/NAME", "src/../LINK/NAME",
        "LINK/../home/NAME", "../home/NAME", "ROOT/../home/NAME", "HOMEDIR/NAME", "--file=~/NAME",
        "-f${VAR}/NAME", "GLOBBED/NAME", "$VAR", "~", "<~/NAME", "0<$VAR/NAME", "< LINK/NAME",
    ]))
    globbed = "/".join(part[0] + "*" for part in link.split("/"))  # d0/link -> d*/l*
    path = (form.replace("VAR", var).replace("GLOBBED", globbed).replace("LINK", link).replace("NAME", name)
            .replace("ROOT", "$PROJECT").replace("HOMEDIR", "$OUTSIDE"))
    quoted = draw(_QUOTES).format(path) if not path.startswith("-") else path
    how = draw(st.sampled_from(["plain", "cd", "cd-none", "cd-tilde", "cd-var", "chain"]))
    reader = draw(_READERS)
    if how == "plain":
        command = f"{reader} {quoted}"
    elif how == "cd":
        command = f"cd {draw(st.sampled_from(['..', '../home', link, '$' + var, '${' + var + '}']))} && {reader} {name or '.'}"
    elif how == "cd-none":
        command = f"cd; {reader} {name or '.'}"
    elif how == "cd-tilde":
        command = f"cd ~ && {reader} {name or '.'}"
    elif how == "cd-var":
        command = f"cd \"${var}\" || true; {reader} {name or '.'}"
    else:
        command = f"cat src/a.py | {reader} {quoted}"
    return command, depth


@PROPERTY
@given(outside_reads())
def test_no_form_of_a_path_outside_runs_without_asking(case):
    command, depth = case
    with tempfile.TemporaryDirectory() as base:
        root, home = _layout(Path(base), link_depth=depth)
        env = {"HOME": str(home), "V": str(home), "DATA_DIR": str(home),
               "PROJECT": str(root), "OUTSIDE": str(home)}
        safe = _safe(command, root, env)
        # The part that reads is the last one; it must not be proven.
        last = parse(command)[-1].text
        assert last not in safe, (command, safe)


@PROPERTY
@given(st.sampled_from(["cat", "grep x", "wc -c", "ls", "head"]), st.sampled_from(["{}", "'{}'", '"{}"']),
       st.sampled_from(["src/a.py", "$SRC/a.py", "${SRC}/a.py", "s*/a.py", "src/*.py", "./src/../src/a.py", "inner/a.py"]),
       st.sampled_from(["", "cd src/.. && ", "cd . ; ", "cd \"$PROJECT\"; "]))
def test_paths_proven_inside_need_no_asking(reader, quote, path, prefix):
    with tempfile.TemporaryDirectory() as base:
        root, home = _layout(Path(base))
        (root / "inner").symlink_to(root / "src")  # a symlink that stays inside
        command = prefix + f"{reader} {quote.format(path)}"
        safe = _safe(command, root, {"HOME": str(home), "SRC": str(root / "src"), "PROJECT": str(root)})
        assert parse(command)[-1].text in safe, command


@PROPERTY
@given(st.sampled_from(["grep -R x .", "grep -rR x src", "grep --dereference-recursive x", "find -L .",
                        "find . -follow", "tree -l", "du -L", "ls -RL", "diff -r src d0", "diff --recursive a b"]))
def test_options_that_follow_symlinks_while_recursing_ask(command):
    with tempfile.TemporaryDirectory() as base:
        root, home = _layout(Path(base), link_depth=3)
        assert not _safe(command, root, {"HOME": str(home)})


@PROPERTY
@given(st.sampled_from(["export HOME=/", "X=..", "pushd ..", "source env.sh", ". env.sh", "eval cd", "read X",
                        "f() { cd ..; }; f", "function f { cd ..; }; f", "set -- ..", "printf -v X ..",
                        "cd /nowhere-outside", "cd -", "cd ~"]),
       st.sampled_from([";", "&&", "||", "\n"]))
def test_after_a_change_of_the_shell_nothing_is_proven(change, separator):
    with tempfile.TemporaryDirectory() as base:
        root, home = _layout(Path(base))
        command = f"{change} {separator} cat src/a.py"
        assert "cat src/a.py" not in _safe(command, root, {"HOME": str(home), "X": "src"})


@PROPERTY
@given(st.sampled_from(["$1", "$@", "${X:-/etc}", "$'\\x2f'", "$RANDOM", "$PWD/..", "$UNSET/etc", "{/etc/passwd,x}",
                        "~root", "~+/..", "$OPENAI_API_KEY", "${GITHUB_TOKEN}"]),
       st.sampled_from(["cat", "echo", "ls"]))
def test_expansions_that_cannot_be_known_ask(word, reader):
    with tempfile.TemporaryDirectory() as base:
        root, home = _layout(Path(base))
        env = {"HOME": str(home), "OPENAI_API_KEY": "sk-1", "GITHUB_TOKEN": "t", "X": "src"}
        assert not _safe(f"{reader} {word}", root, env)


# --- extra roots (an ACP client's additionalDirectories) --------------------------------------


def _extra_safe(command: str, root: Path, extra: tuple[Path, ...], env: dict[str, str]) -> frozenset[str]:
    parts = parse(command)
    return confined_commands(parts, command, root, env, set(range(len(parts))), extra_roots=extra)


def test_a_path_in_an_extra_root_is_inside_and_its_secrets_and_links_out_are_not(tmp_path):
    root, home = _layout(tmp_path)
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "lib.py").write_text("VALUE = 1\n")
    (shared / ".env").write_text("TOKEN=x\n")
    (shared / "out").symlink_to(home)
    env = {"HOME": str(home)}
    for command in (f"cat {shared}/lib.py", f"cd {shared} && cat lib.py", "cat ../shared/lib.py", f"ls {shared}"):
        assert _extra_safe(command, root, (shared,), env) == {p.text for p in parse(command)}, command
        assert not _extra_safe(command, root, (), env) >= {parse(command)[-1].text}, command
    for command in (f"cat {shared}/.env", f"cat {shared}/out/secret.txt", f"cat {tmp_path}/home/secret.txt",
                    f"cd {shared} && cat ../home/secret.txt"):
        assert parse(command)[-1].text not in _extra_safe(command, root, (shared,), env), command
