"""fragments: a small model's partial "whole file", merged (Python) or refused (other languages)."""

from __future__ import annotations

import pytest

from totem_engine.tools.fragments import check_whole, definitions, merge_python
from totem_engine.vocab.tools import ToolError

OLD = '''import os


def add(a, b):
    return a + b


def sub(a, b):
    return a - b


class Box:
    def __init__(self):
        self.items = []

    def put(self, x):
        self.items.append(x)


if __name__ == "__main__":
    print(add(1, 2))
'''


def merged(new):
    result = merge_python(OLD, new)
    assert result is not None
    return result


def test_a_new_function_goes_before_the_main_block():
    text, notes = merged("def mul(a, b):\n    return a * b\n")
    assert text == OLD.replace('\n\nif __name__', '\n\ndef mul(a, b):\n    return a * b\n\n\nif __name__')
    assert notes == ["added mul"]


def test_a_fixed_function_replaces_its_old_self_in_place():
    text, notes = merged("def sub(a, b):\n    return b - a\n")
    assert text == OLD.replace("return a - b", "return b - a") and notes == ["replaced sub"]


def test_a_class_quoted_with_one_new_method_keeps_the_others():
    text, notes = merged("class Box:\n    def size(self):\n        return len(self.items)\n")
    assert "    def put(self, x):\n        self.items.append(x)\n\n    def size(self):\n        return len(self.items)\n" in text
    assert notes == ["added size in class Box"]


def test_a_renamed_function_with_the_same_body_replaces_the_old_name():
    text, notes = merged("def plus(a, b):\n    return a + b\n")
    assert "def plus(a, b):" in text and "def add(" not in text and notes == ["replaced add with plus"]


def test_a_missing_import_is_added_after_the_imports_and_example_calls_are_left_out():
    text, notes = merged("import sys\n\n\ndef mul(a, b):\n    return a * b\n\n\nprint(mul(2, 3))\n")
    assert text.startswith("import os\nimport sys\n") and "print(mul(2, 3))" not in text
    assert notes == ["added import sys", "added mul", "left out line 8, which is not a definition"]


def test_a_whole_file_is_not_a_fragment():
    assert merge_python(OLD, OLD.replace("a - b", "b - a")) is None  # keeps add unchanged
    removed = OLD.replace("def sub(a, b):\n    return a - b\n\n\n", "")
    assert merge_python(OLD, removed) is None  # a real removal keeps the untouched definitions


def test_text_that_does_not_parse_is_not_merged():
    assert merge_python(OLD, "def mul(a, b):\n  return a *\n") is None
    assert merge_python("def broken(:\n", "def mul():\n    pass\n") is None


def test_a_file_without_imports_gets_the_new_import_on_top():
    text, _ = merge_python("def a():\n    return 1\n\n\ndef b():\n    return 2\n", "import math\n\n\ndef a():\n    return math.pi\n")
    assert text == "import math\n\n\ndef a():\n    return math.pi\n\n\ndef b():\n    return 2\n"


def test_definitions_reads_python_javascript_and_shell():
    assert definitions("def a():\n  pass\nclass B:\n  pass\nasync def c():\n  pass\n") == ["a", "B", "c"]
    assert definitions("export default function d() {}\nconst e = 1\nexport class F {}\n") == ["d", "e", "F"]
    assert definitions("g() {\n  echo\n}\n") == ["g"]


def test_a_rewrite_dropping_most_definitions_is_refused_but_removing_one_is_not():
    old = "function a() {}\nfunction b() {}\nfunction c() {}\n"
    with pytest.raises(ToolError, match="would delete a, b from app.js"):
        check_whole("app.js", old, "function c() {}\n")
    check_whole("app.js", old, "function a() {}\nfunction b() {}\n")
    check_whole("app.js", "function a() {}\n", "function z() {}\n")  # one definition: a rewrite


def test_a_fragment_already_in_the_file_changes_nothing():
    text, notes = merged("def sub(a, b):\n    return a - b\n")
    assert text == OLD and notes == ["replaced sub"]
    assert merge_python(OLD, "")[0] == OLD
    # One untouched definition, three left out: a fragment with nothing in it, not a deletion.
    assert merge_python(OLD, "def add(a, b):\n    return a + b\n")[0] == OLD
