"""The edit-matching engine: strategies, uniqueness, line endings, re-indentation, closest lines."""

from __future__ import annotations

import pytest

from totem_engine.tools import matching
from totem_engine.tools.matching import AmbiguousMatch, FileText, NoMatch, locate, replace

# --- exact, uniqueness ----------------------------------------------------------------------


def test_exact_replace_inside_a_line():
    result = replace("x = compute(a, b)\n", "compute(a, b)", "compute(b, a)")
    assert result.text == "x = compute(b, a)\n"
    assert result.strategy == matching.EXACT
    assert result.lines == [1]


def test_ambiguous_match_names_count_and_lines():
    content = "import 'a';\nimport 'io';\nimport 'io';\nmain(){}\n"
    with pytest.raises(AmbiguousMatch) as err:
        replace(content, "import 'io';\n", "")
    assert err.value.lines == [2, 3]
    assert "2 matches, at lines 2 and 3" in str(err.value)


def test_replace_all_changes_every_copy():
    result = replace("import 'a';\nimport 'io';\nimport 'io';\nmain(){}\n", "import 'io';\n", "", replace_all=True)
    assert result.text == "import 'a';\nmain(){}\n"
    assert result.lines == [2, 3]


def test_overlapping_copies_are_ambiguous_and_replace_all_takes_them_left_to_right():
    with pytest.raises(AmbiguousMatch):
        replace("aaa", "aa", "b")
    assert replace("aaa", "aa", "b", replace_all=True).text == "ba"  # as str.replace does


def test_exact_match_wins_over_tolerant_ones():
    # Ignoring indentation, "x = 1" would match twice; the exact match is the one taken.
    result = replace("x = 1\n    x = 1\n", "    x = 1\n", "    x = 2\n")
    assert result.text == "x = 1\n    x = 2\n"
    assert result.strategy == matching.EXACT


def test_line_numbers_of_many_matches_are_right():
    content = "".join("hit\n" if i % 3 == 0 else "miss\n" for i in range(30))
    result = replace(content, "hit", "HIT", replace_all=True)
    assert result.lines == list(range(1, 31, 3))


# --- line endings --------------------------------------------------------------------------


def test_lf_region_of_a_mixed_file_leaves_the_crlf_line_alone():
    assert replace("alpha\nbeta\r\ngamma\n", "alpha\n", "ALPHA\n").text == "ALPHA\nbeta\r\ngamma\n"


def test_lf_old_string_matches_crlf_text_and_is_written_back_as_crlf():
    assert replace("a\r\nb\r\n", "a\nb", "A\nB").text == "A\r\nB\r\n"


def test_crlf_old_and_new_strings_match_an_lf_file():
    assert replace("a\nb\n", "a\r\nb\r\n", "x\r\ny\r\n").text == "x\ny\n"


def test_match_ending_before_a_crlf_does_not_split_it():
    assert replace("a\r\nb\r\n", "a", "X").text == "X\r\nb\r\n"


def test_one_line_region_takes_the_ending_of_its_line():
    # No break inside the region: the new lines take the ending of the line it sits on.
    assert replace("x\r\ny\r\n", "x", "1\n2").text == "1\r\n2\r\ny\r\n"
    assert replace("p\r\nx\ny\r\n", "x", "1\n2").text == "p\r\n1\n2\ny\r\n"


def test_never_writes_cr_cr_lf():
    result = replace("a\r\nb\r\n", "a\r\n", "x\r\r\ny\r\n")
    assert "\r\r\n" not in result.text
    assert result.text == "x\r\ny\r\nb\r\n"


def test_view_offsets_map_back_without_splitting_crlf():
    text = FileText.of("ab\r\ncd\r\n")
    assert text.norm == "ab\ncd\n"
    assert [text.to_original(i) for i in range(len(text.norm) + 1)] == [0, 1, 2, 4, 5, 6, 8]


# --- tolerant strategies -------------------------------------------------------------------


def test_trailing_whitespace_is_ignored_per_line():
    result = replace("def f():  \n    return 1\t\n", "def f():\n    return 1\n", "def g():\n    return 2\n")
    assert result.text == "def g():\n    return 2\n"
    assert result.strategy == matching.TRAILING_WHITESPACE


def test_indentation_ignored_reindents_new_text_deeper():
    content = "class A:\n    def f(self):\n        x = 1\n        y = 2\n"
    result = replace(content, "x = 1\ny = 2\n", "if x:\n    x = 1\ny = 2\n")
    assert result.strategy == matching.INDENTATION
    assert result.text == "class A:\n    def f(self):\n        if x:\n            x = 1\n        y = 2\n"


def test_indentation_ignored_reindents_new_text_shallower():
    content = "def f():\n    return 1\n"
    result = replace(content, "        def f():\n            return 1\n", "        def f():\n            return 2\n")
    assert result.text == "def f():\n    return 2\n"


