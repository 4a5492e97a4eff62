"""checks/python: only what makes a Python file fail to run is reported."""

from __future__ import annotations

from totem_engine.checks.imports import fixed_imports
from totem_engine.checks.python import check_python


def found(text):
    return [f.for_model() for f in check_python("a.py", text).findings]


def test_undefined_names_and_syntax_errors_are_found_with_lsp_positions():
    assert found("import os\n\ndef f():\n    return parse(os.sep)\n") == ["4:12 F821 undefined name 'parse'"]
    assert found("def f(:\n    pass\n") == ["1:7 E999 SyntaxError: invalid syntax"]
    assert found("def f(a, a):\n    return a\n") == ["1:1 F831 duplicate argument 'a' in function definition"]


def test_style_and_unused_imports_are_not_reported():
    assert found("import os\nimport sys\nx=1\n") == []


def project_found(root, rel, text):
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_text(text)
    return [f.for_model() for f in check_python(rel, text, root).findings]


def test_a_name_a_project_module_does_not_define_is_found_in_the_importer(tmp_path):
    (tmp_path / "geometry.py").write_text(
        "import math\n\ndef rectangle_area(w, h):\n    return w * h\n\nif math.pi:\n    PI = math.pi\nelse:\n    PI = 3\n"
    )
    (tmp_path / "shapes.py").write_text("from geometry import rectangle_area\n\ndef circle_area(r):\n    return 3 * r * r\n")
    text = "from geometry import calc_area, rectangle_area, PI, math, circle_area\nfrom os import nothing_checked\n"
    assert project_found(tmp_path, "report.py", text) == [
        "1:1 E0611 cannot import name 'calc_area' from 'geometry' (geometry.py)",
        "1:1 E0611 cannot import name 'circle_area' from 'geometry' (geometry.py); it is defined in shapes.py: from shapes import circle_area",
    ]


def test_a_changed_module_hears_of_the_names_its_importers_still_want(tmp_path):
    (tmp_path / "report.py").write_text("from geometry import calc_area\n\nprint(calc_area(2, 3))\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "other.py").write_text("from geometry import rectangle_area\n")
    renamed = "def rectangle_area(w, h):\n    return w * h\n"
    assert project_found(tmp_path, "geometry.py", renamed) == [
        "1:1 E0611 report.py:1 imports calc_area from geometry, which geometry.py does not define"
    ]


def test_relative_imports_resolve_in_packages_and_fail_at_the_root(tmp_path):
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "__init__.py").write_text("")
    (tmp_path / "app" / "utils.py").write_text("def plural(n):\n    return n\n")
    assert project_found(tmp_path, "app/main.py", "from .utils import plural, singular\nfrom . import utils\n") == [
        "1:1 E0611 cannot import name 'singular' from 'utils' (app/utils.py)"
    ]
    assert project_found(tmp_path, "main.py", "from .utils import plural\n") == [
        "1:1 E0402 attempted relative import with no known parent package (main.py is at the project root)"
    ]


def test_a_module_whose_names_cannot_be_known_is_taken_to_define_everything(tmp_path):
    (tmp_path / "star.py").write_text("from os.path import *\n")
    (tmp_path / "lazy.py").write_text("def __getattr__(name):\n    return name\n")
    assert project_found(tmp_path, "main.py", "from star import anything\nfrom lazy import whatever\n") == []


def test_an_import_from_the_wrong_module_is_fixed_when_one_module_defines_the_name(tmp_path):
    (tmp_path / "utils.py").write_text("def plural(n, word):\n    return word\n")
    (tmp_path / "dates.py").write_text("def parse_date(text):\n    return text\n")
    (tmp_path / "other.py").write_text("def parse_time(text):\n    return text\n")
    (tmp_path / "again.py").write_text("def parse_time(text):\n    return text\n")
    text = "import sys\nfrom utils import (\n    parse_date,\n    plural as pl,\n    parse_time,\n)\n\nprint(pl)\n"
    fixed, added = fixed_imports(tmp_path, "main.py", text)
    # parse_time has two homes: no guess, it stays (and is still reported)
    assert fixed == "import sys\nfrom utils import plural as pl, parse_time\nfrom dates import parse_date\n\nprint(pl)\n"
    assert added == ["from dates import parse_date"]
    assert fixed_imports(tmp_path, "main.py", "from utils import plural\n") is None
    assert fixed_imports(tmp_path, "main.py", "from utils import parse_date; x = 1\n") is None  # not alone on its line
