"""Fixtures for the tests that drive a file tool directly (prepare, then apply) over a real folder
(test_edit, test_patch, test_read_write_tools; test_bash takes ``root`` and has its own ``ctx``).

A module that needs a ``root`` or ``ctx`` of another kind defines its own, which takes precedence
over these for that module.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from totem_engine.tools.base import ReadLedger, ToolContext
from totem_engine.workspace.files import DiskWorkspace


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """An empty project folder; ``tmp_path`` itself is outside it."""
    project = tmp_path / "project"
    project.mkdir()
    return project


@pytest.fixture
def ctx(root: Path) -> ToolContext:
    """A context on ``root`` with a read ledger, so the freshness checks apply as in a session."""
    return ToolContext(root=root, workspace=DiskWorkspace(), session_id="s1", call_id="c1", reads=ReadLedger())
