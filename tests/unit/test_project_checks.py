"""The project's own checks: ruff JSON, ESLint JSON and SARIF output as findings, and a real ruff.

The sample outputs follow each tool's documented format; the ruff sample is what ruff 0.17
printed for the same text. Lines with an emoji (two UTF-16 code units, one code point) tell
character columns from UTF-16 columns apart.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from totem_engine.checks.base import Fix, Position, Range
from totem_engine.checks.positions import from_utf16_line_column, from_utf16_offset
from totem_engine.checks.project import (
    CommandCheck,
    parse_eslint_json,
    parse_ruff_json,
    parse_sarif,
)
from totem_engine.checks.registry import checkers_from_config, run_checks
from totem_engine.config import load_config

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

PY_TEXT = 'import os\nimport sys\n\nname = "😀"; x = undefined_name\nprint(sys.argv, name, x)\n'

RUFF_OUTPUT = json.dumps(
    [
        {
            "cell": None,
            "code": "F401",
            "end_location": {"column": 10, "row": 1},
            "filename": "/work/proj/app/main.py",
            "fix": {
                "applicability": "safe",
                "edits": [{"content": "", "end_location": {"column": 1, "row": 2}, "location": {"column": 1, "row": 1}}],
                "message": "Remove unused import: `os`",
            },
            "location": {"column": 8, "row": 1},
            "message": "`os` imported but unused",
            "noqa_row": 1,
            "url": "https://docs.astral.sh/ruff/rules/unused-import",
        },
        {
            "cell": None,
            "code": "E702",
            "end_location": {"column": 12, "row": 4},
            "filename": "/work/proj/app/main.py",
            "fix": None,
            "location": {"column": 11, "row": 4},
            "message": "Multiple statements on one line (semicolon)",
            "noqa_row": 4,
            "url": "https://docs.astral.sh/ruff/rules/multiple-statements-on-one-line-semicolon",
        },
        {
            "cell": None,
            "code": "invalid-syntax",
            "end_location": {"column": 5, "row": 5},
            "filename": "/work/proj/app/main.py",
            "fix": None,
            "location": {"column": 1, "row": 5},
            "message": "Expected an expression",
            "noqa_row": None,
            "url": None,
        },
        {
            "cell": None,
            "code": "F401",
            "end_location": {"column": 10, "row": 1},
            "filename": "/work/proj/app/other.py",
            "fix": None,
            "location": {"column": 8, "row": 1},
            "message": "`os` imported but unused",
            "noqa_row": 1,
            "url": None,
        },
    ]
)


def test_ruff_json_codes_ranges_severity_and_fix():
    findings = parse_ruff_json(RUFF_OUTPUT, "app/main.py", PY_TEXT, "ruff")
    assert [f.code for f in findings] == ["F401", "E702", "invalid-syntax"]  # other.py left out
    unused, semicolon, syntax = findings
    assert unused.range == Range(Position(0, 7), Position(0, 9))
    assert unused.message == "`os` imported but unused" and unused.severity == "warning" and unused.source == "ruff"
    assert unused.fix == Fix("Remove unused import: `os`", Range(Position(0, 0), Position(1, 0)), "")
    # ruff counts characters: column 11 is after 10 code points, 11 UTF-16 units (the emoji is 2).
    assert semicolon.range == Range(Position(3, 11), Position(3, 12))
    assert semicolon.fix is None
    assert syntax.severity == "error"
    assert unused.for_model() == "1:8 F401 `os` imported but unused"


def test_ruff_fix_with_several_edits_or_display_only_is_not_offered():
    item = json.loads(RUFF_OUTPUT)[0]
    edit = item["fix"]["edits"][0]
    item["fix"]["edits"] = [edit, edit]
    assert parse_ruff_json(json.dumps([item]), "app/main.py", PY_TEXT, "ruff")[0].fix is None
    item["fix"]["edits"] = [edit]
    item["fix"]["applicability"] = "display-only"
    assert parse_ruff_json(json.dumps([item]), "app/main.py", PY_TEXT, "ruff")[0].fix is None


JS_TEXT = "var x = 1;\nvar s = '😀' + 'a'\nfoo(\n"

ESLINT_OUTPUT = json.dumps(
    [
        {
            "filePath": "/work/proj/src/app.js",
            "messages": [
                {
                    "ruleId": "no-unused-vars",
                    "severity": 2,
                    "message": "'x' is assigned a value but never used.",
                    "line": 1,
                    "column": 5,
                    "nodeType": "Identifier",
                    "messageId": "unusedVar",
                    "endLine": 1,
                    "endColumn": 6,
                },
                {
                    "ruleId": "semi",
                    "severity": 1,
                    "message": "Missing semicolon.",
                    "line": 2,
                    "column": 19,
                    "nodeType": "VariableDeclaration",
                    "messageId": "missingSemi",
                    "endLine": 3,
                    "endColumn": 1,
                    "fix": {"range": [29, 29], "text": ";"},
                },
                {"ruleId": None, "fatal": True, "severity": 2, "message": "Parsing error: Unexpected token", "line": 4, "column": 1},
            ],
            "suppressedMessages": [],
            "errorCount": 2,
            "fatalErrorCount": 1,
            "warningCount": 1,
            "fixableErrorCount": 0,
            "fixableWarningCount": 1,
            "usedDeprecatedRules": [],
        },
        {
            "filePath": "/work/proj/src/other.js",
            "messages": [{"ruleId": "semi", "severity": 1, "message": "Missing semicolon.", "line": 1, "column": 1}],
        },
    ]
)


def test_eslint_json_severity_utf16_columns_and_offset_fix():
    findings = parse_eslint_json(ESLINT_OUTPUT, "src/app.js", JS_TEXT, "eslint")
    assert [f.code for f in findings] == ["no-unused-vars", "semi", "eslint"]
    unused, semi, fatal = findings
    assert unused.severity == "error" and unused.range == Range(Position(0, 4), Position(0, 5))
    assert semi.severity == "warning" and semi.range == Range(Position(1, 18), Position(2, 0))
    # Offset 29 in UTF-16 units: 11 for line 1, then 18 units of line 2 (28 if counted in code points).
    assert semi.fix == Fix("Fix semi", Range(Position(1, 18), Position(1, 18)), ";")
    assert fatal.severity == "error" and fatal.message == "Parsing error: Unexpected token"
    assert fatal.range.start == Position(3, 0)


def test_eslint_fix_offsets_skip_a_byte_order_mark():
    text = "\ufeffvar a = 1\n"
    output = json.dumps([{"filePath": "a.js", "messages": [
        {"ruleId": "semi", "severity": 1, "message": "Missing semicolon.", "line": 1, "column": 10,
         "fix": {"range": [9, 9], "text": ";"}}]}])
    (finding,) = parse_eslint_json(output, "a.js", text, "eslint")
    assert finding.fix is not None and finding.fix.range.start == Position(0, 10)  # after "\ufeffvar a = 1"


SARIF_OUTPUT = json.dumps(
    {
        "version": "2.1.0",
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "demo",
                        "rules": [
                            {"id": "PY001", "defaultConfiguration": {"level": "error"},
                             "messageStrings": {"default": {"text": "Call to {0} is unsafe."}}},
                        ],
                    }
                },
                "results": [
                    {
                        "ruleId": "PY001",
                        "message": {"id": "default", "arguments": ["eval"]},
                        "locations": [{"physicalLocation": {
                            "artifactLocation": {"uri": "app/main.py", "uriBaseId": "%SRCROOT%"},
                            "region": {"startLine": 4, "startColumn": 13, "endLine": 4, "endColumn": 14},
                        }}],
                        "fixes": [{"description": {"text": "Split the line"}, "artifactChanges": [{
                            "artifactLocation": {"uri": "app/main.py"},
                            "replacements": [{"deletedRegion": {"startLine": 4, "startColumn": 12, "endLine": 4, "endColumn": 14},
                                              "insertedContent": {"text": "\n"}}],
                        }]}],
                    },
                    {
                        "ruleId": "PY002",
                        "level": "note",
                        "message": {"text": "Consider sorting the imports."},
                        "locations": [{"physicalLocation": {
                            "artifactLocation": {"uri": "file:///work/proj/app/main.py"},
                            "region": {"startLine": 1},
                        }}],
                    },
                    {
                        "ruleId": "PY003",
                        "level": "warning",
                        "message": {"text": "Elsewhere."},
                        "locations": [{"physicalLocation": {"artifactLocation": {"uri": "app/other.py"}, "region": {"startLine": 1}}}],
                    },
                ],
            },
            {
                "tool": {"driver": {"name": "points"}},
                "columnKind": "unicodeCodePoints",
                "results": [
                    {"ruleId": "CP1", "level": "none", "message": {"text": "Counted in code points."},
                     "locations": [{"physicalLocation": {"artifactLocation": {"uri": "app/main.py"},
                                                         "region": {"startLine": 4, "startColumn": 11, "endColumn": 12}}}]},
                ],
            },
        ],
    }
)


def test_sarif_results_levels_messages_regions_and_fix():
    findings = parse_sarif(SARIF_OUTPUT, "app/main.py", PY_TEXT, "semgrep")
    assert [f.code for f in findings] == ["PY001", "PY002", "CP1"]
    templated, note, points = findings
    assert templated.message == "Call to eval is unsafe."
    assert templated.severity == "error"  # the rule's default level
    # Default columnKind: UTF-16 units, taken as they are.
    assert templated.range == Range(Position(3, 12), Position(3, 13))
    assert templated.fix == Fix("Split the line", Range(Position(3, 11), Position(3, 13)), "\n")
    # No columns: the whole line; a file: URI matches by path.
    assert note.severity == "information" and note.range == Range(Position(0, 0), Position(0, 9))
    # unicodeCodePoints: column 11 is after the emoji, so UTF-16 character 11.
    assert points.severity == "hint" and points.range == Range(Position(3, 11), Position(3, 12))


def test_utf16_positions_clamp_and_count_surrogates():
    lines = ["a😀b", ""]
    assert from_utf16_line_column(lines, 1, 4) == Position(0, 3)
    assert from_utf16_line_column(lines, 1, 99) == Position(0, 4)
    assert from_utf16_line_column(lines, 9, 1) == Position(1, 0)
    assert from_utf16_offset("a😀b\ncd", 5) == Position(1, 0)
    assert from_utf16_offset("a😀b\ncd", 4) == Position(0, 4)


@pytest.mark.parametrize(
    ("parse", "bad"),
    [(parse_ruff_json, "{not json"), (parse_eslint_json, '{"a": 1}'), (parse_sarif, "[]")],
)
def test_unreadable_output_raises_output_error(parse, bad):
    from totem_engine.checks.project import OutputError

    with pytest.raises(OutputError):
        parse(bad, "a.py", "x\n", "c")


# Through CommandCheck: the command's stdout is parsed, stderr is not; failures are notes.


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.js").write_text(JS_TEXT, encoding="utf-8")
    (tmp_path / "eslint.json").write_text(ESLINT_OUTPUT, encoding="utf-8")
    return tmp_path


async def test_command_check_reads_json_from_stdout_despite_stderr(project: Path):
    check = CommandCheck("eslint", "echo 'Warning: React version not specified' >&2; cat eslint.json; exit 1", format="eslint-json")
    result = await check.check(project, "src/app.js", JS_TEXT)
    assert result.notes == []
    assert [f.code for f in result.findings] == ["no-unused-vars", "semi", "eslint"]


async def test_command_check_unreadable_output_is_a_note(project: Path):
    check = CommandCheck("ruff", "echo 'this is not json'", format="ruff-json")
    result = await check.check(project, "src/app.js", JS_TEXT)
    assert result.findings == []
    assert len(result.notes) == 1 and result.notes[0].startswith("ruff: could not read its output as ruff-json")


async def test_command_check_missing_command_is_a_note(project: Path):
    check = CommandCheck("lint", "no-such-linter-xyz {file}", format="sarif")
    result = await check.check(project, "src/app.js", JS_TEXT)
    assert result.findings == []
    assert len(result.notes) == 1 and "exited with 127" in result.notes[0] and "not found" in result.notes[0]


# A real ruff, configured in a Python fixture project.




async def test_a_ruff_check_configured_in_a_python_project_turns_into_findings(tmp_path: Path, ruff_on_path):
    root = tmp_path / "python_ruff"
    shutil.copytree(FIXTURES / "python_ruff", root)
    config = load_config(root).config
    assert config.checks["ruff"].format == "ruff-json"
    checkers = checkers_from_config(config, totaljs=False)
    text = (root / "app" / "main.py").read_text(encoding="utf-8")
    result = await run_checks(checkers, root, "app/main.py", text)
    assert result.notes == []
    by_code = {f.code: f for f in result.findings}
    assert set(by_code) == {"F401", "E702", "F821"}  # the project's own select = ["F", "E7"]
    assert by_code["F401"].range == Range(Position(0, 7), Position(0, 9))
    assert by_code["E702"].range.start == Position(3, 11)  # after the emoji, in UTF-16 units
    assert by_code["F401"].fix is not None and by_code["F401"].fix.new_text == ""
    assert all(f.source == "ruff" for f in result.findings)
    clean = (root / "app" / "clean.py").read_text(encoding="utf-8")
    assert (await run_checks(checkers, root, "app/clean.py", clean)).findings == []
