"""Minimal TextEdits for an agent's edit of an open document (totem_lsp.text_edits)."""

from __future__ import annotations

import re

import pytest

from totem_lsp.text_edits import lines_of, text_edits


def offset(text: str, line: int, character: int) -> int:
    """The string index of an LSP position (UTF-16 code units), counted independently here."""
    starts = [0] + [m.end() for m in re.finditer(r"\r\n|\r|\n", text)]
    start = starts[line] if line < len(starts) else len(text)
    units = 0
    index = start
    while units < character:
        units += 2 if ord(text[index]) > 0xFFFF else 1
        index += 1
    return index


def apply(text: str, edits) -> str:
    """The edits applied as an editor does: all against the original text, last first."""
    spans = [(offset(text, e.range.start.line, e.range.start.character), offset(text, e.range.end.line, e.range.end.character), e.new_text) for e in edits]
    for a, b in zip(spans, spans[1:]):
        assert a[1] <= b[0], "edits must not overlap and come in document order"
    for start, end, new_text in reversed(spans):
        text = text[:start] + new_text + text[end:]
    return text


def spans(edits) -> list[tuple[int, int, int, int, str]]:
    return [(e.range.start.line, e.range.start.character, e.range.end.line, e.range.end.character, e.new_text) for e in edits]


def numbered(count: int) -> str:
    return "".join(f"line {n}\n" for n in range(count))


def test_one_changed_line_is_one_edit_of_that_line():
    old = numbered(300)
    new = old.replace("line 150\n", "line one hundred fifty\n")
    edits = text_edits(old, new)
    assert spans(edits) == [(150, 0, 151, 0, "line one hundred fifty\n")]
    assert apply(old, edits) == new


def test_equal_texts_need_no_edit():
    assert text_edits(numbered(5), numbered(5)) == []
    assert text_edits("", "") == []


def test_insert_at_the_end():
    assert spans(text_edits("a\nb\n", "a\nb\nc\n")) == [(2, 0, 2, 0, "c\n")]
    # The last line had no line ending: it changes (it gains one), the lines before it do not.
    edits = text_edits("a\nb", "a\nb\nc")
    assert spans(edits) == [(1, 0, 1, 1, "b\nc")]
    assert apply("a\nb", edits) == "a\nb\nc"


def test_delete_all():
    for old in ("a\nb\n", "a\nb", "x"):
        edits = text_edits(old, "")
        assert len(edits) == 1 and edits[0].new_text == ""
        assert (edits[0].range.start.line, edits[0].range.start.character) == (0, 0)
        assert apply(old, edits) == ""
    assert spans(text_edits("a\nb", "")) == [(0, 0, 1, 1, "")]


def test_a_one_line_document_replaced():
    assert spans(text_edits("x\n", "y")) == [(0, 0, 1, 0, "y")]


def test_an_empty_document_gets_one_insert():
    assert spans(text_edits("", "x = 1\ny = 2\n")) == [(0, 0, 0, 0, "x = 1\ny = 2\n")]


def test_crlf_lines_keep_their_endings_and_count_as_one_break():
    old = "one\r\ntwo\r\nthree\r\n"
    new = "one\r\n2\r\nthree\r\n"
    edits = text_edits(old, new)
    assert spans(edits) == [(1, 0, 2, 0, "2\r\n")]
    assert apply(old, edits) == new
    assert lines_of("a\r\nb\rc\nd") == ["a\r\n", "b\r", "c\n", "d"]
    # Only a line ending changes: that line is replaced, exactly.
    edits = text_edits("a\nb\nc\n", "a\r\nb\nc\n")
    assert spans(edits) == [(0, 0, 1, 0, "a\r\n")]


def test_characters_outside_the_bmp_count_two_utf16_units():
    old = "x = '😀'"
    new = "x = '😀😀'"
    edits = text_edits(old, new)
    assert spans(edits) == [(0, 0, 0, 8, new)]  # 7 characters, 8 UTF-16 code units
    assert apply(old, edits) == new
    old2 = "# 😀 start\nkeep\n# 𝄞 end"
    new2 = "# 😀 start\nkept\n# 𝄞 end"
    assert apply(old2, text_edits(old2, new2)) == new2


def test_other_unit_counts_are_honoured():
    """A client that negotiated UTF-8 positions: the end of the last line in bytes."""
    edits = text_edits("é", "", units=lambda s: len(s.encode("utf-8")))
    assert spans(edits) == [(0, 0, 0, 2, "")]


@pytest.mark.parametrize(
    "old,new",
    [
        ("a\nb\nc\nd\ne\n", "a\nc\nd\nX\ne\nf\n"),
        ("\n\n\n", "\n"),
        ("a\rb\rc", "a\rB\rc\r"),
        ("fn()\n" * 50, "fn()\n" * 20 + "gn()\n" + "fn()\n" * 31),
    ],
)
def test_applying_the_edits_gives_the_new_text_and_leaves_some_lines_alone(old, new):
    edits = text_edits(old, new)
    assert apply(old, edits) == new
    unchanged = set(range(len(lines_of(old)))) - {line for e in edits for line in range(e.range.start.line, e.range.end.line)}
    assert unchanged
