"""A small model's "whole file" that is only the part it changed, and what to do with it.

Asked for a whole file, a 1.5B model often sends just the function it added or fixed. Written as
is, that deletes the rest of the file; refused, the model rarely does better on the next try. For
Python the intent is unambiguous enough to merge, the way a reviewer would apply the snippet:

- each top-level definition of the fragment (``def``, ``class``, an assignment to one name, the
  ``if __name__ == "__main__":`` block) replaces the file's definition of the same name, or of the
  same body under another name (a rename), or is added (before the main block, else at the end);
- a class present in both is merged member by member the same way, so a class quoted with only
  its new method keeps the others;
- an import the file lacks goes after the file's imports; other statements (example calls) are
  left out, and the notes say so.

A text is a fragment when it drops some of the file's top-level definitions and keeps none of
them unchanged (a real whole file that removes a function keeps the untouched ones), or when
everything it defines is already in the file as it is and it leaves out more definitions, two
at least, than it holds (a fragment sent twice: nothing to do). Other
languages have no merge; a rewrite that drops most of their definitions is refused instead.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from totem_engine.vocab.tools import ToolError

# Top-level definitions of JavaScript/TypeScript and shell functions, for the languages without
# a merge: their names tell a whole file from a fragment of one.
_DEFINITION = re.compile(
    r"^(?:async\s+)?(?:def|class)\s+(\w+)"
    r"|^(?:export\s+(?:default\s+)?)?(?:async\s+)?(?:function\*?|class|const|let|var)\s+(\w+)"
    r"|^(\w+)\s*\(\)\s*\{",
    re.M,
)
_MAIN = "__main__"


def definitions(text: str) -> list[str]:
    """The names defined at the top level of ``text`` (by the patterns above), in order."""
    return [next(name for name in match.groups() if name) for match in _DEFINITION.finditer(text)]


def check_whole(rel: str, old: str, new: str) -> None:
    """Raise ToolError when ``new`` drops two or more of ``old``'s top-level definitions and
    more than half of them (removing one definition of several stays possible)."""
    before = list(dict.fromkeys(definitions(old)))
    kept = set(definitions(new))
    dropped = [name for name in before if name not in kept]
    if len(dropped) >= 2 and len(dropped) * 2 > len(before):
        raise ToolError(
            f"Not written: this would delete {', '.join(dropped)} from {rel}. Write {rel} again as the "
            "complete file: every line, the unchanged ones too."
        )


@dataclass
class _Node:
    key: str | None  # the name it defines; None for imports and other statements
    kind: str  # "def", "import" or "other"
    start: int  # first line (0-based, decorators included)
    end: int  # one past its last line
    node: ast.stmt


def merge_python(old: str, new: str) -> tuple[str, list[str]] | None:
    """``new`` merged into ``old`` when ``new`` is a fragment of that Python file: (text, notes).
    None when it is not a fragment (write it as it is) or either text does not parse."""
    try:
        old_tree, new_tree = ast.parse(old), ast.parse(new)
    except (SyntaxError, ValueError):
        return None
    old_lines, new_lines = old.splitlines(keepends=True), new.splitlines(keepends=True)
    old_nodes = _nodes(old_tree.body)
    new_nodes = _nodes(new_tree.body)
    old_defs = {n.key: n for n in old_nodes if n.kind == "def"}
    new_defs = {n.key: n for n in new_nodes if n.kind == "def"}
    dropped = [key for key in old_defs if key not in new_defs]
    unchanged = [
        key for key, n in new_defs.items() if key in old_defs and _text(new_lines, n) == _text(old_lines, old_defs[key])
    ]
    resent = len(unchanged) == len(new_defs) and len(dropped) >= 2 and len(dropped) > len(new_defs)
    if not dropped or (unchanged and not resent):
        return None
    notes: list[str] = []
    lines = _merge_body(old_lines, old_nodes, new_lines, new_nodes, notes, gap=2)
    return "".join(lines), notes


def _nodes(body: list[ast.stmt]) -> list[_Node]:
    out = []
    for stmt in body:
        start = min([stmt.lineno, *(d.lineno for d in getattr(stmt, "decorator_list", []))]) - 1
        end = stmt.end_lineno or stmt.lineno
        out.append(_Node(_key(stmt), _kind(stmt), start, end, stmt))
    return out


def _key(stmt: ast.stmt) -> str | None:
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return stmt.name
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
        return stmt.targets[0].id
    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
        return stmt.target.id
    if isinstance(stmt, ast.If) and _MAIN in ast.unparse(stmt.test):
        return _MAIN
    return None


def _kind(stmt: ast.stmt) -> str:
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return "import"
    return "def" if _key(stmt) is not None else "other"


def _text(lines: list[str], node: _Node) -> str:
    return "".join(lines[node.start:node.end])


def _body_text(lines: list[str], node: _Node) -> str | None:
    """A function's body without its header, for recognising a rename."""
    stmt = node.node
    if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) or not stmt.body:
        return None
    return "".join(lines[stmt.body[0].lineno - 1:node.end]).strip()


