"""Which read-only shell commands are proven to touch only paths inside the project.

A read-only command runs without asking only when this module can prove that every path it
could touch is inside the project (its root, or one of a session's extra roots:
workspace/paths.py) and is not a secret file; whatever it cannot prove asks
("when in doubt, ask"). The proof follows what bash would do to each word before the command
sees it:

- variables (``$V``, ``${V}``) are expanded from the environment the command runs in; any other
  expansion (``$1``, ``${V:-x}``, ``$'..'``, a bash-internal variable) cannot be proven;
- ``~`` is the home folder; ``cd`` with no argument goes home and ``cd -`` to ``$OLDPWD``;
- globs are expanded against the folder the command runs in, and each match is checked as well
  as the word itself (no match leaves the word as written); brace expansion cannot be proven;
- every candidate path, the whole word, the value after ``=`` and each tail of a short-option
  cluster (``-f/etc/passwd``), is resolved by the file tools' confinement (symlinks at any depth
  followed, ``..`` after a symlink taken physically, as the kernel does);
- ``cd`` adds the folder it may enter to the folders later commands may run in (a ``cd`` can
  fail, so the earlier folder stays possible too); a builtin that can change the shell's state
  (``pushd``, ``export``, ``source``, an assignment, a function definition...) makes every later
  command unprovable;
- options that follow symlinks while recursing (``grep -R``, ``find -L``, ``tree -l``, ``diff -r``...)
  reach paths no argument names, so they are not proven either;
- where the command does not run in the sandbox (which shows a command the user did not allow
  every secret file empty, sandbox/secret_files.py), a command that reads the files of a folder
  (``grep``, ``diff``) is not proven when an argument is a folder or ``grep`` may recurse (its
  ``-r``, ``-R``, ``-d`` and the long options they abbreviate): the secret files in it are
  named by no argument.

Only the first words are matched by name; a quoted word counts as unquoted (the quotes are gone
by now), which can only make the proof stricter.
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

from totem_engine.command_env import is_credential
from totem_engine.permissions import is_secret
from totem_engine.vocab.tools import ToolError
from totem_engine.workspace.paths import project_path, resolve_in_project
from totem_engine.workspace.shell_words import SimpleCommand

# Bash builtins and keywords: they run inside the shell and may change its folder, variables or
# what a later word means. External programs cannot, so only these end the proof of what follows.
_SHELL_BUILTINS = frozenset({
    ".", ":", "alias", "bg", "bind", "break", "builtin", "caller", "cd", "command", "compgen",
    "complete", "compopt", "continue", "declare", "dirs", "disown", "echo", "enable", "eval",
    "exec", "exit", "export", "false", "fc", "fg", "getopts", "hash", "help", "history", "jobs",
    "kill", "let", "local", "logout", "mapfile", "popd", "printf", "pushd", "pwd", "read",
    "readarray", "readonly", "return", "set", "shift", "shopt", "source", "suspend", "test",
    "times", "trap", "true", "type", "typeset", "ulimit", "umask", "unalias", "unset", "wait",
    "for", "case", "select", "function", "coproc", "[[", "[",
})
# Builtins of READ_ONLY_COMMANDS that leave the shell's state as it was (``printf -v`` aside).
_STATELESS_BUILTINS = frozenset({"echo", "printf", "pwd", "true", "false", "type"})

# Options that follow symlinks met while recursing, by command: short letters, long names.
_FOLLOWS_LINKS: dict[str, tuple[str, tuple[str, ...]]] = {
    "grep": ("R", ("--dereference-recursive",)),
    "egrep": ("R", ("--dereference-recursive",)),
    "fgrep": ("R", ("--dereference-recursive",)),
    "find": ("L", ("-follow",)),
    "tree": ("l", ()),
    "du": ("L", ("--dereference",)),
    "ls": ("L", ("--dereference",)),
    # diff compares what a symlink points to, so any recursion may leave the project.
    "diff": ("r", ("--recursive",)),
}

_VARIABLE = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")
_GLOB_CHARS = re.compile(r"[*?\[]")
_REDIRECTION = re.compile(r"[<>&]+")
_FUNCTION_DEFINITION = re.compile(r"(?:^|[\s;&|(){}])(?:function\s+\S+|[^\s;&|()<>]+\s*\(\s*\))")
# Commands that read every file of a folder they are given (grep -r, diff DIR DIR).
_READS_FOLDERS = frozenset({"grep", "egrep", "fgrep", "diff"})
_GREP = frozenset({"grep", "egrep", "fgrep"})
# Variables bash sets itself or that change while the line runs: their value is not the environment's.
_SHELL_VARIABLES = frozenset({"PWD", "OLDPWD", "CDPATH", "IFS", "RANDOM", "SECONDS", "LINENO", "BASHPID", "_"})


class _Roots(NamedTuple):
    """The real paths a command may touch under: the project's root and its extra roots."""

    root: Path
    extra: tuple[Path, ...]


