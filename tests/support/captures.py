"""Recorded vendor streams (``<repo>/../shared/captures/<vendor>``), read for replay tests.

Each case is ``<name>.chunks.txt`` (one SSE data payload a line) and ``<name>.expected.json``
(the shape in ../shared/captures/README.md). The folder lives outside the repository; a test
module whose folder is absent is skipped as a whole.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2].parent / "shared" / "captures"


def capture_folder(vendor: str) -> Path:
    """``ROOT / vendor``; skips the calling test module (call it at import) when it is absent."""
    folder = ROOT / vendor
    if not folder.is_dir():
        pytest.skip(f"recorded captures not present at {folder}", allow_module_level=True)
    return folder


def capture_cases(folder: Path) -> list[str]:
    """The case names in ``folder``, sorted."""
    return sorted(p.name.removesuffix(".chunks.txt") for p in folder.glob("*.chunks.txt"))


def capture_lines(folder: Path, name: str) -> list[str]:
    """The case's non-blank lines, each one event's data."""
    text = (folder / f"{name}.chunks.txt").read_text(encoding="utf-8")
    return [line for line in text.splitlines() if line.strip()]


def capture_expected(folder: Path, name: str) -> dict[str, Any]:
    return json.loads((folder / f"{name}.expected.json").read_text(encoding="utf-8"))


__all__ = ["ROOT", "capture_cases", "capture_expected", "capture_folder", "capture_lines"]
