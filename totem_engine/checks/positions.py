"""Conversions to LSP positions (0-based line, UTF-16 code units): the one place they happen."""

from __future__ import annotations

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
