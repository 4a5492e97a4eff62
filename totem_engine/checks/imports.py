"""Imports that break across files, which pyflakes, seeing one file at a time, cannot see.

For a small model's Python files (docs/decisions.md, "Small models"), after each change:

- ``from m import a`` where ``m`` is a project module that defines no ``a``: Python's own
  ``cannot import name`` (pylint's E0611), found before anything runs, with the project files
  that do define ``a``;
- a module the change left without a name another project file imports from it ("rename
  ``calc_area``" done in geometry.py but not in report.py): reported on the changed module;
- a relative import in a file at the project root, which has no package to be relative to
  (Python's "attempted relative import with no known parent package", pylint's E0402).

``fixed_imports`` makes the first kind's fix when only one project module defines the name.

A module whose names cannot be known statically (``from x import *``, a module ``__getattr__``)
is taken to define everything. Modules resolve from the project root and from the importing
file's folder, as ``python script.py`` and ``python -m pytest`` at the root find them.
"""

from __future__ import annotations

import ast
from functools import cached_property
from pathlib import Path

from totem_engine.checks.base import Finding, Range
from totem_engine.checks.positions import from_line_column
from totem_engine.workspace.walk import walk_files

MAX_IMPORTERS = 200  # Python files read to find a changed module's importers, or a name's home


def import_findings(root: Path, rel: str, tree: ast.Module, lines: list[str]) -> list[Finding]:
    """The findings for ``rel`` (parsed as ``tree``, its text split in ``lines``)."""
    others = _Others(root, rel)
    findings = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level and "/" not in rel:
            message = f"attempted relative import with no known parent package ({rel} is at the project root)"
            findings.append(_finding("E0402", message, node, lines))
            continue
        source = _module_file(root, rel, node.module or "", node.level)
        defined = _defined(source) if source is not None else None
        if defined is None:
            continue
        for alias in node.names:
            if alias.name != "*" and alias.name not in defined and not _submodule(source, alias.name):
                where = source.relative_to(root).as_posix()
                message = f"cannot import name '{alias.name}' from '{node.module or '.'}' ({where})"
                homes = others.defining(alias.name)
                if homes:
                    home = homes[0].removesuffix(".py").replace("/", ".")
                    message += f"; it is defined in {', '.join(homes)}: from {home} import {alias.name}"
                findings.append(_finding("E0611", message, node, lines))
    return findings + _broken_importers(others, rel, tree, lines)


