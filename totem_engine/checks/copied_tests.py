"""Test functions a small model copied into the module it changed.

Shown a failing test beside the module it must change, a small model writes the test into the
module too (Qwen2.5-Coder-1.5B did with Totem's prompt, and with aider's): the module then names
what only the test file has (``sample``, ``report``), pyflakes flags it, and the model, asked to
mend it, sends the same file back. A module never needs a copy of a project test, so
``without_copied_tests`` takes it out (docs/decisions.md, "Small models").
"""

from __future__ import annotations

import ast
from pathlib import Path

from totem_engine.verify import is_test_file
from totem_engine.workspace.walk import walk_files

MAX_TEST_FILES = 200  # the project's Python test files read for their test names


def without_copied_tests(root: Path, rel: str, text: str) -> tuple[str, list[str]] | None:
    """``text`` (the Python module ``rel``) without its top-level functions named like a top-level
    test function of the project's test files (``verify.is_test_file``), each with its decorators
    and the blank lines before it, and their names; None when it has none, is a test file itself
    or does not parse."""
    if is_test_file(rel):
        return None
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    named = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name.startswith("test")]
    if not named:
        return None
    tests = _project_tests(root, rel)
    copied = [node for node in named if node.name in tests and node.end_lineno is not None]
    if not copied:
        return None
    lines = text.splitlines(keepends=True)
    for node in reversed(copied):  # from the end, so earlier line numbers stay true
        start = min([node.lineno, *(decorator.lineno for decorator in node.decorator_list)]) - 1
        while start > 0 and not lines[start - 1].strip():
            start -= 1
        del lines[start : node.end_lineno]
    return "".join(lines), [node.name for node in copied]


def _project_tests(root: Path, rel: str) -> set[str]:
    """The names of the top-level test functions in the project's Python test files but ``rel``."""
    files = [f for f in walk_files(root, root, follow_links=False) if f.endswith(".py") and f != rel and is_test_file(f)]
    names: set[str] = set()
    for test_file in files[:MAX_TEST_FILES]:
        try:
            tree = ast.parse((root / test_file).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
            continue
        names.update(n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name.startswith("test"))
    return names