def _merge_body(
    old_lines: list[str],
    old_nodes: list[_Node],
    new_lines: list[str],
    new_nodes: list[_Node],
    notes: list[str],
    *,
    gap: int,
) -> list[str]:
    """``old_lines`` with the definitions of ``new_nodes`` put in (see the module docstring);
    ``gap``: blank lines around an added definition (2 in a module, 1 in a class)."""
    old_defs = {n.key: n for n in old_nodes if n.kind == "def"}
    by_body = {body: n for n in old_defs.values() if (body := _body_text(old_lines, n))}
    replaced: dict[int, list[str]] = {}  # old node start -> its replacement lines
    added: list[list[str]] = []
    imports: list[str] = []
    have = {ast.unparse(n.node) for n in old_nodes if n.kind == "import"}
    for node in new_nodes:
        text = new_lines[node.start:node.end]
        if node.kind == "import":
            if ast.unparse(node.node) not in have:
                imports += text
                notes.append(f"added {ast.unparse(node.node)}")
        elif node.kind == "other":
            notes.append(f"left out line {node.start + 1}, which is not a definition")
        elif (target := old_defs.get(node.key) or by_body.get(_body_text(new_lines, node))) is None:
            added.append(_ensure_newline(text))
            notes.append(f"added {node.key}")
        elif isinstance(target.node, ast.ClassDef) and isinstance(node.node, ast.ClassDef):
            replaced[target.start] = _merge_class(old_lines, target, new_lines, node, notes)
        else:
            replaced[target.start] = _ensure_newline(text)
            notes.append(f"replaced {target.key}" + (f" with {node.key}" if node.key != target.key else ""))
    blank = ["\n"] * gap
    main = next((n.start for n in old_nodes if n.key == _MAIN), None)
    last_import = max((n.end for n in old_nodes if n.kind == "import"), default=0)
    ends = {n.start: n.end for n in old_nodes}
    out: list[str] = [*_ensure_newline(imports), *blank] if imports and last_import == 0 else []
    index = 0
    while index < len(old_lines):
        if index == main:
            for block in added:
                out += [*block, *blank]
            added = []
        if index in replaced:
            out += replaced[index]
            index = ends[index]
        else:
            out.append(old_lines[index])
            index += 1
        if index == last_import and imports:
            out += _ensure_newline(imports)
    out = _ensure_newline(out)
    for block in added:
        out += [*blank, *block]
    return out


def _merge_class(old_lines: list[str], old: _Node, new_lines: list[str], new: _Node, notes: list[str]) -> list[str]:
    """A class quoted in a fragment, merged member by member into the file's class."""
    assert isinstance(old.node, ast.ClassDef) and isinstance(new.node, ast.ClassDef)
    members = [n for n in _nodes(new.node.body) if n.kind != "import"]
    inner: list[str] = []
    # Lines before the class are passed through unchanged, so the class starts at old.start.
    merged = _merge_body(old_lines[: old.end], _nodes(old.node.body), new_lines, members, inner, gap=1)
    notes.extend(f"{note} in class {old.key}" for note in inner)
    return merged[old.start:]


def _ensure_newline(lines: list[str]) -> list[str]:
    if lines and not lines[-1].endswith("\n"):
        return [*lines[:-1], lines[-1] + "\n"]
    return lines