def test_indentation_ignored_keeps_the_files_tabs():
    result = replace("if a:\n\tcall()\n", "    call()\n", "    call(1)\n    done()\n")
    assert result.text == "if a:\n\tcall(1)\n\tdone()\n"


def test_indentation_ignored_follows_the_files_levels():
    # Old text written with 2 spaces for a 4-space file: each level takes the file's.
    content = "def f():\n    if a:\n        return 1\n"
    result = replace(content, "def f():\n  if a:\n    return 1\n", "def f():\n  if a:\n    return 2\n  return 3\n")
    assert result.text == "def f():\n    if a:\n        return 2\n    return 3\n"


def test_unicode_folding_matches_curly_quotes_dashes_and_odd_spaces():
    content = "msg = \u201chello\u201d \u2014 it\u2019s\u00a0fine\n"
    result = replace(content, "msg = \"hello\" - it's fine\n", "msg = 'bye'\n")
    assert result.text == "msg = 'bye'\n"
    assert result.strategy == matching.UNICODE


def test_tolerant_match_must_be_unique_too():
    with pytest.raises(AmbiguousMatch) as err:
        replace("    x = 1 \n  x = 1 \n", "x = 1\n", "x = 2\n")
    assert err.value.lines == [1, 2]
    assert err.value.strategy == matching.INDENTATION


def test_tolerant_replace_all_fits_each_place():
    result = replace("  x = 1\n    x = 1\n", "x = 1", "x = 2", replace_all=True)
    assert result.text == "  x = 2\n    x = 2\n"


def test_blank_old_text_never_matches_tolerantly():
    assert locate(FileText.of("a\n  \nb\n"), "\n\n") == []


def test_old_final_newline_is_not_added_to_a_file_without_one():
    result = replace("keep\nlast  ", "last\n", "LAST\n")
    assert result.text == "keep\nLAST"


def test_tolerant_match_of_a_middle_line_keeps_its_newline():
    assert replace("a\n  b\n  c  \nd\n", "b\nc", "B\nC").text == "a\n  B\n  C\nd\n"


def test_whole_lines_rejects_an_exact_match_inside_a_line():
    text = FileText.of("xb\nb\n")
    assert [f.start for f in locate(text, "b\n")] == [1, 3]
    assert [f.start for f in locate(text, "b\n", whole_lines=True)] == [3]


# --- no match -------------------------------------------------------------------------------


def test_no_match_shows_the_closest_line_with_its_number():
    with pytest.raises(NoMatch) as err:
        replace("source 'x'\ngem 'rails'\n", "gem 'rails', '7.1'\n", "x")
    assert err.value.closest == "2\tgem 'rails'"


def test_closest_window_has_as_many_lines_as_old():
    content = "one\ntwo\nthree\nfour\nfive\n"
    with pytest.raises(NoMatch) as err:
        replace(content, "thre\nfuor\n", "x")
    assert err.value.closest == "3\tthree\n4\tfour"


LONG = "".join(f"result_{i} = compute({i}, 'item {i * 7}')\n" for i in range(400))


def test_closest_in_a_long_file_finds_the_near_miss():
    old = "result_250 = compute(250, 'item 1750')\nresult_251 = compuet(251, 'item 1757')\n"
    with pytest.raises(NoMatch) as err:
        replace(LONG, old, "x")
    assert err.value.closest == "251\tresult_250 = compute(250, 'item 1750')\n252\tresult_251 = compute(251, 'item 1757')"


def test_closest_of_a_long_old_text_compares_whole_lines():
    lines = LONG.splitlines()
    old = "\n".join(lines[100:180]).replace("compute(150,", "compute(15,")  # over 2000 characters
    assert len(old) > matching.CLOSEST_BY_CHARACTERS
    with pytest.raises(NoMatch) as err:
        replace(LONG, old, "x")
    assert err.value.closest.startswith("101\tresult_100 = ")


def test_ambiguity_names_at_most_ten_lines():
    with pytest.raises(AmbiguousMatch) as err:
        replace("x\n" * 50, "x", "y")
    assert str(err.value) == "50 matches, at lines 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 and 40 more"


def test_no_closest_lines_when_nothing_is_similar():
    with pytest.raises(NoMatch) as err:
        replace("aaaa\nbbbb\n", "zzzzzzzz qqqq\n", "x")
    assert err.value.closest is None


def test_no_closest_lines_in_an_empty_file():
    with pytest.raises(NoMatch) as err:
        replace("", "x", "y")
    assert err.value.closest is None


def test_join_numbers():
    assert matching.join_numbers([4]) == "4"
    assert matching.join_numbers([2, 3]) == "2 and 3"
    assert matching.join_numbers([1, 5, 9]) == "1, 5 and 9"
