"""Prompt files under prompts/: the only place the model's standing instructions are written.

In a checkout the folder is ``<repo>/prompts``; installed, it is the ``totem_prompts`` package
that pyproject.toml maps onto the same folder.
"""

from __future__ import annotations

from functools import cache
from importlib import resources


@cache
def prompt(name: str) -> str:
    """The text of ``prompts/<name>`` (e.g. ``base.txt``, ``tools/read.txt``), trailing space trimmed."""
    return resources.files("totem_prompts").joinpath(name).read_text(encoding="utf-8").rstrip()


def tool_description(tool: str) -> str:
    return prompt(f"tools/{tool}.txt")