def fixed_imports(root: Path, rel: str, text: str) -> tuple[str, list[str]] | None:
    """``text`` with each top-level ``from m import a`` that fails because ``a`` lives in one
    other project module moved to that module's import, and the new import lines; None when there
    is nothing to fix this way. The quick fix an editor offers ("import from dates"), taken
    without asking because only one module defines the name."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    lines = text.splitlines(keepends=True)
    others = _Others(root, rel)
    added: list[str] = []
    for node in reversed(tree.body):  # from the end, so earlier line numbers stay true
        if not isinstance(node, ast.ImportFrom) or node.level or node.end_lineno is None:
            continue
        if lines[node.end_lineno - 1][node.end_col_offset:].strip():
            continue  # something else follows on its last line
        source = _module_file(root, rel, node.module or "", 0)
        defined = _defined(source) if source is not None else None
        if defined is None:
            continue
        kept, moved = [], {}
        for alias in node.names:
            homes = [] if alias.name in defined or _submodule(source, alias.name) else others.defining(alias.name)
            if len(homes) == 1:
                moved.setdefault(homes[0].removesuffix(".py").replace("/", "."), []).append(alias)
            else:
                kept.append(alias)
        if not moved:
            continue
        statements = [ast.ImportFrom(module=node.module, names=kept, level=0)] if kept else []
        statements += [ast.ImportFrom(module=home, names=names, level=0) for home, names in moved.items()]
        new = [ast.unparse(statement) + "\n" for statement in statements]
        added += new[1:] if kept else new
        lines[node.lineno - 1 : node.end_lineno] = new
    return ("".join(lines), [line.strip() for line in reversed(added)]) if added else None


class _Others:
    """The project's Python files but ``rel`` (at most ``MAX_IMPORTERS``), parsed once, when
    first asked for: a check looks in them for a name's home and for a module's importers."""

    def __init__(self, root: Path, rel: str):
        self.root, self.rel = root, rel

    @cached_property
    def trees(self) -> list[tuple[str, ast.Module]]:
        walked = walk_files(self.root, self.root, follow_links=False)
        found = [other for other in walked if other.endswith(".py") and other != self.rel][:MAX_IMPORTERS]
        parsed = ((other, _parse(self.root / other)) for other in found)
        return [(other, tree) for other, tree in parsed if tree is not None]

    def defining(self, name: str) -> list[str]:
        """The files that define ``name`` themselves (not by importing it)."""
        return [other for other, tree in self.trees if name in (_names(tree, imports=False) or ())]


def _broken_importers(others: _Others, rel: str, tree: ast.Module, lines: list[str]) -> list[Finding]:
    """Names other project files import from ``rel`` that it no longer defines, at its line 1."""
    if rel.count("/") or not rel.endswith(".py"):
        return []  # only top-level modules: what ``from m import`` at the root reaches
    module = rel.removesuffix(".py")
    defined = _names(tree)
    if defined is None:
        return []
    findings = []
    for other, other_tree in others.trees:
        for node in ast.walk(other_tree):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module == module:
                missing = [a.name for a in node.names if a.name != "*" and a.name not in defined]
                if missing:
                    message = f"{other}:{node.lineno} imports {', '.join(missing)} from {module}, which {rel} does not define"
                    at = from_line_column(lines, 1, 1)
                    findings.append(Finding("E0611", message, "error", Range(at, at), source="python"))
    return findings


def _finding(code: str, message: str, node: ast.AST, lines: list[str]) -> Finding:
    at = from_line_column(lines, node.lineno, node.col_offset + 1)
    return Finding(code, message, "error", Range(at, at), source="python")


def _module_file(root: Path, rel: str, module: str, level: int) -> Path | None:
    """The project file ``module`` (imported from ``rel`` at ``level``) is, or None."""
    folder = (root / rel).parent
    if level > len(folder.relative_to(root).parts) + 1:
        return None  # beyond the project
    if level:
        bases = [folder.parents[level - 2] if level > 1 else folder]
    else:
        bases = [root, folder]
    parts = module.split(".") if module else []
    for base in bases:
        target = base.joinpath(*parts)
        for path in ([target.with_suffix(".py")] if parts else []) + [target / "__init__.py"]:
            if path.is_file() and path.resolve().is_relative_to(root.resolve()):
                return path
    return None


def _submodule(package: Path, name: str) -> bool:
    folder = package.parent
    return package.name == "__init__.py" and ((folder / f"{name}.py").is_file() or (folder / name / "__init__.py").is_file())


def _parse(path: Path) -> ast.Module | None:
    try:
        return ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return None


def _defined(path: Path) -> set[str] | None:
    tree = _parse(path)
    return _names(tree) if tree is not None else None


def _names(tree: ast.Module, *, imports: bool = True) -> set[str] | None:
    """The names a module defines at its top level (inside ``if``/``try``/``with``/``for`` too),
    those it imports among them unless ``imports`` is false; None when they cannot be known (a
    star import, a module ``__getattr__``)."""
    names: set[str] = set()
    pending: list[ast.AST] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.name == "__getattr__":
                return None
            names.add(node.name)
            continue  # what it holds is not the module's
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            if any(alias.name == "*" for alias in node.names):
                return None
            if imports:
                names.update(alias.asname or alias.name.split(".")[0] for alias in node.names)
        for target in _targets(node):
            names.update(name.id for name in ast.walk(target) if isinstance(name, ast.Name))
        if isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        for block in ("body", "orelse", "finalbody", "handlers"):
            pending.extend(getattr(node, block, []))
    return names


def _targets(node: ast.AST) -> list[ast.expr]:
    """What an assignment-like statement binds."""
    if isinstance(node, ast.Assign):
        return node.targets
    if isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor)):
        return [node.target]
    if isinstance(node, (ast.With, ast.AsyncWith)):
        return [item.optional_vars for item in node.items if item.optional_vars is not None]
    return []
