"""checks/python: only what makes a Python file fail to run is reported."""

from __future__ import annotations

from totem_engine.checks.python import check_python


def found(text):
    return [f.for_model() for f in check_python("a.py", text).findings]


def test_undefined_names_and_syntax_errors_are_found_with_lsp_positions():
    assert found("import os\n\ndef f():\n    return parse(os.sep)\n") == ["4:12 F821 undefined name 'parse'"]
    assert found("def f(:\n    pass\n") == ["1:7 E999 SyntaxError: invalid syntax"]
    assert found("def f(a, a):\n    return a\n") == ["1:1 F831 duplicate argument 'a' in function definition"]


def test_style_and_unused_imports_are_not_reported():
    assert found("import os\nimport sys\nx=1\n") == []