class Unproven(Exception):
    """A word whose paths cannot be proven to stay inside the project."""


def confined_commands(
    parts: list[SimpleCommand], command: str, root: Path, env: Mapping[str, str], read_only: set[int], *,
    secrets_hidden: bool = False, passed: frozenset[str] = frozenset(), extra_roots: tuple[Path, ...] = (),
) -> frozenset[str]:
    """The texts of the parts (by index in ``read_only``) proven to touch only project paths.

    ``parts`` in the order they run (shell_words.parse); ``env``: the environment the command
    runs with; ``read_only``: indexes of the parts that are read-only commands;
    ``secrets_hidden``: it runs in the sandbox, which shows it no secret file; ``passed``: the
    credential variables (command_env.py) a command run unasked keeps, whose value may be proven;
    ``extra_roots``: the session's folders beside ``root``, inside the project as much as it.
    """
    # A credential variable (command_env.py) is not in the environment of a command run unasked:
    # a word naming it is not proven (printing it would hand the key to the model).
    env = {name: value for name, value in env.items() if name in passed or not is_credential(name, value)}
    if _FUNCTION_DEFINITION.search(command):  # a function can stand in for any command name
        return frozenset()
    real_root = root.resolve()
    roots = _Roots(real_root, tuple(extra.resolve() for extra in extra_roots))
    cwds: set[Path] | None = {real_root}  # None: the folder is no longer known
    proven: set[str] = set()
    for index, part in enumerate(parts):
        if cwds is None:
            break  # nothing after an unknown folder or shell state can be proven
        entered: set[Path] | None = None
        try:
            if index not in read_only:
                raise Unproven(part.text)
            entered = _check(part, roots, cwds, env, secrets_hidden)
        except Unproven:
            if part.words[0] == "cd":
                cwds = None
        else:
            proven.add(part.text)
            cwds = cwds | (entered or set())
        if _may_change_shell(part):
            cwds = None
    return frozenset(proven)


def _may_change_shell(part: SimpleCommand) -> bool:
    """Whether ``part`` may change the folder or variables later parts see (cd aside)."""
    name = part.words[0]
    if "=" in name:  # an assignment
        return True
    if name in _STATELESS_BUILTINS:
        return name == "printf" and any(w.startswith("-v") for w in part.words[1:])
    return name in _SHELL_BUILTINS and name != "cd"


def _check(
    part: SimpleCommand, roots: _Roots, cwds: set[Path], env: Mapping[str, str], secrets_hidden: bool,
) -> set[Path] | None:
    """Raise Unproven unless every path of ``part`` is inside; for ``cd``, the folders it may enter."""
    name, args = part.words[0], part.words[1:]
    _check_link_following(name, args)
    if name == "cd":
        return _cd_targets(args, roots, cwds, env)
    folders_read = name in _READS_FOLDERS and not secrets_hidden
    if folders_read and name in _GREP:
        _check_recursion(args)
    for word in args:
        for value in _expand(word, env):
            for candidate in _candidates(value):
                for cwd in cwds:
                    _check_path(_tilde(candidate, env), roots, cwd, folders=not folders_read)
    return None


def _check_recursion(args: tuple[str, ...]) -> None:
    """Unproven when grep may recurse: ``-r``, ``-R``, ``-d ACTION`` in any cluster, or a long
    option that may abbreviate ``--recursive``, ``--dereference-recursive``, ``--directories``
    (with no folder named, ``grep -r`` searches the current one)."""
    for arg in args:
        if arg == "--":
            return
        if arg.startswith("--") and arg[2:3] in ("r", "d"):
            raise Unproven(arg)
        if arg.startswith("-") and not arg.startswith("--") and any(letter in arg[1:] for letter in "rRd"):
            raise Unproven(arg)


