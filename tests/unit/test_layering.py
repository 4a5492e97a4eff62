"""The house rules of the layout, checked on the source itself.

- The engine knows no front end: importing every module of ``totem_engine`` loads neither pygls,
  lsprotocol, totem_lsp, totem_cli, totem_mcp_server, the ACP SDK (``acp``) nor totem_acp.
- ``import totem_lsp.server`` loads no engine module, so ``initialize`` is answered before the
  engine's imports are paid for (README "Performance").
- The shared layers know no tool: no module of ``checks``, ``compaction``, ``vocab`` or
  ``workspace`` imports ``totem_engine.tools`` (what they share with the tools lives in
  ``vocab`` and ``workspace``).
- ``totem_engine`` has no import cycle, ``TYPE_CHECKING`` imports included: a part of the turn
  types against a protocol of what it needs, not against the module that uses it.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENGINE = ROOT / "totem_engine"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _engine_modules() -> dict[str, Path]:
    return {_module_name(path): path for path in sorted(ENGINE.rglob("*.py"))}


def _loaded_after(code: str) -> list[str]:
    """The modules a fresh interpreter holds after running ``code``."""
    script = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_engine_imports_no_front_end():
    imports = "\n".join(f"import {name}" for name in _engine_modules())
    loaded = _loaded_after(imports)
    assert "totem_engine.runtime" in loaded  # the imports above did run
    front = [name for name in loaded if name.split(".")[0] in ("pygls", "lsprotocol", "totem_lsp", "totem_cli", "totem_mcp_server", "acp", "totem_acp")]
    assert front == []


def test_the_server_module_imports_no_engine():
    loaded = _loaded_after("import totem_lsp.server")
    assert "pygls.lsp.server" in loaded
    assert [name for name in loaded if name.split(".")[0] == "totem_engine"] == []


def _edges(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The engine modules ``name`` imports anywhere in its source (``TYPE_CHECKING`` blocks and
    function bodies included): ``from P import m`` counts as an import of the module ``P.m`` when
    there is one, of ``P`` otherwise."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base)
    return {target for target in found if target in modules and target != name}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as the list of its modules, or None."""
    state: dict[str, int] = {}  # 1: on the path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for target in sorted(graph[node]):
            if state.get(target) == 1:
                return path[path.index(target):] + [target]
            if target not in state and (found := visit(target)):
                return found
        state[node] = 2
        path.pop()
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_the_engine_has_no_import_cycle():
    modules = _engine_modules()
    graph = {name: _edges(name, path, modules) for name, path in modules.items()}
    assert sum(len(targets) for targets in graph.values()) > 100  # the graph was read
    assert _cycle(graph) is None


def test_the_shared_layers_import_no_tool():
    modules = _engine_modules()
    shared = ("checks", "compaction", "vocab", "workspace")
    checked = {name: path for name, path in modules.items() if name.split(".")[1:2] and name.split(".")[1] in shared}
    assert {"totem_engine.checks.imports", "totem_engine.compaction.fit", "totem_engine.vocab.tools",
            "totem_engine.workspace.walk"} <= set(checked)
    for name, path in checked.items():
        tools = [t for t in _edges(name, path, modules) if t == "totem_engine.tools" or t.startswith("totem_engine.tools.")]
        assert tools == [], name


def test_the_cycle_finder_finds_a_cycle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_the_turns_parts_type_against_protocols_not_the_turn():
    """No module of turn/ imports ``TYPE_CHECKING`` or the loop: the round and the policies see
    the turn through the protocols of turn/host.py."""
    modules = _engine_modules()
    turn = {name: path for name, path in modules.items() if name.startswith("totem_engine.turn.")}
    assert "totem_engine.turn.calls" in turn and "totem_engine.turn.small" in turn
    for name, path in turn.items():
        imported = {alias.name for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                    if isinstance(node, ast.ImportFrom) for alias in node.names}
        assert "TYPE_CHECKING" not in imported, name
        assert "totem_engine.turn.loop" not in _edges(name, path, modules), name


FRONT_ENDS = ("totem_lsp", "totem_cli", "totem_acp", "totem_mcp_server")
# What a door may import of the engine: the API package and the light ConfigError.
ALLOWED = ("totem_engine.api", "totem_engine.config_error")
# Names under which a door holds an engine object: assigning through one is reaching into it.
ENGINE_HOLDERS = {"engine", "engines", "running", "runtime", "agent", "turn", "history"}


def _engine_imports(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""] if isinstance(node, ast.ImportFrom) else []
        found += [n for n in names if n.split(".")[0] == "totem_engine"]
    return found


def _assigned_through_engine(path: Path) -> list[str]:
    """``engine.x = ...``, ``self.engine.x = ...``, ``runtime.agent.y = ...``: a door setting
    an engine object's attribute."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
        for target in targets:
            chain = []
            while isinstance(target, ast.Attribute):
                target = target.value
                chain.append(target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", ""))
            if any(name.lstrip("_") in ENGINE_HOLDERS for name in chain):
                found.append(f"{path.name}:{node.lineno}")
    return found


@pytest.mark.parametrize("package", FRONT_ENDS)
def test_a_door_imports_only_the_engine_api(package):
    files = sorted((ROOT / package).rglob("*.py"))
    assert files
    wrong = {
        f"{path.relative_to(ROOT)}: {name}"
        for path in files
        for name in _engine_imports(path)
        if not any(name == allowed or name.startswith(allowed + ".") for allowed in ALLOWED)
    }
    assert sorted(wrong) == []


@pytest.mark.parametrize("package", FRONT_ENDS)
def test_a_door_assigns_to_no_engine_object(package):
    wrong = [hit for path in sorted((ROOT / package).rglob("*.py")) for hit in _assigned_through_engine(path)]
    assert wrong == []


def test_the_assignment_check_finds_one():
    source = "def f(runtime, self):\n    runtime.agent.command_runner = 1\n    self.engine.x += 2\n    self.own = 3\n"
    probe = ROOT / "tests" / "unit" / "_probe_assign.py"
    try:
        probe.write_text(source)
        assert _assigned_through_engine(probe) == ["_probe_assign.py:2", "_probe_assign.py:3"]
    finally:
        probe.unlink()
