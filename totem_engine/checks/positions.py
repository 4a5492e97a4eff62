"""Conversions to LSP positions (0-based line, UTF-16 code units): the one place they happen."""

from __future__ import annotations

import bisect
import re

from totem_engine.checks.base import Position


def utf16_units(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def from_line_column(lines: list[str], line: int, column: int) -> Position:
    """From a 1-based line and a 1-based column counted in characters (code points)."""
    index = min(max(line - 1, 0), max(len(lines) - 1, 0))
    text = lines[index] if lines else ""
    return Position(line=index, character=utf16_units(text[: max(column - 1, 0)]))


def from_byte_offset(data: bytes, offset: int) -> Position:
    """From a byte offset into UTF-8 ``data`` (tree-sitter's unit)."""
    before = data[:offset].decode("utf-8", errors="replace")
    line = before.count("\n")
    column = before[before.rfind("\n") + 1 :]
    return Position(line=line, character=utf16_units(column))


class ByteOffsets:
    """``from_byte_offset`` for many offsets into the same ``data``: the line starts are found once.

    Gives the same positions as ``from_byte_offset(data, offset)``, in time that does not grow
    with the offset (a file with many findings would otherwise decode its start once per finding).
    """

    def __init__(self, data: bytes):
        self.data = data
        self.starts = [0] + [m.end() for m in re.finditer(b"\n", data)]

    def position(self, offset: int) -> Position:
        line = bisect.bisect_right(self.starts, offset) - 1
        start = self.starts[line]
        return Position(line=line, character=utf16_units(self.data[start:offset].decode("utf-8", errors="replace")))


def from_utf16_line_column(lines: list[str], line: int, column: int) -> Position:
    """From a 1-based line and a 1-based column counted in UTF-16 code units (ESLint, SARIF's
    default ``columnKind``), clamped to the line."""
    index = min(max(line - 1, 0), max(len(lines) - 1, 0))
    text = lines[index] if lines else ""
    return Position(line=index, character=min(max(column - 1, 0), utf16_units(text)))


def from_utf16_offset(text: str, offset: int) -> Position:
    """From a 0-based offset into ``text`` counted in UTF-16 code units (ESLint's fix ranges)."""
    units = text.encode("utf-16-le")[: max(offset, 0) * 2]
    before = units.decode("utf-16-le", errors="ignore")
    line = before.count("\n")
    return Position(line=line, character=utf16_units(before[before.rfind("\n") + 1 :]))
