"""checks/copied_tests.py: a project test a small model copied into the module it changed."""

from __future__ import annotations

from totem_engine.checks.copied_tests import without_copied_tests

TEST_FILE = "import report\n\n\ndef test_low_stock():\n    assert report.low_stock(sample(), 5) == []\n"
MODULE = "def low_stock(inventory, threshold):\n    return []\n"


def test_a_copied_test_goes_with_its_decorators_and_the_blank_lines_before_it(tmp_path):
    (tmp_path / "test_report.py").write_text(TEST_FILE)
    text = MODULE + "\n\n@decorated\ndef test_low_stock():\n    assert low_stock(sample(), 5) == []\n\n\ndef helper():\n    return 1\n"

    assert without_copied_tests(tmp_path, "report.py", text) == (MODULE + "\n\ndef helper():\n    return 1\n", ["test_low_stock"])


def test_a_copy_at_the_end_leaves_the_module_ending_as_it_did_before_it(tmp_path):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "check_report.py").write_text(TEST_FILE)  # a test file by its folder
    text = MODULE + "\n\ndef test_low_stock():\n    assert low_stock(sample(), 5) == []\n"

    assert without_copied_tests(tmp_path, "report.py", text) == (MODULE, ["test_low_stock"])


def test_nothing_is_taken_that_is_not_a_copy_of_a_project_test(tmp_path):
    (tmp_path / "test_report.py").write_text(TEST_FILE)
    (tmp_path / "helpers.py").write_text("def test_data():\n    return 1\n")  # not a test file
    own = MODULE + "\n\ndef test_data():\n    return 2\n"

    assert without_copied_tests(tmp_path, "report.py", own) is None  # named like no project test
    assert without_copied_tests(tmp_path, "test_other.py", MODULE + "\n\n" + TEST_FILE.split("\n\n\n")[1]) is None  # a test file
    assert without_copied_tests(tmp_path, "report.py", "def broken(:\n") is None
