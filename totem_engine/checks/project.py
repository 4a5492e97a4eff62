"""The project's own checks: commands it already has, whose output becomes findings.

``[checks.<name>]`` in config: ``command`` (``{file}`` is replaced by the file's path, quoted),
``format`` and ``files`` (a glob on the project-relative path). Commands run on the saved file
on disk, in the project root, in their own process group, with a time limit; a file whose
editor buffer differs from the disk is skipped with a note. Format ``lines`` reads
``path:line:col: message`` or ``path:line: message`` lines (GNU style, as most linters print).
A check that fails to start or times out gives a note, never an exception.
"""

from __future__ import annotations

import fnmatch
import os
import re
import shlex
import signal
from pathlib import Path

import anyio

from totem_engine.checks.base import CheckResult, Finding, Range, Severity
from totem_engine.checks.positions import from_line_column

TIMEOUT = 60.0  # seconds
_LINE = re.compile(r"^(?P<path>[^:\n]+):(?P<line>\d+):(?:(?P<col>\d+):)?\s*(?P<message>.+)$")
_SEVERITY = re.compile(r"^(error|warning|info|note|hint)\b[:\s]*", re.IGNORECASE)


class CommandCheck:
    external = True

    def __init__(self, name: str, command: str, *, format: str = "lines", files: str = "*"):
        self.name = name
        self.command = command
        self.format = format
        self.files = files

    def applies_to(self, rel: str) -> bool:
        return fnmatch.fnmatchcase(rel, self.files) or fnmatch.fnmatchcase(rel.rsplit("/", 1)[-1], self.files)

    async def check(self, root: Path, rel: str, text: str) -> CheckResult:
        if not self.applies_to(rel):
            return CheckResult([], [])
        path = root / rel
        try:
            on_disk = await anyio.Path(path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return CheckResult([], [f"{self.name}: {rel} is not on disk yet; checked after it is saved."])
        if on_disk != text:
            return CheckResult([], [f"{self.name}: {rel} has unsaved changes; checked after it is saved."])
        output, problem = await self._run(root, path)
        if problem:
            return CheckResult([], [f"{self.name}: {problem}"])
        return CheckResult(parse_lines(output, rel, text, self.name), [])

    async def _run(self, root: Path, path: Path) -> tuple[str, str | None]:
        command = self.command.replace("{file}", shlex.quote(str(path)))
        try:
            process = await anyio.open_process(
                ["/bin/sh", "-c", command], cwd=root, start_new_session=True, stdin=None
            )
        except OSError as exc:
            return "", f"could not start ({exc})"
        chunks: list[bytes] = []
        try:
            with anyio.fail_after(TIMEOUT):
                async with process:
                    async def drain(stream) -> None:
                        async for chunk in stream:
                            chunks.append(chunk)

                    async with anyio.create_task_group() as group:
                        group.start_soon(drain, process.stdout)
                        group.start_soon(drain, process.stderr)
                    await process.wait()
        except TimeoutError:
            return "", f"timed out after {TIMEOUT:.0f} s"
        finally:
            if process.returncode is None:
                try:
                    os.killpg(process.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        return b"".join(chunks).decode("utf-8", errors="replace"), None


def parse_lines(output: str, rel: str, text: str, source: str) -> list[Finding]:
    """``path:line[:col]: [severity:] message`` lines about ``rel`` as findings."""
    lines = text.split("\n")
    findings = []
    for raw in output.splitlines():
        match = _LINE.match(raw.strip())
        if not match or not _same_file(match["path"], rel):
            continue
        message = match["message"].strip()
        severity: Severity = "warning"
        level = _SEVERITY.match(message)
        if level:
            severity = {"error": "error", "warning": "warning", "hint": "hint"}.get(level[1].lower(), "information")
            message = message[level.end() :]
        start = from_line_column(lines, int(match["line"]), int(match["col"] or 1))
        end = from_line_column(lines, int(match["line"]), len(lines[start.line]) + 1 if lines else 1)
        findings.append(Finding(code=source, message=message, severity=severity, range=Range(start, end), source=source))
    return findings


def _same_file(reported: str, rel: str) -> bool:
    reported = reported.replace("\\", "/").removeprefix("./")
    return reported == rel or reported.endswith("/" + rel)