def _check_link_following(name: str, args: tuple[str, ...]) -> None:
    letters, long_names = _FOLLOWS_LINKS.get(name, ("", ()))
    for arg in args:
        if arg in long_names or any(arg.startswith(n + "=") for n in long_names):
            raise Unproven(arg)
        if letters and arg.startswith("-") and not arg.startswith("--") and any(c in arg[1:] for c in letters):
            raise Unproven(arg)


def _cd_targets(args: tuple[str, ...], roots: _Roots, cwds: set[Path], env: Mapping[str, str]) -> set[Path]:
    operands = [a for a in args if not (a.startswith("-") and len(a) > 1)]
    if not operands or operands == ["-"]:  # home, or $OLDPWD
        raise Unproven("cd")
    entered: set[Path] = set()
    for word in operands:
        for value in (_tilde(v, env) for v in _expand(word, env)):
            if env.get("CDPATH") and not value.startswith(("/", ".")):
                raise Unproven(value)  # CDPATH may take "cd name" anywhere
            if _GLOB_CHARS.search(value):
                raise Unproven(value)  # which folder "cd s*" enters depends on what matches
            for cwd in cwds:
                # cd is logical by default ("link/.." is the folder itself), -P physical: prove both.
                logical = os.path.normpath(cwd / value)
                entered.add(_check_path(logical, roots, cwd))
                entered.add(_check_path(value, roots, cwd))
    return entered


def _expand(word: str, env: Mapping[str, str]) -> list[str]:
    """What bash may make of ``word``: the word with its variables expanded, and the fields the
    expansion splits into (``~`` is the caller's, per candidate). Raises Unproven for
    expansions that cannot be known."""
    rest = _VARIABLE.sub("", word)
    if "$" in rest:
        raise Unproven(word)  # $1, $@, ${V:-x}, $'...': not a plain variable
    if "{" in rest and "}" in rest:
        raise Unproven(word)  # brace expansion: {/etc/passwd,x}
    expanded = _VARIABLE.sub(lambda m: _variable(m.group(1) or m.group(2), env), word)
    fields = expanded.split()
    return [expanded, *fields] if len(fields) > 1 else [expanded]


def _variable(name: str, env: Mapping[str, str]) -> str:
    if name in _SHELL_VARIABLES or name not in env:
        raise Unproven(name)
    return env[name]


def _tilde(value: str, env: Mapping[str, str]) -> str:
    """``~`` and ``~/x`` at the start of a candidate (a word, the value of ``--opt=~/x``, the
    target of ``<~/x``)."""
    if not value.startswith("~"):
        return value
    if value == "~" or value.startswith("~/"):
        home = env.get("HOME")
        if not home:
            raise Unproven(value)
        return home + value[1:]
    raise Unproven(value)  # ~user, ~+, ~-


def _candidates(value: str) -> list[str]:
    """Every string of ``value`` a command may take as a path: the word itself, its value after
    ``=``, for a short-option cluster each tail (``-f/etc/passwd`` -> ``/etc/passwd``), and the
    target of a redirection written into the word (``<~/.ssh/id_rsa``, ``0</etc/passwd``)."""
    found = [value]
    if "=" in value:
        found.append(value.split("=", 1)[1])
    if value.startswith("-") and not value.startswith("--"):
        found.extend(value[i:] for i in range(1, len(value)))
    found.extend(_REDIRECTION.split(value)[1:])
    return [c for c in found if c and c != "-"]


def _check_path(candidate: str, roots: _Roots, cwd: Path, *, folders: bool = True) -> Path:
    """The real path of ``candidate`` run from ``cwd``, or Unproven when it leaves the project,
    is a secret file, or its glob matches anything outside; with ``folders`` False, also when it
    or a match is a folder (whose every file the command reads, secret ones too)."""
    paths = [candidate]
    if _GLOB_CHARS.search(candidate):
        try:
            paths += glob.glob(candidate, root_dir=cwd)
        except (OSError, ValueError):
            raise Unproven(candidate) from None
    real = roots.root
    for path in paths:
        try:
            real = resolve_in_project(roots.root, str(cwd / path) if not path.startswith("/") else path, roots.extra)
        except ToolError:
            raise Unproven(path) from None
        if is_secret(path) or is_secret(project_path(roots.root, real)) or (not folders and real.is_dir()):
            raise Unproven(path)
    return real
