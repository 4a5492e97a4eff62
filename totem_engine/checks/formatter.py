"""The project's formatter: ``[format]`` in config, ``"<glob>" = "command {file}"``.

After an agent edit has been saved on disk, ``format_file`` runs the command of the first glob
that matches the file (the glob is matched against the project-relative path and the file name)
on it, in the project root, in its own process group, with a time limit. The caller puts the
rewrite into the same change set as the edit (snapshots ``after_change``) and records it as what
the agent last saw (``freshness.mark_seen``), so the agent's next edit is not refused as stale.

A formatter that cannot start, times out or fails gives a note, never an exception. ``changed``
says whether the file on disk differs after the command, whatever its exit status (a formatter
that failed half way may still have written). Commands from a project's own config reach here
only once the user trusts the project: trust.py drops an untrusted project's ``[format]``.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from pathlib import Path

import anyio

from totem_engine.checks.process import run_command, with_file
from totem_engine.config import Config

TIMEOUT = 30.0  # seconds


@dataclass(frozen=True)
class FormatResult:
    changed: bool
    new_bytes: bytes | None  # the file after formatting when changed (None: unchanged, or removed)
    note: str | None = None  # what went wrong, worded for the model and the user

    def for_model(self, rel: str) -> str | None:
        """One line for the tool result: the rewrite and what went wrong, or None when neither."""
        parts = []
        if self.changed:
            parts.append(f"{rel} was rewritten by the project's formatter; read it again before an edit that quotes its text.")
        if self.note:
            parts.append(self.note)
        return " ".join(parts) or None


def formatter_for(rel: str, config: Config) -> tuple[str, str] | None:
    """``(glob, command)`` of the first ``[format]`` entry whose glob matches ``rel``."""
    name = rel.rsplit("/", 1)[-1]
    for pattern, command in config.format.items():
        if fnmatch.fnmatchcase(rel, pattern) or fnmatch.fnmatchcase(name, pattern):
            return pattern, command
    return None


async def format_file(root: Path, rel: str, config: Config, *, timeout: float = TIMEOUT) -> FormatResult:
    chosen = formatter_for(rel, config)
    if chosen is None:
        return FormatResult(False, None)
    pattern, command = chosen
    path = Path(root) / rel
    label = f"formatter for {pattern!r} ({command})"
    try:
        before = await anyio.Path(path).read_bytes()
    except OSError as exc:
        return FormatResult(False, None, f"{label}: {rel} could not be read ({exc.strerror or exc}); not formatted.")
    result = await run_command(Path(root), with_file(command, path), timeout=timeout)
    note = None
    if result.problem:
        note = f"{label}: {result.problem}; {rel} was left as saved."
    elif result.returncode != 0:
        detail = result.first_error_line()
        note = f"{label} exited with {result.returncode}" + (f": {detail}" if detail else "")
    try:
        after = await anyio.Path(path).read_bytes()
    except FileNotFoundError:
        return FormatResult(True, None, (note + " " if note else "") + f"{label} removed {rel}.")
    except OSError as exc:
        return FormatResult(False, None, f"{label}: {rel} could not be read after formatting ({exc.strerror or exc}).")
    if after == before:
        return FormatResult(False, None, note)
    return FormatResult(True, after, note)
