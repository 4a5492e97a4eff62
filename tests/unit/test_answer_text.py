"""The answer on stdout (totem_cli/answer.py): a small model's file block as one line saying what
was written, the text streaming up to a line that may name a file."""

from __future__ import annotations

import io

from totem_cli.answer import AnswerText, named_path, summary_line


def test_text_streams_until_a_line_that_may_name_a_file_and_that_line_becomes_the_summary():
    out = io.StringIO()
    answer = AnswerText(out, hold=False)
    answer.text("I add")
    assert out.getvalue() == "I add"  # streamed as it comes
    answer.text(" count.\n\nrep")
    assert out.getvalue() == "I add count.\n\n"  # "rep" may become a path line
    answer.text("ort.py\n\nIt is tested.")
    answer.step_end()
    assert out.getvalue() == "I add count.\n\n"
    answer.tool_start("c1", "write", {"path": "report.py", "content": "..."})
    answer.tool_end("c1", "ok", "wrote 26 lines")
    assert out.getvalue() == "I add count.\n\n(report.py: 26 lines written)\n\nIt is tested."
    answer.flush()
    assert out.getvalue().endswith("It is tested.")


def test_a_path_line_without_a_write_stays_and_a_refused_write_says_so():
    out = io.StringIO()
    answer = AnswerText(out, hold=False)
    answer.text("See `notes.md`:\nsrc/a.py\nsrc/b.py\n")
    answer.step_end()
    answer.tool_start("c1", "write", {"path": "./src/b.py", "content": "x"})
    answer.tool_end("c1", "denied", "rejected")
    answer.flush()
    assert out.getvalue() == "See `notes.md`:\nsrc/a.py\n(src/b.py: not written, rejected)\n"


def test_held_text_waits_for_the_step_and_a_discarded_step_leaves_nothing():
    out = io.StringIO()
    answer = AnswerText(out, hold=True)
    answer.text("first try")
    answer.discard()
    answer.text("The answer.")
    assert out.getvalue() == ""
    answer.step_end()
    assert out.getvalue() == "The answer.\n"


def test_a_call_of_another_step_or_tool_changes_nothing():
    out = io.StringIO()
    answer = AnswerText(out, hold=False)
    answer.text("calc.py\n")
    answer.step_end()
    answer.tool_start("c1", "read", {"path": "calc.py"})
    answer.tool_end("c1", "ok", "2 lines")
    answer.flush()
    assert out.getvalue() == "calc.py\n"


def test_named_path_and_summary_line():
    assert named_path("### `src/tomli/_re.py`:") == "src/tomli/_re.py"
    assert named_path("Here it is.") is None and named_path("report") is None
    assert summary_line("a.py", "ok", "created 3 lines, 1 finding") == "(a.py: created, 3 lines, 1 finding)"
    assert summary_line("a.py", "ok", "wrote 1 line") == "(a.py: 1 line written)"
    assert summary_line("a.py", "ok", "unchanged") == "(a.py: unchanged)"
    assert summary_line("a.py", "error", "would delete a, b from a.py") == "(a.py: not written, would delete a, b from a.py)"
